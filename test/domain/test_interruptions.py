"""The reason rules (no I/O): which cause wins when several hold, as docs/metrics.md lists."""

from __future__ import annotations

from megamon.domain import interruptions as i
from megamon.domain.descriptions import COMPLETED, FAILED, SUSPENDED
from megamon.domain.interruptions import Cause, NodeSignals
from megamon.domain.observations import Observation


def pool(nodes: NodeSignals, *, spot: bool = False, expected: int = 2, **status: bool) -> Cause:
    return i.nodepool_cause(
        failed=status.get("failed", False),
        reconciling=status.get("reconciling", False),
        provisioning=status.get("provisioning", False),
        message="boom",
        expected=expected,
        spot=spot,
        nodes=nodes,
    )


def test_gke_error_wins_over_every_node_signal() -> None:
    everything = NodeSignals(present=1, lost=1, not_ready=1, maintenance=1, cordoned=1)
    assert pool(everything, failed=True, reconciling=True) == Cause(i.ERROR, "boom")


def test_maintenance_wins_over_reconciling_and_missing_nodes() -> None:
    assert pool(NodeSignals(present=1, maintenance=1), reconciling=True).reason == i.MAINTENANCE
    # impending termination: maintenance on demand, preemption on spot
    assert pool(NodeSignals(present=2, terminating=1)).reason == i.MAINTENANCE
    assert pool(NodeSignals(present=2, terminating=1), spot=True).reason == i.PREEMPTION


def test_missing_nodes_are_lost_on_demand_and_preempted_on_spot() -> None:
    assert pool(NodeSignals(present=1)).reason == i.NODE_LOST
    assert pool(NodeSignals(present=2, lost=1)).reason == i.NODE_LOST
    assert pool(NodeSignals(present=1), spot=True).reason == i.PREEMPTION
    assert pool(NodeSignals(present=2, not_ready=1), spot=True).reason == i.NODE_NOT_READY


def test_a_pool_being_created_is_unknown_not_node_lost() -> None:
    assert pool(NodeSignals(present=0), provisioning=True).reason == i.UNKNOWN
    assert pool(NodeSignals(present=2)).reason == i.UNKNOWN


def test_workload_reasons_in_priority_order() -> None:
    def cause(meaning: str, pools: tuple[str, ...] = (), restarted: bool = False) -> Cause:
        return i.workload_cause(meaning=meaning, pools_down=pools, restarted=restarted)

    assert cause(FAILED, ("a",), True) == Cause(i.FAILED)
    assert cause(SUSPENDED, ("a",), True) == Cause(i.SUSPENDED)
    assert cause("", ("b", "a"), True) == Cause(i.NODEPOOL, "a,b")
    assert cause("", (), True) == Cause(i.RESTART)
    assert cause(COMPLETED) == Cause(i.UNKNOWN)


def test_a_preempted_workload_says_so_unless_it_ended() -> None:
    def cause(meaning: str, pools: tuple[str, ...] = ()) -> Cause:
        return i.workload_cause(meaning=meaning, pools_down=pools, restarted=True, preempted=True)

    assert cause("", ("a",)) == Cause(i.PREEMPTION)  # evicted by Kueue, before its pools
    assert cause(FAILED) == Cause(i.FAILED)
    assert cause(SUSPENDED) == Cause(i.SUSPENDED)  # deactivated: an end, not a preemption


def test_a_reason_a_condition_names_comes_after_the_end_and_preemption() -> None:
    def cause(meaning: str = "", *, preempted: bool = False, named: str = i.NODE_LOST) -> Cause:
        return i.workload_cause(
            meaning=meaning, pools_down=("a",), restarted=True, preempted=preempted, named=named
        )

    assert cause() == Cause(i.NODE_LOST)  # Kueue's NodeFailures eviction, before its pools
    assert cause(named=i.STARTUP_TIMEOUT) == Cause(i.STARTUP_TIMEOUT)
    assert cause(preempted=True) == Cause(i.PREEMPTION)
    assert cause(FAILED) == Cause(i.FAILED)
    assert cause(SUSPENDED) == Cause(i.SUSPENDED)
    assert cause(named=i.FAILED) == Cause(i.NODEPOOL, "a"), "only the reasons a condition names"


def test_a_new_reason_keeps_the_codes_of_the_old_ones() -> None:
    """A reason's code in the history is its place in the set: a new one is appended."""
    assert i.REASONS[-1] == i.STARTUP_TIMEOUT
    assert i.REASONS.index(i.UNKNOWN) == 11


