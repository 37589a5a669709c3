"""Kueue Workloads through the Kubernetes emulator and the official client, as Kueue's
versions serve them: a cluster serving ``v1beta2`` only (Kueue after ``v1beta1`` is removed),
``v1beta1`` only (before v0.15), and one whose served versions change while megamon is
stopped; and the evictions Kueue requeues, each with its reason: ``NodeFailures``
(``node-lost``), ``PodsReadyTimeout`` (``startup-timeout``), ``Preempted`` (``preemption``);
and the queueing histogram of the Workloads Kueue admits.

These scenarios serve a version or another, which only the emulator can: they run on it
even when ``MEGAMON_TEST_KUBECONFIG`` names a real cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config
from prometheus_client.parser import text_string_to_metric_families

from internal.fakekube.fakekube import FakeKube
from megamon.domain import interruptions, labels, timestamps
from megamon.domain.descriptions import shipped
from megamon.domain.events import EventRecord
from megamon.domain.reports import Report
from megamon.recording.loading import load_kind
from megamon.stores.memory import MemoryEventStore
from test.integration.scenarios.world import Megamon, World, scrape

WORKLOAD = shipped("kueue-workload")
WORKLOADS = f"{WORKLOAD.Resource}.{WORKLOAD.Group}"
SELECTOR = {labels.TPU_ACCELERATOR: "tpu-v6e-slice", labels.TPU_TOPOLOGY: "4x4"}


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube(bookmark_interval=0.2, watch_timeout=30.0) as kube:
        yield kube


@pytest.fixture
def kube_api(fake: FakeKube, tmp_path: Path) -> Iterator[Any]:
    """The emulator's client, for the ``world`` fixture (conftest), whatever the environment."""
    api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kc")))
    yield api
    api.close()


@pytest.fixture
def store() -> MemoryEventStore:
    return MemoryEventStore()


def condition(kind: str, reason: str, status: str = "True") -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "set by test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def workload(name: str) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": SELECTOR, "containers": [{"name": "m", "image": "b"}]}}
    return {
        "name": name,
        "kind": "Workload",
        "spec": {
            "queueName": "tpu",
            "podSets": [{"name": "workers", "count": 4, "template": template}],
        },
    }


ADMITTED: dict[str, Any] = {
    "conditions": [condition("QuotaReserved", "QuotaReserved"), condition("Admitted", "Admitted")],
    "admission": {"clusterQueue": "tpu", "podSetAssignments": [{"name": "workers", "count": 4}]},
}


def evicted(reason: str) -> dict[str, Any]:
    """What Kueue writes when it evicts an admitted Workload and requeues it."""
    return {
        "conditions": [
            condition("Evicted", reason),
            condition("QuotaReserved", "Pending", "False"),
            condition("Admitted", "NoReservation", "False"),
            condition("Requeued", reason),
        ]
    }


def readmitted() -> dict[str, Any]:
    """Admitted again: Kueue sets Evicted (and Preempted) back to False."""
    return {
        **ADMITTED,
        "conditions": [*ADMITTED["conditions"], condition("Evicted", "QuotaReserved", "False")],
    }


def observed(uid: str, check: Callable[[Any], bool]) -> Callable[[Report], bool]:
    def found(report: Report) -> bool:
        obs = report.kind(WORKLOAD.kind).observations.get(uid)
        return obs is not None and check(obs)

    return found


def history(store: MemoryEventStore) -> dict[str, EventRecord]:
    return dict(load_kind(store, WORKLOAD.kind).history.records)


def run_until_up(world: World, megamon: Megamon, name: str, version: str | None = None) -> str:
    uid = world.described(WORKLOAD, workload(name), version)
    created = megamon.settle(observed(uid, lambda o: True))
    assert not created.kind(WORKLOAD.kind).observations[uid].up, "queued: nothing runs yet"
    world.described_status(WORKLOAD, name, ADMITTED, version)
    megamon.settle(observed(uid, lambda o: o.up))
    return uid


