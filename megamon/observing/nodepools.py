"""Node pools: GKE says which TPU pools exist and their status; nodes say how many are ready.

Expected nodes come from the pool's topology and machine type (16x16 on ct5lp-hightpu-4t →
64; an Ironwood pool's topology is its workload policy's, 2x2x2 on tpu7x-standard-4t → 2);
when the pool gives no usable size, from a node's labels (topology chips over
``gke-accelerator-count``).

``observe_nodepools`` is one moment; ``observe_nodepools_confirmed`` is what the aggregator
records: the same observations, where a pool whose nodes vanish waits for GKE to say whether
it is being deleted (``megamon.observing.deletions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from megamon.domain import interruptions, labels
from megamon.domain.interruptions import NodeSignals
from megamon.domain.kinds import Kind
from megamon.domain.observations import NodePoolAttrs, Observation
from megamon.domain.rules import tpu
from megamon.domain.rules.upness import is_up, surplus
from megamon.domain.timestamps import NANOS_PER_SECOND
from megamon.errors import ObservationError
from megamon.observing.common import (
    REASON_UNKNOWN_NODEPOOL,
    Observed,
    Problem,
    Reuse,
    Settings,
    problem_of,
)
from megamon.observing.deletions import PoolLedger, confirm
from megamon.observing.nodegroups import NodeGroups
from megamon.observing.tallies import Tallies
from megamon.sources.gke.views import (
    EXPECTED_DOWN_STATUSES,
    FAILED_STATUSES,
    STATUS_PROVISIONING,
    STATUS_RECONCILING,
    NodePoolView,
)
from megamon.sources.kube.projections import NodeView

Announced = Mapping[str, tuple[int, int]]
"""Per pool: (announced maintenance, when first seen), both in Unix seconds."""


def announcement(
    previous: tuple[int, int] | None, scheduled: int, now: int, *, keep: bool
) -> tuple[int, int] | None:
    """A pool's announcement this cycle: the time its nodes announce and since when megamon
    has seen that time (a new time starts anew); a pool down or in maintenance (``keep``)
    keeps the one its nodes stopped announcing (GKE may drop the label as the maintenance
    begins, which is when the lead time is measured). None when there is none."""
    if scheduled > 0:
        if previous is not None and previous[0] == scheduled:
            return previous
        return (scheduled, now // NANOS_PER_SECOND)
    return previous if keep else None


def _cause(pool: NodePoolView, expected: int, signals: NodeSignals | None) -> interruptions.Cause:
    if signals is None:
        return interruptions.NO_CAUSE
    return interruptions.nodepool_cause(
        failed=pool.status in FAILED_STATUSES,
        reconciling=pool.status == STATUS_RECONCILING,
        provisioning=pool.status == STATUS_PROVISIONING,
        message=pool.status_message,
        expected=expected,
        spot=pool.spot,
        nodes=signals,
    )


def _size(pool: NodePoolView, nodes: Sequence[NodeView]) -> tuple[str, int]:
    """(topology, expected nodes) from the pool, else from its nodes' labels."""
    if pool.tpu_topology:
        try:
            return pool.tpu_topology, tpu.expected_nodes(pool.tpu_topology, pool.machine_type)
        except ObservationError as err:
            if not nodes:
                raise
            pool_error: ObservationError | None = err
    else:
        pool_error = None
    for node in nodes:
        if node.topology and node.accelerator_count:
            return node.topology, tpu.expected_nodes_from_labels(
                node.topology, node.accelerator_count
            )
    if pool_error is not None:
        raise pool_error
    if pool.topology_problem:
        raise ObservationError(
            f"no TPU topology: its workload policy could not be read ({pool.topology_problem}) "
            "and none of its nodes has one yet"
        )
    raise ObservationError("no TPU topology on the pool or on any of its nodes")


