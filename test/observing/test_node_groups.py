"""The node index and the kept counts: a cycle regroups and recounts only what changed, and
still observes exactly what a first look at the same snapshot observes."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from megamon.domain.rules.readiness import CONDITION_UNKNOWN
from megamon.observing.cluster import WorkloadObservers, observe_pools
from megamon.observing.common import Memos, Settings
from megamon.observing.deletions import PoolLedger
from megamon.observing.nodegroups import RETALLY_FROM, NodeGroups, NodeIndex
from megamon.observing.nodepools import observe_nodepools_confirmed
from megamon.observing.tallies import GroupChange, Tallies, retallied, tally
from megamon.observing.workloads import WorkloadObserver
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.projections import JobSetView, NodeView, jobset_view
from megamon.sources.kube.snapshot import ClusterSnapshot
from test.observing.test_observers import jobset

S = 10**9
NOW = 1_780_000_000 * S
GRACE = Settings().grace_ns
POOLS = ("a", "b", "c")


def a_node(name: str, pool: str, status: str | None = "True", since: int | None = NOW) -> NodeView:
    return NodeView(
        name=name,
        nodepool=pool,
        topology="2x2",
        accelerator="tpu-v5-lite-podslice",
        accelerator_count="4",
        spot=False,
        jobset_namespace="team" if pool != "c" else "",
        jobset_name=f"js-{pool}" if pool != "c" else "",
        ready_status=status,
        ready_since_ns=since,
    )


_changes = st.lists(
    st.tuples(
        st.sampled_from(["put", "drop"]),
        st.integers(0, 7),  # which node
        st.sampled_from(POOLS),
        st.sampled_from(["True", "False", CONDITION_UNKNOWN, None]),
        st.booleans(),  # a topology, or none (not counted in its pool)
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_changes, min_size=1, max_size=6))
def test_the_index_groups_each_snapshot_as_one_pass_does(cycles: list[list[tuple]]) -> None:
    """Through any run of snapshots (nodes added, changed, moved to another pool, gone), the
    index's groups equal a one-pass grouping, and a group whose nodes did not change is
    handed out as the same tuple."""
    index = NodeIndex()
    nodes: dict[str, NodeView] = {}
    before = index.groups(MappingProxyType(dict(nodes)))
    for changes in cycles:
        touched: set[str] = set()
        for action, number, pool, status, topology in changes:
            name = f"n{number}"
            if name in nodes:
                touched.add(name)
            if action == "drop":
                nodes.pop(name, None)
                continue
            node = a_node(name, pool, status)
            nodes[name] = node if topology else replace(node, topology="")
            touched.add(name)
        snapshot = MappingProxyType(dict(nodes))
        groups = index.groups(snapshot)
        assert groups == NodeGroups.of(snapshot.values())
        assert index.groups(snapshot) is groups, "the same snapshot: nothing regrouped"
        for pool, members in groups.pools.items():
            if not touched & {node.name for node in (*members, *before.pools.get(pool, ()))}:
                assert members is before.pools[pool]
        before = groups


def test_kept_counts_are_counted_again_when_an_unknown_nodes_grace_ends() -> None:
    """The counts of an unchanged group are kept until time alone changes them: the end of
    an Unknown node's grace period, which turns it from unknown to not ready."""
    members = (a_node("n0", "a"), a_node("n1", "a", CONDITION_UNKNOWN, NOW))
    tallies = Tallies()
    with tallies.call() as count:
        first = count("a", members, NOW, GRACE)
    assert (first.ready, first.unknown) == (1, 1)
    with tallies.call() as count:
        assert count("a", members, NOW + GRACE - 1, GRACE) is first
    with tallies.call() as count:
        ended = count("a", members, NOW + GRACE, GRACE)
    assert (ended.ready, ended.unknown) == (1, 0)
    assert ended == tally(members, NOW + GRACE, GRACE)
    with tallies.call() as count:
        back = count("a", members, NOW, GRACE)  # a clock set back: counted again
    assert (back.ready, back.unknown) == (1, 1)
    with tallies.call() as count:
        other = count("a", (*members[:1], a_node("n1", "a")), NOW + GRACE, GRACE)
    assert (other.ready, other.unknown) == (2, 0)


def _pool(name: str) -> NodePoolView:
    return NodePoolView(
        name=name,
        status="RUNNING",
        tpu_topology="2x4",
        machine_type="ct5lp-hightpu-4t",
        accelerator="tpu-v5-lite-podslice",
        spot=False,
    )


def _jobset(pool: str) -> JobSetView:
    # its nodes are the pool's: the provisioner labels them with its namespace and name
    return jobset_view(jobset(f"js-{pool}", replicas=1, parallelism=3))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 5),
                st.sampled_from(["True", "False", CONDITION_UNKNOWN]),
                st.integers(-2, 2),  # when it turned so, in grace periods from now
            ),
            max_size=4,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_cycles_on_a_kept_index_observe_what_a_first_look_observes(
    cycles: list[list[tuple[int, str, int]]],
) -> None:
    """Node pools and JobSet nodes observed cycle after cycle through one index and kept
    counts equal what observers with nothing kept make of each snapshot (groups of any size
    counted from their changes, so that these small ones are too)."""
    with patch("megamon.observing.nodegroups.RETALLY_FROM", 0):
        _observe_cycles(cycles)


