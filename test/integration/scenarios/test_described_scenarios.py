"""Described kinds end to end: the shipped Kubeflow Trainer ``TrainJob``, Kueue ``Workload`` and
KubeRay ``RayJob`` descriptions, driven through the Kubernetes emulator (or a real cluster)
with the official client, observed, recorded and summarized as ``megamon run`` does, and
published as metrics.

Each kind goes through what a training workload does: created, admitted and running,
interrupted, recovered, and then completed or failed. A kind megamon ships nothing for (a
Kubeflow ``PyTorchJob``) is declared in the configuration before its CRD exists.
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
from megamon.errors import ConfigError
from megamon.publishing.metrics import names
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.recording.loading import load_kind
from megamon.stores.memory import MemoryEventStore
from test.integration.scenarios.world import Megamon, World

TRAINJOB = shipped("trainjob")
WORKLOAD = shipped("kueue-workload")
RAYJOB = shipped("rayjob")
SELECTOR = {labels.TPU_ACCELERATOR: "tpu-v6e-slice", labels.TPU_TOPOLOGY: "4x4"}
TPU_CONTAINERS = [
    {"name": "main", "image": "busybox", "resources": {"limits": {labels.RESOURCE_TPU: "4"}}}
]
"""A container of a pod on a 4-chip TPU host (a v6e 4x4 slice has four of them)."""


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
    completed_as: str
    failed_as: str
    """The status a completed or failed one reports (its condition's type, its field's value)."""
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
    completed_as="Complete",
    failed_as="Failed",
    chips=16,
    reason=interruptions.UNKNOWN,  # fewer ready jobs, nothing says why
)


def _workload(name: str) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": SELECTOR, "containers": TPU_CONTAINERS}}
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
    completed_as="Finished",
    failed_as="Finished",
    chips=16,  # 4 pods × 4 chips
    reason=interruptions.PREEMPTION,  # Evicted, reason Preempted
)


def _rayjob(name: str) -> dict[str, Any]:
    """A RayJob as KubeRay's ray.io/v1 schema has it: a CPU head and one worker group of one
    replica of four hosts (a v6e 4x4 slice), each pod asking for its host's 4 chips."""
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray"}]}}}  # fmt: skip
    workers = {
        "groupName": "tpu",
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 1,
        "numOfHosts": 4,
        "rayStartParams": {},
        "template": {"spec": {"nodeSelector": SELECTOR, "containers": TPU_CONTAINERS}},
    }
    return {
        "name": name,
        "kind": "RayJob",
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {"headGroupSpec": head, "workerGroupSpecs": [workers]},
        },
    }


def _ray_status(deployment: str, job: str, ready: int) -> dict[str, Any]:
    """What KubeRay's RayJob controller writes: both statuses, the cluster's status beside."""
    cluster = {"state": "ready", "readyWorkerReplicas": ready, "desiredWorkerReplicas": 4}
    return {"jobDeploymentStatus": deployment, "jobStatus": job, "rayClusterStatus": cluster}


RAYJOB_LIFECYCLE = Lifecycle(
    description=RAYJOB,
    body=_rayjob,
    running=_ray_status("Running", "RUNNING", ready=4),
    interrupted=_ray_status("Running", "RUNNING", ready=3),
    completed=_ray_status("Complete", "SUCCEEDED", ready=0),
    failed={**_ray_status("Failed", "FAILED", ready=0), "reason": "AppFailed"},
    completed_as="SUCCEEDED",
    failed_as="Failed",
    chips=16,  # 1 replica × 4 hosts × 4 chips
    reason=interruptions.UNKNOWN,  # a worker pod not ready, nothing says why
)

LIFECYCLES = {
    "trainjob": TRAINJOB_LIFECYCLE,
    "kueue-workload": WORKLOAD_LIFECYCLE,
    "rayjob": RAYJOB_LIFECYCLE,
}


@pytest.fixture
def store() -> MemoryEventStore:
    return MemoryEventStore()


@pytest.fixture
def megamon(world: World, store: MemoryEventStore) -> Iterator[Megamon]:
    running = Megamon(world, store=store, described=[TRAINJOB, WORKLOAD, RAYJOB])
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
    assert not obs.up and obs.status == life.completed_as
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
    assert obs.status == life.failed_as
    assert report.kind(kind.kind).summaries[uid].interruption_count == 1
    assert obs.reason == interruptions.FAILED