def _is_tpu_pool(pool: NodePoolView, nodes: Sequence[NodeView], single_host: bool = True) -> bool:
    """A pool with a placement topology (its own, or its workload policy's: a TPU machine
    type placed by a resource policy is a multi-host slice even while the policy cannot be
    read), or (``TrackSingleHostNodePools``, the default) one whose nodes or machine type are
    TPU; the Go megamon tracks only the first kind."""
    if pool.tpu_topology:
        return True
    if pool.placement_policy and _tpu_machine(pool.machine_type):
        return True
    if not single_host:
        return False
    return bool(nodes) or _tpu_machine(pool.machine_type)


def _tpu_machine(machine_type: str) -> bool:
    try:
        tpu.chips_per_vm(machine_type)
    except ObservationError:
        return False  # a CPU or GPU pool: not megamon's business
    return True


def _observation(  # noqa: PLR0917 - called with the reuse key spread out
    pool: NodePoolView,
    topology: str,
    expected: int,
    ready: int,
    unknown: int,
    accelerator: str,
    settings: Settings,
    signals: NodeSignals | None = None,
    allocatable: int | None = None,
    announced: tuple[int, int] | None = None,
    jobset: str = "",
    present: int = 0,
) -> Observation:
    return Observation.build(
        expected=expected,
        ready=ready,
        unknown=unknown,
        threshold=settings.threshold,
        exact=settings.exact_count,
        surplus=surplus(expected, present),
        status=pool.status,
        expected_down=pool.status in EXPECTED_DOWN_STATUSES,
        failed=settings.failed_provisioning and pool.status in FAILED_STATUSES,
        attrs=NodePoolAttrs(
            nodepool_name=pool.name,
            tpu_topology=topology,
            tpu_accelerator=accelerator,
            tpu_chip_count=tpu.topology_chips(topology),
            spot=pool.spot,
            scheduled_maintenance=announced[0] if announced else 0,
            maintenance_announced=announced[1] if announced else 0,
            maintenance_jobset=jobset if announced else "",
        ),
        cause=_cause(pool, expected, signals),
        tpu_chips_allocatable=allocatable,
    )


def observe_nodepools(
    pools: Iterable[NodePoolView],
    nodes: Iterable[NodeView],
    now: int,
    settings: Settings,
    memo: Reuse[str, Observation] | None = None,
) -> Observed:
    """One observation per TPU node pool, keyed by pool name; ``memo`` (the caller's, kept
    from cycle to cycle) hands back last cycle's observation of a pool whose inputs did not
    change."""
    groups = NodeGroups.of(nodes)
    return _observe(pools, groups, now, settings, memo, announced={}, tallies=None)[0]


def observe_nodepools_confirmed(
    pools: Iterable[NodePoolView],
    nodes: Iterable[NodeView] | NodeGroups,
    now: int,
    settings: Settings,
    memo: Reuse[str, Observation] | None = None,
    *,
    polled_ns: int,
    ledger: PoolLedger,
    tallies: Tallies | None = None,
) -> tuple[Observed, PoolLedger]:
    """The observations to record: ``observe_nodepools``'s, with the down of a pool whose
    nodes vanished held until a listing requested after it (``polled_ns``: when ``pools``
    was requested) says why, and a last expected-down observation of a pool GKE no longer
    lists; and the ledger for the next cycle (``megamon.observing.deletions``). ``nodes``
    may come grouped already (``NodeIndex``), and ``tallies`` keep the counts of pools
    whose nodes did not change."""
    pools = list(pools)
    groups = nodes if isinstance(nodes, NodeGroups) else NodeGroups.of(nodes)
    observed, short, announced = _observe(
        pools, groups, now, settings, memo, announced=ledger.announced, tallies=tallies
    )
    observed.observations, ledger = confirm(
        observed.observations,
        short=short,
        listed={pool.name for pool in pools},
        polled_ns=polled_ns,
        now=now,
        ledger=ledger,
        within_ns=settings.confirm_within_ns,
    )
    return observed, replace(ledger, announced=announced)