def _observe_cycles(cycles: list[list[tuple[int, str, int]]]) -> None:
    settings_ = Settings()
    memos = Memos()
    observers = WorkloadObservers(nodes=memos.nodes)
    baseline, ledger = WorkloadObserver(), PoolLedger()
    nodes = {f"n{i}": a_node(f"n{i}", POOLS[i % 2]) for i in range(6)}
    pools = [_pool(name) for name in POOLS[:2]]
    jobsets = [_jobset(name) for name in POOLS[:2]]
    for cycle, changes in enumerate(cycles):
        now = NOW + cycle * GRACE // 2
        for number, status, since in changes:
            name, at = f"n{number}", now + since * GRACE // 2
            nodes[name] = replace(nodes[name], ready_status=status, ready_since_ns=at)
        snapshot = ClusterSnapshot(nodes=MappingProxyType(dict(nodes)))
        kept = observe_pools(pools, snapshot, settings_, now, memos, polled_ns=now)
        fresh, ledger = observe_nodepools_confirmed(
            pools, list(nodes.values()), now, settings_, polled_ns=now, ledger=ledger
        )
        assert kept.observations == fresh.observations
        groups = observers.nodes.groups(snapshot.nodes)
        got = observers.builtin.jobset_nodes(jobsets, groups, now, settings_)
        alone = baseline.jobset_nodes(jobsets, list(nodes.values()), now, settings_)
        assert got.observations == alone.observations


_node_states = st.fixed_dictionaries(
    {
        "status": st.sampled_from(["True", "False", CONDITION_UNKNOWN, None, "Weird"]),
        "since": st.sampled_from([None, NOW - 2 * GRACE, NOW - GRACE // 2]),
        "maintenance": st.sampled_from(["", "active", "terminating", "other"]),
        "scheduled": st.sampled_from([0, -1, 1_800_000_000, 1_800_000_100, 1_800_000_200]),
        "allocatable": st.sampled_from([None, 0, 4, 8]),
        "unschedulable": st.booleans(),
    }
)


def _shaped(name: str, state: dict[str, object]) -> NodeView:
    return replace(
        a_node(name, "a"),
        ready_status=state["status"],
        ready_since_ns=state["since"],
        maintenance=state["maintenance"],
        scheduled_maintenance=state["scheduled"],
        tpu_allocatable=state["allocatable"],
        unschedulable=state["unschedulable"],
    )


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(0, 7), _node_states, max_size=8),
    st.dictionaries(st.integers(0, 9), st.one_of(st.none(), _node_states), max_size=4),
)
def test_a_group_counted_from_its_changed_nodes_is_counted_as_one_pass_counts_it(
    before_states: dict[int, dict[str, object]],
    changes: dict[int, dict[str, object] | None],
) -> None:
    """Counts taken on from the nodes a change took out and put in (``retallied``) are the
    counts of one pass over the group after it (``tally``), whatever the nodes say; where
    they cannot be taken on, ``retallied`` says so and the group is counted again."""
    before = {f"n{i}": _shaped(f"n{i}", state) for i, state in before_states.items()}
    after, removed, added = dict(before), [], []
    for i, state in changes.items():
        name = f"n{i}"
        if name in after:
            removed.append(after.pop(name))
        if state is not None:
            after[name] = _shaped(name, state)
            added.append(after[name])
    old = tuple(before[name] for name in sorted(before))
    new = tuple(after[name] for name in sorted(after))
    change = GroupChange(old, tuple(removed), tuple(added))
    counted = retallied(tally(old, NOW, GRACE), change, NOW, GRACE)
    if counted is not None:
        assert counted == tally(new, NOW, GRACE)


def test_a_ready_node_turning_not_ready_is_counted_from_the_change_alone() -> None:
    """The common change (a node of a large group turning NotReady) needs no pass over the
    group; Tallies take the counts on through the index's ``NodeGroups.change``. (A group
    smaller than ``RETALLY_FROM`` is counted again: that costs no more.)"""
    index, tallies = NodeIndex(), Tallies()
    nodes = {f"n{i}": a_node(f"n{i}", "a") for i in range(RETALLY_FROM)}
    groups = index.groups(MappingProxyType(dict(nodes)))
    with tallies.call(groups.change) as count:
        count("a", groups.pools["a"], NOW, GRACE)
    nodes["n3"] = a_node("n3", "a", "False")
    groups = index.groups(MappingProxyType(dict(nodes)))
    change = groups.change(groups.pools["a"])
    assert change is not None and change.removed[0].name == change.added[0].name == "n3"
    counted: list[object] = []
    with (
        patch(
            "megamon.observing.tallies.tally",
            side_effect=lambda n, *a: counted.append(n) or tally(n, *a),
        ),
        tallies.call(groups.change) as count,
    ):
        got = count("a", groups.pools["a"], NOW, GRACE)
    assert got == tally(groups.pools["a"], NOW, GRACE)
    assert counted, "counted"
    assert all(len(nodes_counted) == 1 for nodes_counted in counted), "only the changed node"
