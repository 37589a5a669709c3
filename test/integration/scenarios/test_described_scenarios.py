"""Described kinds end to end: the shipped Kubeflow Trainer ``TrainJob`` and Kueue ``Workload``
descriptions, driven through the Kubernetes emulator (or a real cluster) with the official
client, observed, recorded and summarized as ``megamon run`` does, and published as metrics.

Each kind goes through what a training workload does: created, admitted and running,
interrupted, recovered, and then completed or failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes import config
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from internal.fakegke import FakeGke
from internal.fakekube.fakekube import FakeKube
from megamon.config import parse_config
from megamon.domain import interruptions, labels
from megamon.domain.descriptions import KindDescription, shipped
from megamon.domain.events import EventRecord
from megamon.domain.reports import Report
from megamon.publishing.metrics import names
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.recording.loading import load_kind
from megamon.stores.memory import MemoryEventStore
from test.integration.scenarios.world import Megamon, World

TRAINJOB = shipped("trainjob")
WORKLOAD = shipped("kueue-workload")
SELECTOR = {labels.TPU_ACCELERATOR: "tpu-v6e-slice", labels.TPU_TOPOLOGY: "4x4"}
CONTAINERS = [{"name": "main", "image": "busybox"}]


def _condition(kind: str, reason: str = "Test", status: str = "True") -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "set by test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


@dataclass(frozen=True)
class Lifecycle:
    """How a kind's controller writes each phase of a workload, as its CRD defines them."""

    description: KindDescription
    body: Callable[[str], dict[str, Any]]
    running: dict[str, Any]
    interrupted: dict[str, Any]
    completed: dict[str, Any]
    failed: dict[str, Any]
    ending: str
    """The condition type a completed or failed one reports as its status."""
    chips: int
    reason: str
    """Why the interruption happened, as megamon records it."""


def _trainjob(name: str) -> dict[str, Any]:
    patch = {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "nodeSelector": SELECTOR}}}}}]}  # fmt: skip
    return {
        "name": name,
        "kind": "TrainJob",
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 4},
            "runtimePatches": [
                {"manager": "test", "trainingRuntimeSpec": {"template": {"spec": patch}}}
            ],
        },
    }


def _jobs(ready: int, active: int, succeeded: int = 0, failed: int = 0) -> list[dict[str, Any]]:
    counts = {"ready": ready, "active": active, "succeeded": succeeded, "failed": failed}
    return [{"name": "node", **counts, "suspended": 0}]


TRAINJOB_LIFECYCLE = Lifecycle(
    description=TRAINJOB,
    body=_trainjob,
    running={"jobsStatus": _jobs(ready=2, active=2)},
    interrupted={"jobsStatus": _jobs(ready=1, active=2)},
    completed={
        "conditions": [_condition("Complete", "JobSetCompleted")],
        "jobsStatus": _jobs(ready=0, active=0, succeeded=2),
    },
    failed={
        "conditions": [_condition("Failed", "JobSetFailed")],
        "jobsStatus": _jobs(ready=0, active=0, failed=2),
    },
    ending="",
    chips=16,
    reason=interruptions.UNKNOWN,  # fewer ready jobs, nothing says why
)


def _workload(name: str) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": SELECTOR, "containers": CONTAINERS}}
    return {
        "name": name,
        "kind": "Workload",
        "spec": {
            "queueName": "tpu-queue",
            "podSets": [{"name": "workers", "count": 4, "template": template}],
        },
    }


def _admitted() -> dict[str, Any]:
    return {
        "conditions": [_condition("QuotaReserved"), _condition("Admitted")],
        "admission": {
            "clusterQueue": "tpu",
            "podSetAssignments": [{"name": "workers", "count": 4}],
        },
    }


WORKLOAD_LIFECYCLE = Lifecycle(
    description=WORKLOAD,
    body=_workload,
    running=_admitted(),
    interrupted={
        "conditions": [
            _condition("Evicted", "Preempted"),
            _condition("QuotaReserved", "Pending", "False"),
            _condition("Admitted", "NoReservation", "False"),
        ]
    },
    completed={**_admitted(), "conditions": [_condition("Finished", "Succeeded")]},
    failed={**_admitted(), "conditions": [_condition("Finished", "Failed")]},
    ending="Finished",
    chips=16,
    reason=interruptions.PREEMPTION,  # Evicted, reason Preempted
)