def test_a_long_status_message_is_cut() -> None:
    cause = i.nodepool_cause(
        failed=True, reconciling=False, message="x" * 1000, expected=1, spot=False,
        nodes=NodeSignals(),
    )  # fmt: skip
    assert len(cause.detail) == i.MAX_DETAIL and cause.detail.endswith("…")


def test_only_a_down_observation_that_is_not_expected_down_keeps_a_cause() -> None:
    cause = Cause(i.ERROR, "boom")
    assert Observation.build(expected=1, ready=1, cause=cause).reason == ""
    assert Observation.build(expected=1, ready=0, expected_down=True, cause=cause).reason == ""
    down = Observation.build(expected=1, ready=0, cause=cause)
    assert (down.reason, down.reason_detail) == (i.ERROR, "boom")
    assert Observation.build(expected=1, ready=0).reason == ""  # a kind without reasons


def test_reasons_are_a_small_fixed_set_of_label_values() -> None:
    assert len(set(i.REASONS)) == len(i.REASONS) == 13
    assert all(r.replace("-", "").isalpha() and r.islower() for r in i.REASONS)


def nodes_of_jobset(
    nodes: NodeSignals,
    *,
    meaning: str = "",
    spot: bool = False,
    pools: tuple[str, ...] = (),
    provisioned: bool = True,
) -> Cause:
    return i.jobset_nodes_cause(
        meaning=meaning, expected=2, spot=spot, nodes=nodes, pools_down=pools,
        provisioned=provisioned,
    )  # fmt: skip


def test_jobset_nodes_reasons_in_priority_order() -> None:
    everything = NodeSignals(present=1, lost=1, not_ready=1, maintenance=1)
    assert nodes_of_jobset(everything, meaning=FAILED, pools=("a",)) == Cause(i.FAILED)
    assert nodes_of_jobset(NodeSignals(), meaning=SUSPENDED) == Cause(i.SUSPENDED)
    assert nodes_of_jobset(everything, pools=("a",)) == Cause(i.MAINTENANCE)
    assert nodes_of_jobset(NodeSignals(present=2, terminating=1)) == Cause(i.MAINTENANCE)
    assert nodes_of_jobset(NodeSignals(present=2, terminating=1), spot=True).reason == i.PREEMPTION
    assert nodes_of_jobset(NodeSignals(present=1), spot=True) == Cause(i.PREEMPTION)
    assert nodes_of_jobset(NodeSignals(present=1), pools=("a",)) == Cause(i.NODE_LOST)
    assert nodes_of_jobset(NodeSignals(present=2, lost=1)) == Cause(i.NODE_LOST)
    assert nodes_of_jobset(NodeSignals(present=2, not_ready=1)) == Cause(i.NODE_NOT_READY)
    # nodes that say nothing more (Unknown within the grace period): the pools, named
    assert nodes_of_jobset(NodeSignals(present=2), pools=("b", "a")) == Cause(i.NODEPOOL, "a,b")
    assert nodes_of_jobset(NodeSignals(present=2)) == Cause(i.UNKNOWN)


def test_jobset_nodes_never_complete_are_being_created_not_lost() -> None:
    assert nodes_of_jobset(NodeSignals(present=0), provisioned=False) == Cause(i.UNKNOWN)
    assert nodes_of_jobset(NodeSignals(present=0)) == Cause(i.NODE_LOST)
    # its own ending still counts
    assert nodes_of_jobset(NodeSignals(), meaning=FAILED, provisioned=False) == Cause(i.FAILED)


def test_slice_reasons_in_priority_order() -> None:
    def cause(pools: tuple[str, ...] = (), **signals: object) -> Cause:
        return i.slice_cause(signals=i.SliceSignals(**signals), pools_down=pools)  # type: ignore[arg-type]

    failed = {"creation_failed": "partition p0 unhealthy", "vanished": True, "not_ready": "x"}
    assert cause(("a",), **failed) == Cause(i.FAILED, "partition p0 unhealthy")
    assert cause(("b", "a"), vanished=True, not_ready="x") == Cause(i.NODEPOOL, "a,b")
    assert cause(vanished=True, not_ready="x") == Cause(i.NODE_LOST)
    assert cause(not_ready="hardware degraded") == Cause(i.ERROR, "hardware degraded")
    assert cause(not_ready="") == Cause(i.ERROR)
    assert cause() == Cause(i.UNKNOWN)
    assert len(cause(creation_failed="y" * 1000).detail) == i.MAX_DETAIL