def _short(pool: NodePoolView, members: Sequence[NodeView], expected: int) -> bool:
    """Fewer nodes than expected while GKE calls the pool neither stopping nor failed: maybe
    nodes lost, maybe a deletion GKE has not reported yet."""
    status = pool.status
    return len(members) < expected and not (
        status in EXPECTED_DOWN_STATUSES or status in FAILED_STATUSES
    )


def _observe(
    pools: Iterable[NodePoolView],
    groups: NodeGroups,
    now: int,
    settings: Settings,
    memo: Reuse[str, Observation] | None,
    *,
    announced: Announced,
    tallies: Tallies | None,
) -> tuple[Observed, frozenset[str], Announced]:
    """The observations, the pools short of nodes (``_short``), and the announcements."""
    by_pool = groups.pools
    listed: set[str] = set()
    result = Observed()
    short: set[str] = set()
    announcing: dict[str, tuple[int, int]] = {}
    with (memo or Reuse()).call() as reuse, (tallies or Tallies()).call(groups.change) as tally:
        for pool in pools:
            listed.add(pool.name)
            members = by_pool.get(pool.name, ())
            if not _is_tpu_pool(pool, members, settings.single_host_pools):
                continue
            try:
                topology, expected = _size(pool, members)
            except Exception as err:  # one object, never the cycle
                result.problems.append(problem_of(Kind.NODEPOOL, pool.name, err))
                stale = reuse.stale(pool.name)
                if stale is not None:  # unobserved now, not gone
                    result.observations[pool.name] = stale
                continue
            counts = tally(pool.name, members, now, settings.grace_ns)
            ready, unknown = counts.ready, counts.unknown
            accelerator = (
                pool.accelerator
                or next((n.accelerator for n in members), "")
                or tpu.accelerator_of(pool.machine_type)
            )
            signals = None
            expected_down = pool.status in EXPECTED_DOWN_STATUSES
            exact = settings.exact_count
            down = not is_up(expected, ready, unknown, settings.threshold, exact=exact)
            if not expected_down and down:
                signals = counts.signals  # why it is down
            found = announcement(
                announced.get(pool.name),
                counts.scheduled,
                now,
                keep=down or expected_down or counts.in_maintenance,
            )
            if found is not None:
                announcing[pool.name] = found
            if counts.malformed:
                result.problems.append(_malformed(pool.name, counts.malformed))
            inputs = (
                *(pool, topology, expected, ready, unknown, accelerator, settings, signals),
                *(counts.allocatable, found, _jobset(members) if found else ""),
                len(members),
            )
            built = reuse(pool.name, inputs, _observation)
            result.observations[pool.name] = built
            if _short(pool, members, expected):
                short.add(pool.name)
    for name in sorted(by_pool.keys() - listed):
        orphans = by_pool[name]
        result.problems.append(
            Problem(
                Kind.NODEPOOL,
                name or "(no gke-nodepool label)",
                f"{len(orphans)} TPU node(s) name this node pool, which GKE does not list; "
                "not counted",
                REASON_UNKNOWN_NODEPOOL,
            )
        )
    return result, frozenset(short), announcing


def _jobset(members: Sequence[NodeView]) -> str:
    """The JobSet the TPU provisioner created the pool for, as its nodes' labels name it."""
    for node in members:
        if node.jobset_name:
            return f"{node.jobset_namespace}/{node.jobset_name}"
    return ""


def _malformed(pool: str, nodes: int) -> Problem:
    """Nodes whose announced maintenance is no time: ignored, the pool observed as if they
    announced none; reported (logged once, counted) as an invalid object."""
    return Problem(
        Kind.NODEPOOL,
        pool,
        f"{nodes} node(s) have a {labels.SCHEDULED_MAINTENANCE_TIME} label that is not Unix "
        "seconds; ignored",
    )