LIFECYCLES = {"trainjob": TRAINJOB_LIFECYCLE, "kueue-workload": WORKLOAD_LIFECYCLE}


@pytest.fixture
def store() -> MemoryEventStore:
    return MemoryEventStore()


@pytest.fixture
def megamon(world: World, store: MemoryEventStore) -> Iterator[Megamon]:
    running = Megamon(world, store=store, described=[TRAINJOB, WORKLOAD])
    yield running
    running.stop()


def _observed(kind: KindDescription, uid: str, check: Callable[[Any], bool]) -> Any:
    def found(report: Report) -> bool:
        obs = report.kind(kind.kind).observations.get(uid)
        return obs is not None and check(obs)

    return found


def _samples(
    report: Report, kind: KindDescription
) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The /metrics text of ``report``, parsed back: per sample name, (labels, value)."""
    registry = CollectorRegistry()
    build = BuildInfo("0", "c", "d")
    registry.register(
        ReportCollector("megamon", lambda: report, build=build, described=[kind.kind])
    )
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def _run_until_up(world: World, megamon: Megamon, life: Lifecycle, name: str) -> str:
    kind = life.description
    uid = world.described(kind, life.body(name))
    created = megamon.settle(_observed(kind, uid, lambda o: True))
    assert not created.kind(kind.kind).observations[uid].up, "created: nothing runs yet"
    world.described_status(kind, name, life.running)
    megamon.settle(_observed(kind, uid, lambda o: o.up))
    return uid


@pytest.mark.parametrize("which", sorted(LIFECYCLES))
def test_a_described_workload_is_interrupted_recovers_and_completes(
    world: World, megamon: Megamon, store: MemoryEventStore, which: str
) -> None:
    life = LIFECYCLES[which]
    kind = life.description
    uid = _run_until_up(world, megamon, life, "train")
    world.described_status(kind, "train", life.interrupted)
    down = megamon.settle(_observed(kind, uid, lambda o: not o.up))
    assert down.kind(kind.kind).summaries[uid].interruption_count == 1
    assert down.kind(kind.kind).observations[uid].reason == life.reason

    world.described_status(kind, "train", life.running)
    recovered = megamon.settle(_observed(kind, uid, lambda o: o.up))
    summary = recovered.kind(kind.kind).summaries[uid]
    assert (summary.interruption_count, summary.recovery_count) == (1, 1)
    attrs = recovered.kind(kind.kind).observations[uid].attrs
    assert (attrs.tpu_accelerator, attrs.tpu_topology) == ("tpu-v6e-slice", "4x4")
    assert attrs.tpu_chip_count == life.chips

    world.described_status(kind, "train", life.completed)
    done = megamon.settle(_observed(kind, uid, lambda o: o.expected_down))
    obs = done.kind(kind.kind).observations[uid]
    assert not obs.up and obs.status == (life.ending or "Complete")
    assert done.kind(kind.kind).summaries[uid].interruption_count == 1, "a planned end"

    megamon.aggregator.persist_once()
    recorded = _history(store, kind)[uid]
    downs = [e.reason for e in recorded.events if not e.up and not e.expected_down]
    assert downs[-1] == life.reason, "the interruption's reason, in the durable history"
    samples = _samples(done, kind)
    series = {
        names.LABEL_TPU_TOPOLOGY: "4x4",
        names.LABEL_TPU_ACCELERATOR: "tpu-v6e-slice",
        kind.Labels.Name: "train",
        kind.Labels.Namespace: world.namespace,
        kind.Labels.UID: uid,
    }
    assert samples[f"megamon_{kind.Noun}_up"] == [(series, 0.0)]
    assert samples[f"megamon_{kind.Noun}_recovery_count"] == [(series, 1.0)]
    assert samples[f"megamon_{kind.Noun}_tpu_chip_count"] == [(series, float(life.chips))]


def _history(store: MemoryEventStore, kind: KindDescription) -> dict[str, EventRecord]:
    """The kind's history as megamon reads it back (its snapshot and its log)."""
    return dict(load_kind(store, kind.kind).history.records)


