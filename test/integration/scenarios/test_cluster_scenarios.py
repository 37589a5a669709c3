"""Observers end to end through the real clients: GKE node pools from the GKE emulator,
nodes and workloads from the Kubernetes API (emulator, or a real cluster), recorded by the
event log and summarized into the report."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from megamon.domain import labels
from megamon.domain.events import FLAG_UP
from megamon.domain.kinds import Kind
from megamon.domain.reports import Report
from megamon.domain.summaries import ProvisioningState
from megamon.recording.loading import load_kind
from megamon.stores.memory import MemoryEventStore
from test.integration.scenarios.world import Megamon, World


@pytest.fixture
def megamon(world: World) -> Iterator[Megamon]:
    running = Megamon(world)
    yield running
    running.stop()


def pool_of(report: Report, name: str = "np") -> tuple[bool, int, int, str]:
    obs = report.kind(Kind.NODEPOOL).observations.get(name)
    summary = report.kind(Kind.NODEPOOL).summaries.get(name)
    if obs is None or summary is None:
        return (False, -1, -1, "")
    return obs.up, obs.ready, obs.expected, summary.provisioning_state.value


def test_a_16x16_v5e_pool_comes_up_node_by_node(world: World, megamon: Megamon) -> None:
    world.pool("np", "PROVISIONING")
    report = megamon.settle(lambda r: pool_of(r) == (False, 0, 64, "provisioning"))
    for i in range(63):
        world.node(f"np-{i}", "np")
    megamon.settle(lambda r: pool_of(r) == (False, 63, 64, "provisioning"))
    world.node("np-63", "np")
    world.pool_status("np", "RUNNING")
    report = megamon.settle(lambda r: pool_of(r) == (True, 64, 64, "success"))
    obs = report.kind(Kind.NODEPOOL).observations["np"]
    assert obs.attrs.tpu_chip_count == 256 and obs.attrs.tpu_topology == "16x16"
    assert obs.attrs.tpu_accelerator == "tpu-v5-lite-podslice"
    assert report.kind(Kind.NODEPOOL).summaries["np"].provisioning_duration > 0


@pytest.mark.parametrize(("unknown", "up"), [(10, False), (6, True)])
def test_at_threshold_0_1_unknown_nodes(world: World, unknown: int, up: bool) -> None:
    world.pool("np", "RUNNING")
    for i in range(64):
        world.node(f"np-{i}", "np", ready="Unknown" if i < unknown else "True", since_s=5)
    running = Megamon(world, threshold=0.1)
    try:
        report = running.settle(
            lambda r: (
                pool_of(r)[2] == 64 and r.kind(Kind.NODEPOOL).observations["np"].unknown == unknown
            )
        )
        assert report.kind(Kind.NODEPOOL).observations["np"].up is up
    finally:
        running.stop()


def test_a_node_unknown_past_the_grace_period_is_not_ready(world: World) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-4t")
    world.node("a", "np", topology="2x4")
    world.node("b", "np", topology="2x4", ready="Unknown", since_s=600)
    running = Megamon(world, grace_s=180)
    try:
        report = running.settle(lambda r: pool_of(r)[2] == 2)
        obs = report.kind(Kind.NODEPOOL).observations["np"]
        assert (obs.ready, obs.unknown, obs.up) == (1, 0, False)
    finally:
        running.stop()


def test_a_pool_provisioning_then_error_then_running(world: World, megamon: Megamon) -> None:
    world.pool("np", "PROVISIONING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    megamon.settle(lambda r: pool_of(r)[3] == ProvisioningState.PROVISIONING)
    world.pool_status("np", "ERROR")
    failed = megamon.settle(lambda r: pool_of(r)[3] == ProvisioningState.FAILED)
    frozen = failed.kind(Kind.NODEPOOL).summaries["np"].provisioning_duration
    world.pool_status("np", "RUNNING")
    world.node("np-0", "np", topology="2x4")
    done = megamon.settle(lambda r: pool_of(r)[3] == ProvisioningState.SUCCESS)
    summary = done.kind(Kind.NODEPOOL).summaries["np"]
    assert summary.provisioning_duration >= frozen
    assert summary.interruption_count == 0


def test_a_stopping_pool_is_expected_down(world: World, megamon: Megamon) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    megamon.settle(lambda r: pool_of(r)[0])
    world.pool_status("np", "STOPPING")
    report = megamon.settle(lambda r: not pool_of(r)[0])
    obs = report.kind(Kind.NODEPOOL).observations["np"]
    assert obs.expected_down and obs.status == "STOPPING"
    assert report.kind(Kind.NODEPOOL).summaries["np"].interruption_count == 0


@pytest.mark.parametrize(
    ("ending", "interruptions"), [("Completed", 0), ("Failed", 1), ("Suspended", 1)]
)
def test_jobsets_become_ready_then_end(
    world: World, megamon: Megamon, ending: str, interruptions: int
) -> None:
    uid = world.jobset("train", replicas=2)
    world.jobset_status("train", ready=1)
    megamon.settle(lambda r: uid in r.kind(Kind.JOBSET).observations)
    world.jobset_status("train", ready=2)
    up = megamon.settle(lambda r: r.kind(Kind.JOBSET).observations[uid].up)
    assert up.kind(Kind.JOBSET).observations[uid].attrs.tpu_chip_count == 32
    world.jobset_status("train", ready=2, condition=ending)
    report = megamon.settle(lambda r: r.kind(Kind.JOBSET).observations[uid].status == ending)
    assert not report.kind(Kind.JOBSET).observations[uid].up
    assert report.kind(Kind.JOBSET).summaries[uid].interruption_count == interruptions


def test_a_jobset_whose_status_turns_malformed_is_unobserved_not_deleted_and_not_reborn(
    world: World, megamon: Megamon
) -> None:
    uid = world.jobset("train", replicas=2)
    world.jobset_status("train", ready=2)
    megamon.settle(lambda r: uid in r.kind(Kind.JOBSET).observations)
    up = megamon.settle(lambda r: r.kind(Kind.JOBSET).observations[uid].up)
    world.patch_jobset_status("train", {"replicatedJobsStatus": 5})
    megamon.settle(lambda r: any(p.kind == "jobset" for p in megamon.problems))
    stale = megamon.settle(lambda r: True)  # a cycle after the watch delivered it
    assert stale.kind(Kind.JOBSET).observations[uid] == up.kind(Kind.JOBSET).observations[uid]
    assert [(p.subject, p.reason) for p in megamon.problems] == [
        (f"{world.namespace}/train", "invalid")
    ]
    assert megamon.store.archived_keys(Kind.JOBSET) == []  # not retired
    world.jobset_status("train", ready=1)  # readable again: one replicated job lost
    report = megamon.settle(lambda r: not r.kind(Kind.JOBSET).observations[uid].up)
    assert report.kind(Kind.JOBSET).summaries[uid].interruption_count == 1  # the same lifetime
    record = load_kind(megamon.store, Kind.JOBSET).history.records[uid]
    assert [bool(f & FLAG_UP) for f in record.flags] == [False, True, False]
    assert megamon.store.archived_keys(Kind.JOBSET) == []


def test_a_leaderworkerset(world: World, megamon: Megamon) -> None:
    uid = world.leaderworkerset("serve", replicas=2, ready=2)
    # Created, then its status written: megamon may see it between the two, not ready yet.
    lwss = Kind.LEADERWORKERSET
    report = megamon.settle(
        lambda r: uid in r.kind(lwss).observations and r.kind(lwss).observations[uid].up
    )
    obs = report.kind(lwss).observations[uid]
    assert obs.attrs.lws_name == "serve" and obs.attrs.tpu_chip_count == 16


def test_a_slice_that_vanishes_while_its_jobset_runs_stays_down_across_a_restart(
    world: World,
) -> None:
    store = MemoryEventStore()
    world.jobset("train", replicas=1)
    world.slice("slice-a", owner="train")
    first = Megamon(world, slices=True, store=store)
    try:
        first.settle(
            lambda r: (
                r.kind(Kind.SLICE).observations.get("slice-a") is not None
                and r.kind(Kind.SLICE).observations["slice-a"].up
            )
        )
    finally:
        first.stop()
    world.delete_slice("slice-a")
    second = Megamon(world, slices=True, store=store)  # a restarted megamon
    try:
        report = second.settle(
            lambda r: (
                "slice-a" in r.kind(Kind.SLICE).observations
                and not r.kind(Kind.SLICE).observations["slice-a"].up
            )
        )
        obs = report.kind(Kind.SLICE).observations["slice-a"]
        assert not obs.expected_down and obs.attrs.slice_owner_name == "train"
        assert report.kind(Kind.SLICE).summaries["slice-a"].interruption_count == 1
        world.jobset_status("train", ready=0, condition="Completed")
        second.settle(lambda r: "slice-a" not in r.kind(Kind.SLICE).observations)
    finally:
        second.stop()
    assert store.archived_keys(Kind.SLICE) == ["slice-a"]


def test_the_scheduling_map_and_job_labelling(world: World, megamon: Megamon) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    world.jobset("train", replicas=1)
    job = world.leader("train", "np-0")
    report = megamon.settle(lambda r: "np" in r.scheduling)
    assert report.scheduling["np"].job_name == job
    assert report.scheduling["np"].jobset_name == "train"

    def labelled() -> bool:
        found = k8s.BatchV1Api(world.api).read_namespaced_job(job, world.namespace)
        return (found.metadata.labels or {}).get(labels.SCHEDULED_NODE_POOL) == "np"

    megamon.settle(lambda r: labelled())


def test_workload_changes_are_recorded_when_they_happen_not_at_the_next_tick(
    world: World,
) -> None:
    store = MemoryEventStore()
    running = Megamon(world, store=store, aggregation_s=60.0)
    running.aggregator.start()
    try:
        uid = world.jobset("train", replicas=1)
        world.jobset_status("train", ready=1)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            record = load_kind(store, Kind.JOBSET).history.records.get(uid)
            if record is not None and record.events[-1].up:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the JobSet coming up was not recorded within 5 s")
    finally:
        running.aggregator.stop()
        running.stop()