def reading(megamon: Megamon) -> str | None:
    """The version megamon's watch of Workloads reads."""
    lister = megamon.cluster.described[WORKLOAD.kind]._lister  # type: ignore[attr-defined]
    return lister.version  # type: ignore[no-any-return]


@pytest.mark.parametrize("only", ["v1beta2", "v1beta1"])
def test_a_cluster_serving_one_version_is_read_at_that_version(
    fake: FakeKube, world: World, store: MemoryEventStore, only: str
) -> None:
    fake.serve_versions(WORKLOADS, only)
    megamon = Megamon(world, store=store, described=[WORKLOAD])
    try:
        uid = run_until_up(world, megamon, "train", only)
        assert reading(megamon) == only
        world.described_status(WORKLOAD, "train", evicted("Preempted"), only)
        down = megamon.settle(observed(uid, lambda o: not o.up))
        assert down.kind(WORKLOAD.kind).observations[uid].reason == interruptions.PREEMPTION
        world.described_status(WORKLOAD, "train", readmitted(), only)
        up = megamon.settle(observed(uid, lambda o: o.up))
        summary = up.kind(WORKLOAD.kind).summaries[uid]
        assert (summary.interruption_count, summary.recovery_count) == (1, 1)
    finally:
        megamon.stop()


def test_a_kueue_upgraded_while_megamon_is_stopped_goes_on_in_the_same_history(
    fake: FakeKube, world: World, store: MemoryEventStore
) -> None:
    fake.serve_versions(WORKLOADS, "v1beta1")
    first = Megamon(world, store=store, described=[WORKLOAD])
    try:
        uid = run_until_up(world, first, "train", "v1beta1")
        assert reading(first) == "v1beta1"
    finally:
        first.stop()
    fake.serve_versions(WORKLOADS, "v1beta2")  # Kueue upgraded, v1beta1 removed
    second = Megamon(world, store=store, described=[WORKLOAD])
    try:
        second.settle(observed(uid, lambda o: o.up))
        assert reading(second) == "v1beta2"
        world.described_status(WORKLOAD, "train", evicted("NodeFailures"), "v1beta2")
        down = second.settle(observed(uid, lambda o: not o.up))
        summary = down.kind(WORKLOAD.kind).summaries[uid]
        assert summary.interruption_count == 1, "the same resource, its history continued"
    finally:
        second.stop()
    (record,) = history(store).values()
    assert [e.up for e in record.events] == [False, True, False]


def test_a_kueue_upgraded_while_megamon_runs_is_read_at_the_new_version(
    fake: FakeKube, world: World, store: MemoryEventStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "megamon.sources.kube")
    fake.serve_versions(WORKLOADS, "v1beta1")
    megamon = Megamon(world, store=store, described=[WORKLOAD])
    try:
        uid = run_until_up(world, megamon, "train", "v1beta1")
        fake.serve_versions(WORKLOADS, "v1beta2")
        fake.drop_watches()  # the API server ends the watches of the version it removed
        world.described_status(WORKLOAD, "train", evicted("NodeFailures"), "v1beta2")
        down = megamon.settle(observed(uid, lambda o: not o.up))
        assert down.kind(WORKLOAD.kind).observations[uid].reason == interruptions.NODE_LOST
        assert reading(megamon) == "v1beta2"
    finally:
        megamon.stop()
    assert "kueue_workload is no longer served at v1beta1" in caplog.text, "listed again"
    assert "does not serve" not in caplog.text, "a version gone is no CRD missing"


