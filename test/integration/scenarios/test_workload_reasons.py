"""Why the nodes of a JobSet, a Slice or a Kueue-preempted JobSet went down: each cause of
docs/metrics.md ("Reasons") driven through the Kubernetes API with the official client (nodes,
their labels and taints, Slices and their conditions, JobSets as Kueue suspends them), read
from the observation megamon reports, from the history it wrote and from /metrics."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from megamon.domain import interruptions, labels
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.reports import Report
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.recording.loading import load_kind
from test.integration.scenarios.world import Megamon, World

FOUR_NODES = {"topology": "4x4", "machine_type": "ct5lp-hightpu-4t"}
"""A 4x4 v5e slice on 4-chip VMs: four nodes, as a JobSet of one replica × parallelism 4."""

# What Kueue and the JobSet controller really write when Kueue preempts a JobSet: Kueue sets
# ``spec.suspend`` (kueue pkg/controller/jobs/jobset: ``Suspend()``) and records a ``Stopped``
# event; the JobSet controller then sets this condition (jobset pkg/constants:
# ``JobSetSuspendedReason``, ``JobSetSuspendedMessage``) — the same as for any suspension.
# Only Kueue's Workload says preemption: ``Evicted`` (reason ``Preempted``) and ``Preempted``
# (reason ``InClusterQueue``, ``InCohortReclamation``, ``InCohortFairSharing``,
# ``InCohortReclaimWhileBorrowing``), which megamon does not read.
KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
JOBSET_SUSPENDED_REASON = "SuspendedJobs"
JOBSET_SUSPENDED_MESSAGE = "jobset is suspended"


def taint(key: str) -> dict[str, Any]:
    return {"spec": {"taints": [{"key": key, "effect": "NoSchedule"}]}}


def down(megamon: Megamon, kind: Kind, key: str, reason: str) -> Observation:
    def check(report: Report) -> bool:
        found = report.kind(kind).observations.get(key)
        return found is not None and not found.up and found.reason == reason

    return megamon.settle(check).kind(kind).observations[key]


def up(megamon: Megamon, kind: Kind, key: str) -> None:
    megamon.settle(lambda r: (o := r.kind(kind).observations.get(key)) is not None and o.up)


def recorded_reasons(megamon: Megamon, kind: Kind, key: str) -> list[tuple[bool, str]]:
    """The (up, reason) of each event of ``key`` in the history megamon wrote."""
    assert megamon.aggregator.persist_once()
    events = load_kind(megamon.store, kind).history.records[key].events
    return [(e.up, e.reason) for e in events]


# The nodes of a JobSet -----------------------------------------------------------------------


@pytest.fixture
def megamon(world: World) -> Iterator[Megamon]:
    running = Megamon(world, grace_s=180)
    yield running
    running.stop()


def provisioned_jobset(world: World, megamon: Megamon, *, spot: bool = False) -> str:
    """A JobSet and the four nodes the TPU provisioner made for it, all Ready."""
    world.pool("np", "RUNNING", spot=spot, **FOUR_NODES)
    extra = {
        labels.PROVISIONER_JOBSET_NAMESPACE: world.namespace,
        labels.PROVISIONER_JOBSET_NAME: "train",
        **({labels.SPOT: "true"} if spot else {}),
    }
    for i in range(4):
        world.node(f"np-{i}", "np", topology="4x4", extra=extra)
    uid = world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1)
    up(megamon, Kind.JOBSET_NODES, uid)
    return uid


NodeChange = Callable[[World], None]


def maintenance_label(world: World) -> None:
    active = {labels.ACTIVE_NODE_MAINTENANCE: labels.MAINTENANCE_ONGOING}
    world.patch_node("np-1", {"metadata": {"labels": active}})
    world.ready("np-1", "False")


def impending_termination(world: World) -> None:
    world.patch_node("np-1", taint(labels.TAINT_IMPENDING_NODE_TERMINATION))
    world.ready("np-1", "False")


@pytest.mark.parametrize(
    ("change", "spot", "reason"),
    [
        (maintenance_label, False, interruptions.MAINTENANCE),
        (impending_termination, False, interruptions.MAINTENANCE),
        (impending_termination, True, interruptions.PREEMPTION),
        (lambda w: w.delete_node("np-1"), True, interruptions.PREEMPTION),
        (lambda w: w.delete_node("np-1"), False, interruptions.NODE_LOST),
        (lambda w: w.ready("np-1", "Unknown", since_s=600), False, interruptions.NODE_LOST),
        (lambda w: w.ready("np-1", "False"), False, interruptions.NODE_NOT_READY),
    ],
    ids=[
        "maintenance-label",
        "impending-termination-on-demand",
        "impending-termination-spot",
        "spot-node-deleted",
        "node-deleted",
        "unknown-past-grace",
        "not-ready",
    ],
)
def test_what_the_nodes_of_a_jobset_say_is_its_reason(
    world: World, megamon: Megamon, change: NodeChange, spot: bool, reason: str
) -> None:
    uid = provisioned_jobset(world, megamon, spot=spot)
    change(world)
    down(megamon, Kind.JOBSET_NODES, uid, reason)
    assert recorded_reasons(megamon, Kind.JOBSET_NODES, uid)[-2:] == [(True, ""), (False, reason)]


def test_nodes_unknown_within_the_grace_period_name_their_node_pool(world: World) -> None:
    """With no tolerance for Unknown nodes, a node that just went Unknown takes the JobSet's
    nodes down before it counts as lost: its node pool is what megamon can name."""
    strict = Megamon(world, threshold=0.0, grace_s=180)
    try:
        uid = provisioned_jobset(world, strict)
        world.ready("np-2", "Unknown", since_s=5)
        found = down(strict, Kind.JOBSET_NODES, uid, interruptions.NODEPOOL)
        assert found.reason_detail == "np"
    finally:
        strict.stop()


def test_nodes_still_being_created_are_not_lost(world: World, megamon: Megamon) -> None:
    world.pool("np", "PROVISIONING", **FOUR_NODES)
    mine = {
        labels.PROVISIONER_JOBSET_NAMESPACE: world.namespace,
        labels.PROVISIONER_JOBSET_NAME: "train",
    }
    world.node("np-0", "np", topology="4x4", extra=mine)
    uid = world.jobset("train", replicas=1)
    assert down(megamon, Kind.JOBSET_NODES, uid, interruptions.UNKNOWN).reason_detail == ""


# Kueue ---------------------------------------------------------------------------------------


def test_a_jobset_kueue_preempts_is_suspended(world: World, megamon: Megamon) -> None:
    """What Kueue and the JobSet controller write on a preempted JobSet is what they write on
    any suspended one: megamon records ``suspended`` (docs/metrics.md says why), for the
    JobSet and for the nodes the TPU provisioner then takes away."""
    uid = provisioned_jobset(world, megamon)
    world.patch_jobset("train", {"metadata": {"labels": {KUEUE_QUEUE_NAME: "tpu-queue"}}})
    world.patch_jobset("train", {"spec": {"suspend": True}})
    world.jobset_status(
        "train",
        ready=0,
        condition=labels.JOBSET_SUSPENDED,
        reason=JOBSET_SUSPENDED_REASON,
        message=JOBSET_SUSPENDED_MESSAGE,
    )
    for i in range(4):
        world.delete_node(f"np-{i}")
    down(megamon, Kind.JOBSET, uid, interruptions.SUSPENDED)
    down(megamon, Kind.JOBSET_NODES, uid, interruptions.SUSPENDED)
    assert recorded_reasons(megamon, Kind.JOBSET, uid)[-1] == (False, interruptions.SUSPENDED)


# Slices --------------------------------------------------------------------------------------


@pytest.fixture
def with_slices(world: World) -> Iterator[Megamon]:
    running = Megamon(world, grace_s=180, slices=True)
    yield running
    running.stop()


def running_slice(world: World, megamon: Megamon) -> None:
    world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1)
    world.slice("slice-a", owner="train")
    up(megamon, Kind.SLICE, "slice-a")


def test_a_slice_whose_creation_failed_is_failed_with_the_message(
    world: World, with_slices: Megamon
) -> None:
    running_slice(world, with_slices)
    world.slice_conditions(
        "slice-a",
        ("Ready", "False", "Error", "partition p0 is unhealthy"),
        ("SliceCreationFailed", "True", "CreationFailed", "partition p0 is unhealthy"),
    )
    found = down(with_slices, Kind.SLICE, "slice-a", interruptions.FAILED)
    assert found.reason_detail == "partition p0 is unhealthy"


def test_a_slice_not_ready_is_an_error_with_the_message(world: World, with_slices: Megamon) -> None:
    running_slice(world, with_slices)
    world.slice_conditions("slice-a", ("Ready", "False", "Degraded", "ICI link 3 is down"))
    found = down(with_slices, Kind.SLICE, "slice-a", interruptions.ERROR)
    assert found.reason_detail == "ICI link 3 is down"
    assert recorded_reasons(with_slices, Kind.SLICE, "slice-a")[-1] == (False, "error")


def test_a_slice_that_vanished_while_its_owner_runs_is_node_lost(
    world: World, with_slices: Megamon
) -> None:
    running_slice(world, with_slices)
    world.delete_slice("slice-a")
    down(with_slices, Kind.SLICE, "slice-a", interruptions.NODE_LOST)
    assert recorded_reasons(with_slices, Kind.SLICE, "slice-a")[-1] == (False, "node-lost")


def test_a_slice_on_a_node_pool_that_went_down_names_the_pool(
    world: World, with_slices: Megamon
) -> None:
    world.pool("np", "RUNNING", **FOUR_NODES)
    for i in range(4):
        world.node(f"np-{i}", "np", topology="4x4", extra={labels.TPU_SLICE: "slice-a"})
    running_slice(world, with_slices)
    world.ready("np-3", "False")
    world.slice_conditions("slice-a", ("Ready", "False", "Degraded", "host 3 not ready"))
    found = down(with_slices, Kind.SLICE, "slice-a", interruptions.NODEPOOL)
    assert found.reason_detail == "np"


def test_a_slice_with_nothing_to_say_is_unknown(world: World, with_slices: Megamon) -> None:
    running_slice(world, with_slices)
    world.slice_conditions("slice-a")  # no Ready condition at all
    down(with_slices, Kind.SLICE, "slice-a", interruptions.UNKNOWN)


# On /metrics ---------------------------------------------------------------------------------


def recoveries(report: Report, kind: str) -> dict[str, float]:
    """``megamon_<kind>_time_to_recover_seconds_count`` by reason, as a scrape reads it."""
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BuildInfo("0", "c", "d")))
    name = f"megamon_{kind}_time_to_recover_seconds_count"
    return {
        sample.labels["reason"]: sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == name
    }


def test_the_reasons_of_slices_and_jobset_nodes_label_their_histograms(
    world: World, with_slices: Megamon
) -> None:
    running_slice(world, with_slices)
    world.slice_conditions("slice-a", ("Ready", "False", "Degraded", "ICI link 3 is down"))
    down(with_slices, Kind.SLICE, "slice-a", interruptions.ERROR)
    world.slice_conditions("slice-a", ("Ready", "True", "Ready", "all hosts ready"))
    report = with_slices.settle(lambda r: recoveries(r, "slice") == {"error": 1.0})
    assert recoveries(report, "slice") == {"error": 1.0}


def test_a_preempted_jobsets_nodes_label_their_histograms(world: World, megamon: Megamon) -> None:
    uid = provisioned_jobset(world, megamon, spot=True)
    world.delete_node("np-3")
    down(megamon, Kind.JOBSET_NODES, uid, interruptions.PREEMPTION)
    extra = {
        labels.PROVISIONER_JOBSET_NAMESPACE: world.namespace,
        labels.PROVISIONER_JOBSET_NAME: "train",
        labels.SPOT: "true",
    }
    world.node("np-3", "np", topology="4x4", extra=extra)  # GKE brought a new VM
    report = megamon.settle(lambda r: recoveries(r, "jobset_nodes") == {"preemption": 1.0})
    assert recoveries(report, "jobset_nodes") == {"preemption": 1.0}