@pytest.mark.parametrize("which", sorted(LIFECYCLES))
def test_a_described_workload_that_fails_is_down_and_interrupted(
    world: World, megamon: Megamon, which: str
) -> None:
    life = LIFECYCLES[which]
    kind = life.description
    uid = _run_until_up(world, megamon, life, "doomed")
    world.described_status(kind, "doomed", life.failed)
    report = megamon.settle(_observed(kind, uid, lambda o: o.status != ""))
    obs = report.kind(kind.kind).observations[uid]
    assert not obs.up and not obs.expected_down
    assert obs.status == (life.ending or "Failed")
    assert report.kind(kind.kind).summaries[uid].interruption_count == 1


RAYJOB_CONFIG = {
    "Noun": "rayjob",
    "Title": "RayJob",
    "Group": "ray.io",
    "Version": "v1",
    "Resource": "rayjobs",
    "Expected": {"Each": "spec.workerGroups[*]", "Path": "replicas", "Default": 1},
    "Ready": {"Path": "status.readyWorkers"},
    "Completed": [{"Type": "Complete"}],
    "Failed": [{"Type": "Failed"}],
    "NodeSelector": {
        "Each": "spec.workerGroups[*]",
        "Path": "nodeSelector",
        "Replicas": "replicas",
    },
    "Labels": {"Name": "rayjob_name", "Namespace": "rayjob_namespace", "UID": "rayjob_uid"},
    "EventFile": "rayjobs.json",
}


def rayjob_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rayjobs.ray.io"},
        "spec": {
            "group": "ray.io",
            "names": {"plural": "rayjobs", "singular": "rayjob", "kind": "RayJob"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def test_a_kind_megamon_never_saw_is_tracked_once_its_crd_is_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Declared in the configuration before its CRD exists: reported once, retried, the other
    kinds observed meanwhile; then created, run and interrupted, with history and metrics."""
    (rayjob, trainjob) = parse_config(
        orjson.dumps({"WorkloadKinds": [RAYJOB_CONFIG, "trainjob"]}), "config.json"
    ).WorkloadKinds
    path = "/apis/ray.io/v1/rayjobs"
    store = MemoryEventStore()
    with FakeKube() as fake, FakeGke() as gke:
        api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kc")))
        world = World(api=api, gke=gke, namespace="default")
        running = Megamon(world, store=store, described=[rayjob, trainjob])
        try:
            uid = _run_until_up(world, running, TRAINJOB_LIFECYCLE, "train")
            deadline = time.monotonic() + 30
            while fake.requests[("get", path)] < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert fake.requests[("get", path)] >= 3, "the watch keeps retrying"
            report = running.settle(_observed(TRAINJOB, uid, lambda o: o.up))
            assert not report.kind(rayjob.kind).observations
            messages = [
                r.getMessage() for r in caplog.records if "does not serve" in r.getMessage()
            ]
            assert len(messages) == 1 and "rayjobs.ray.io" in messages[0]

            k8s.ApiextensionsV1Api(api).create_custom_resource_definition(rayjob_crd())
            group = {"replicas": 2, "nodeSelector": {labels.TPU_TOPOLOGY: "2x4"}}
            body = {"name": "ray", "kind": "RayJob", "spec": {"workerGroups": [group]}}
            ray_uid = world.described(rayjob, body)
            world.described_status(rayjob, "ray", {"readyWorkers": 2})
            running.settle(_observed(rayjob, ray_uid, lambda o: o.up), timeout=30)
            world.described_status(rayjob, "ray", {"readyWorkers": 1})
            down = running.settle(_observed(rayjob, ray_uid, lambda o: not o.up))
            assert down.kind(rayjob.kind).summaries[ray_uid].interruption_count == 1
            running.aggregator.persist_once()
        finally:
            running.stop()
            api.close()
    assert ray_uid in _history(store, rayjob)
    series = {
        "rayjob_name": "ray",
        "rayjob_namespace": "default",
        "rayjob_uid": ray_uid,
        names.LABEL_TPU_TOPOLOGY: "2x4",
    }
    samples = _samples(down, rayjob)
    assert samples["megamon_rayjob_up"] == [(series, 0.0)]
    assert samples["megamon_rayjob_interruption_count"] == [(series, 1.0)]
    assert samples["megamon_rayjob_tpu_chip_count"] == [(series, 16.0)]