@pytest.mark.parametrize(
    ("eviction", "reason"),
    [
        ("NodeFailures", interruptions.NODE_LOST),
        ("PodsReadyTimeout", interruptions.STARTUP_TIMEOUT),
        ("Preempted", interruptions.PREEMPTION),
    ],
)
def test_an_evicted_workload_is_down_with_its_reason_and_recovers_when_readmitted(
    world: World, store: MemoryEventStore, eviction: str, reason: str
) -> None:
    megamon = Megamon(world, store=store, described=[WORKLOAD])
    try:
        uid = run_until_up(world, megamon, "train")
        world.described_status(WORKLOAD, "train", evicted(eviction))
        down = megamon.settle(observed(uid, lambda o: not o.up))
        obs = down.kind(WORKLOAD.kind).observations[uid]
        assert (obs.reason, obs.expected_down, obs.status) == (reason, False, ""), "requeued"
        world.described_status(WORKLOAD, "train", readmitted())
        up = megamon.settle(observed(uid, lambda o: o.up))
        summary = up.kind(WORKLOAD.kind).summaries[uid]
        assert (summary.interruption_count, summary.recovery_count) == (1, 1)
    finally:
        megamon.stop()
    downs = [e.reason for e in history(store)[uid].events if not e.up]
    assert downs == [interruptions.UNKNOWN, reason], "queued first, then evicted: in the history"


def at(ns: int) -> str:
    return timestamps.format_ns(ns)


def queueing_samples(report: Report) -> dict[tuple[str, str], float]:
    """The queueing histogram's samples on /metrics, keyed by (``count``, ``sum`` or
    ``bucket<le>``; ``until``)."""
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(scrape(report, [WORKLOAD])):
        if family.name != "megamon_kueue_workload_queueing_seconds":
            continue
        for sample in family.samples:
            assert sample.labels["tpu_accelerator"] == SELECTOR[labels.TPU_ACCELERATOR]
            stage = sample.labels["until"]
            le = sample.labels.get("le", "")
            found[(sample.name.rsplit("_", 1)[-1] + le, stage)] = sample.value
    return found


def test_queueing_times_to_quota_and_admission_are_published_per_accelerator(
    world: World, kube_api: Any, store: MemoryEventStore
) -> None:
    megamon = Megamon(world, store=store, described=[WORKLOAD])
    custom = k8s.CustomObjectsApi(kube_api)
    waits = {"fast": (20, 45), "slow": (3_600, 3_660), "queued": None}  # s to quota, admission
    try:
        for name, wait in waits.items():
            world.described(WORKLOAD, workload(name))
            if wait is None:
                continue  # still waiting for quota: not counted
            got = custom.get_namespaced_custom_object(
                WORKLOAD.Group, WORKLOAD.Version[0], world.namespace, WORKLOAD.Resource, name
            )
            created = timestamps.parse(got["metadata"]["creationTimestamp"])
            status = {
                **ADMITTED,
                "conditions": [
                    {
                        **condition("QuotaReserved", "QuotaReserved"),
                        "lastTransitionTime": at(created + wait[0] * 10**9),
                    },
                    {
                        **condition("Admitted", "Admitted"),
                        "lastTransitionTime": at(created + wait[1] * 10**9),
                    },
                ],
            }
            world.described_status(WORKLOAD, name, status)

        def admitted(report: Report) -> bool:
            up = [o for o in report.kind(WORKLOAD.kind).observations.values() if o.up]
            return len(up) == 2

        found = queueing_samples(megamon.settle(admitted))
        assert found[("count", "quota_reserved")] == found[("count", "admitted")] == 2.0
        assert found[("sum", "quota_reserved")] == 3_620.0
        assert found[("sum", "admitted")] == 3_705.0
        assert found[("bucket60.0", "admitted")] == 1.0, "45 s: within a minute"
        assert found[("bucket3600.0", "admitted")] == 1.0, "61 min: beyond the hour"
        assert found[("bucket+Inf", "admitted")] == 2.0

        world.described_status(WORKLOAD, "fast", evicted("Preempted"))
        megamon.settle(lambda r: not admitted(r))
        world.described_status(WORKLOAD, "fast", readmitted())
        again = megamon.settle(admitted)
        assert queueing_samples(again)[("count", "admitted")] == 2.0, "admitted again: once"
    finally:
        megamon.stop()
