"""Kueue Workloads through the Kubernetes emulator and the official client, as Kueue's
versions serve them: a cluster serving ``v1beta2`` only (Kueue after ``v1beta1`` is removed),
``v1beta1`` only (before v0.15), and one whose served versions change while megamon is
stopped; and the evictions Kueue requeues, each with its reason: ``NodeFailures``
(``node-lost``), ``PodsReadyTimeout`` (``startup-timeout``), ``Preempted`` (``preemption``).

These scenarios serve a version or another, which only the emulator can: they run on it
even when ``MEGAMON_TEST_KUBECONFIG`` names a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from internal.fakekube.fakekube import FakeKube
from megamon.domain import interruptions, labels
from megamon.domain.descriptions import shipped
from megamon.domain.events import EventRecord
from megamon.domain.reports import Report
from megamon.recording.loading import load_kind
from megamon.stores.memory import MemoryEventStore
from test.integration.scenarios.world import Megamon, World

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