def test_a_rayjob_that_succeeds_is_expected_down_and_never_interrupted(
    world: World, megamon: Megamon, store: MemoryEventStore
) -> None:
    """KubeRay ends a RayJob with jobDeploymentStatus Complete and jobStatus SUCCEEDED, and
    sets no condition: a planned end, not an interruption of reason unknown."""
    uid = _run_until_up(world, megamon, RAYJOB_LIFECYCLE, "done")
    world.described_status(RAYJOB, "done", _ray_status("Running", "SUCCEEDED", ready=4))
    world.described_status(RAYJOB, "done", RAYJOB_LIFECYCLE.completed)
    report = megamon.settle(_observed(RAYJOB, uid, lambda o: o.expected_down))
    obs = report.kind(RAYJOB.kind).observations[uid]
    assert (obs.up, obs.status, obs.reason) == (False, "SUCCEEDED", "")
    summary = report.kind(RAYJOB.kind).summaries[uid]
    assert (summary.interruption_count, summary.recovery_count) == (0, 0)
    megamon.aggregator.persist_once()
    recorded = _history(store, RAYJOB)[uid]
    assert recorded.events[-1].expected_down
    assert not [e for e in recorded.events[1:] if not e.up and not e.expected_down]
    samples = _samples(report, RAYJOB)
    (labelled, value) = samples["megamon_rayjob_interruption_count"][0]
    assert value == 0.0 and labelled["rayjob_uid"] == uid


def test_a_rayjob_stopped_before_it_succeeded_is_no_planned_end(
    world: World, megamon: Megamon
) -> None:
    """Complete with jobStatus STOPPED (``ray job stop``): KubeRay says Complete, but the job
    did not succeed; it is down and counts as an interruption."""
    uid = _run_until_up(world, megamon, RAYJOB_LIFECYCLE, "stopped")
    world.described_status(RAYJOB, "stopped", _ray_status("Complete", "STOPPED", ready=0))
    report = megamon.settle(_observed(RAYJOB, uid, lambda o: o.status != ""))
    obs = report.kind(RAYJOB.kind).observations[uid]
    assert (obs.up, obs.expected_down, obs.status, obs.reason) == (
        False,
        False,
        "STOPPED",
        interruptions.FAILED,
    )
    assert report.kind(RAYJOB.kind).summaries[uid].interruption_count == 1


PYTORCHJOB_CONFIG = {
    "Noun": "pytorchjob",
    "Title": "PyTorchJob",
    "Group": "kubeflow.org",
    "Version": "v1",
    "Resource": "pytorchjobs",
    "Expected": {"Each": "spec.pytorchReplicaSpecs.*", "Path": "replicas", "Default": 1},
    "Ready": {"Path": "status.replicaStatuses.*.active"},
    "ReadyWhen": [{"Type": "Running"}],
    "Completed": [{"Type": "Succeeded"}],
    "Failed": [{"Type": "Failed"}],
    "NodeSelector": {
        "Each": "spec.pytorchReplicaSpecs.*",
        "Path": "template.spec.nodeSelector",
        "Replicas": "replicas",
    },
    "Labels": {
        "Name": "pytorchjob_name",
        "Namespace": "pytorchjob_namespace",
        "UID": "pytorchjob_uid",
    },
    "EventFile": "pytorchjobs.json",
}
"""A Kubeflow training-operator PyTorchJob, declared as a user would (megamon ships none)."""

V5E_2X4 = {labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice", labels.TPU_TOPOLOGY: "2x4"}


def pytorchjob_body(name: str) -> dict[str, Any]:
    """A master and a worker on one v5e 2x4 slice (two 4-chip hosts): 8 chips, though each
    pod template selects the whole 8-chip topology."""
    chips = {labels.RESOURCE_TPU: "4"}
    resources = {"requests": chips, "limits": chips}
    container = {"name": "pytorch", "image": "pytorch", "resources": resources}
    template = {"spec": {"nodeSelector": V5E_2X4, "containers": [container]}}
    specs = {role: {"replicas": 1, "template": template} for role in ("Master", "Worker")}
    return {"name": name, "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": specs}}


def pytorchjob_status(active: int) -> dict[str, Any]:
    """What the training operator writes while the job runs: Running, and active pods."""
    statuses = {"Master": {"active": 1}, "Worker": {"active": active - 1}}
    return {"conditions": [_condition("Running", "PyTorchJobRunning")], "replicaStatuses": statuses}


def pytorchjob_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pytorchjobs.kubeflow.org"},
        "spec": {
            "group": "kubeflow.org",
            "names": {"plural": "pytorchjobs", "singular": "pytorchjob", "kind": "PyTorchJob"},
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
    kinds observed meanwhile; then created, run and interrupted, with history and metrics; its
    two pods on one 8-chip slice count 8 chips, not a slice each."""
    (pytorchjob, trainjob) = parse_config(
        orjson.dumps({"WorkloadKinds": [PYTORCHJOB_CONFIG, "trainjob"]}), "config.json"
    ).WorkloadKinds
    path = "/apis/kubeflow.org/v1/pytorchjobs"
    store = MemoryEventStore()
    with FakeKube() as fake, FakeGke() as gke:
        api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kc")))
        world = World(api=api, gke=gke, namespace="default")
        running = Megamon(world, store=store, described=[pytorchjob, trainjob])
        try:
            uid = _run_until_up(world, running, TRAINJOB_LIFECYCLE, "train")
            deadline = time.monotonic() + 30
            while fake.requests[("get", path)] < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert fake.requests[("get", path)] >= 3, "the watch keeps retrying"
            report = running.settle(_observed(TRAINJOB, uid, lambda o: o.up))
            assert not report.kind(pytorchjob.kind).observations
            messages = [
                r.getMessage() for r in caplog.records if "does not serve" in r.getMessage()
            ]
            assert len(messages) == 1 and "pytorchjobs.kubeflow.org" in messages[0]

            k8s.ApiextensionsV1Api(api).create_custom_resource_definition(pytorchjob_crd())
            pt_uid = world.described(pytorchjob, pytorchjob_body("pt"))
            world.described_status(pytorchjob, "pt", pytorchjob_status(active=2))
            up = running.settle(_observed(pytorchjob, pt_uid, lambda o: o.up), timeout=30)
            assert up.kind(pytorchjob.kind).observations[pt_uid].attrs.tpu_chip_count == 8
            world.described_status(pytorchjob, "pt", pytorchjob_status(active=1))
            down = running.settle(_observed(pytorchjob, pt_uid, lambda o: not o.up))
            assert down.kind(pytorchjob.kind).summaries[pt_uid].interruption_count == 1
            running.aggregator.persist_once()
        finally:
            running.stop()
            api.close()
    assert pt_uid in _history(store, pytorchjob)
    series = {
        "pytorchjob_name": "pt",
        "pytorchjob_namespace": "default",
        "pytorchjob_uid": pt_uid,
        names.LABEL_TPU_TOPOLOGY: "2x4",
        names.LABEL_TPU_ACCELERATOR: "tpu-v5-lite-podslice",
    }
    samples = _samples(down, pytorchjob)
    assert samples["megamon_pytorchjob_up"] == [(series, 0.0)]
    assert samples["megamon_pytorchjob_interruption_count"] == [(series, 1.0)]
    assert samples["megamon_pytorchjob_tpu_chip_count"] == [(series, 8.0)]


def test_a_description_whose_field_reads_no_value_names_that_field_and_spares_the_rest(
    world: World, store: MemoryEventStore
) -> None:
    """A description that ends RayJobs by ``status.rayClusterStatus`` (an object, not a
    value): each RayJob is a problem naming the object and that field, and the kind's other
    objects and the other kinds are observed as usual; the RayJob's last reading (created, no
    status yet) stands, it is not taken for gone."""
    broken = KindDescription.model_validate(
        {
            **RAYJOB.model_dump(),
            "Failed": [{"Field": "status.rayClusterStatus", "AnyOf": ["failed"]}],
        }
    )
    running = Megamon(world, store=store, described=[broken, TRAINJOB])
    try:
        train = _run_until_up(world, running, TRAINJOB_LIFECYCLE, "train")
        ray = world.described(broken, _rayjob("ray"))
        running.settle(_observed(broken, ray, lambda o: True))  # read once as created
        world.described_status(broken, "ray", RAYJOB_LIFECYCLE.running)
        deadline = time.monotonic() + 10
        while not running.problems and time.monotonic() < deadline:
            time.sleep(0.05)
        (problem, *_) = running.problems
        assert f"{world.namespace}/ray" in problem.subject
        assert "status.rayClusterStatus must be a string, a boolean or an integer" in str(problem)
        report = running.settle(_observed(TRAINJOB, train, lambda o: o.up))
        kept = report.kind(broken.kind).observations[ray]
        assert (kept.up, kept.ready, kept.expected) == (False, 0, 4), "its reading as created"
    finally:
        running.stop()


def test_a_description_with_a_mistyped_key_is_refused_naming_it() -> None:
    """Refused at start, in one line naming the entry and the key, with the key it meant."""
    mistyped = {**RAYJOB.model_dump(exclude_none=True)}
    mistyped["Completed"] = [{"Field": "status.jobDeploymentStatus", "anyOf": ["Complete"]}]
    with pytest.raises(ConfigError) as refused:
        parse_config(orjson.dumps({"WorkloadKinds": ["trainjob", mistyped]}), "config.json")
    assert str(refused.value) == (
        "config.json: unknown key WorkloadKinds.1.Completed.0.anyOf: "
        "did you mean WorkloadKinds.1.Completed.0.AnyOf?"
    )
