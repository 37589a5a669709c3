"""Every observer at once: from a cluster snapshot (and GKE's node pools) to one batch of
observations per enabled kind, the scheduling map and the slice→owner map. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from megamon.domain.descriptions import KindDescription
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.owners import SliceOwner
from megamon.domain.reports import ScheduledJob
from megamon.observing.attribution import jobset_pools_down, slice_pools_down
from megamon.observing.common import Memos, Observed, Problem, Settings
from megamon.observing.described import DescribedObserver
from megamon.observing.nodegroups import NodeIndex
from megamon.observing.nodepools import observe_nodepools_confirmed
from megamon.observing.scheduling import LeaderJobs, scheduling_map
from megamon.observing.slices import observe_slices
from megamon.observing.workloads import WorkloadObserver
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.snapshot import ClusterSnapshot

WORKLOAD_KINDS = frozenset({Kind.JOBSET, Kind.JOBSET_NODES, Kind.SLICE, Kind.LEADERWORKERSET})
"""The built-in kinds observed from the cluster's watch caches (node pools join GKE too)."""


class WorkloadObservers:
    """Every workload observer, with its memos: built once (``megamon.app``), called each
    cycle. ``described`` are the configuration's ``WorkloadKinds``."""

    def __init__(
        self, described: Sequence[KindDescription] = (), *, nodes: NodeIndex | None = None
    ) -> None:
        self.builtin = WorkloadObserver()
        self.described = {d.kind: DescribedObserver(d) for d in described}
        self.nodes = nodes or NodeIndex()
        """The snapshot's nodes grouped (shared with the node pool observer's ``Memos``)."""

    @property
    def kinds(self) -> frozenset[Kind]:
        """The described kinds these observers observe."""
        return frozenset(self.described)


@dataclass
class WorkloadObservation:
    """Workload kinds observed at one moment, and the slice→owner map after it."""

    batch: dict[Kind, dict[str, Observation]] = field(default_factory=dict)
    owner_map: dict[str, SliceOwner] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def _take(result: WorkloadObservation, kind: Kind, observed: Observed) -> None:
    result.batch[kind] = observed.observations
    result.problems.extend(observed.problems)


def observe_workloads(
    snapshot: ClusterSnapshot,
    kinds: Iterable[Kind],
    owner_map: Mapping[str, SliceOwner],
    settings: Settings,
    now: int,
    *,
    observers: WorkloadObservers,
) -> WorkloadObservation:
    """JobSets, JobSet nodes, LWS, Slices and described kinds, as far as they are enabled.

    A described kind whose watch has not listed (its resource not served, say) is left out
    of the batch: its history stays as it is, rather than every resource ending.
    """
    kinds = set(kinds)
    jobsets = list(snapshot.jobsets.values())
    lwss = list(snapshot.leaderworkersets.values())
    result = WorkloadObservation(owner_map=dict(owner_map))
    builtin = observers.builtin
    pools_down = jobset_pools_down(snapshot.nodes, snapshot.leader_pods.values(), now, settings)
    if Kind.JOBSET in kinds:
        _take(result, Kind.JOBSET, builtin.jobsets(jobsets, settings, pools_down, now))
    if Kind.JOBSET_NODES in kinds:
        groups = observers.nodes.groups(snapshot.nodes)
        observed = builtin.jobset_nodes(jobsets, groups, now, settings, pools_down)
        _take(result, Kind.JOBSET_NODES, observed)
    if Kind.LEADERWORKERSET in kinds:
        _take(result, Kind.LEADERWORKERSET, builtin.leaderworkersets(lwss, settings))
    for kind, observe in observers.described.items():
        views = snapshot.described.get(kind)
        if kind in kinds and views is not None:
            _take(result, kind, observe(views.values(), settings))
    if Kind.SLICE in kinds:
        slice_pools = slice_pools_down(snapshot.nodes.values(), now, settings)
        observed, result.owner_map = observe_slices(
            snapshot.slices.values(), jobsets, lwss, owner_map, settings, slice_pools
        )
        _take(result, Kind.SLICE, observed)
    return result


def observe_pools(
    pools: Iterable[NodePoolView],
    snapshot: ClusterSnapshot,
    settings: Settings,
    now: int,
    memos: Memos,
    *,
    polled_ns: int,
) -> Observed:
    """Every TPU node pool, as recorded: ``pools`` is the listing requested at ``polled_ns``;
    ``memos`` (the caller's, kept between cycles) reuses what the last cycle built for pools
    whose inputs did not change, and holds the ledger of pools whose down waits for GKE."""
    observed, memos.pool_ledger = observe_nodepools_confirmed(
        pools,
        memos.nodes.groups(snapshot.nodes),
        now,
        settings,
        memos.nodepools,
        polled_ns=polled_ns,
        ledger=memos.pool_ledger,
        tallies=memos.pool_tallies,
    )
    return observed


def observe_scheduling(
    snapshot: ClusterSnapshot, pools: Iterable[NodePoolView], memos: Memos | None = None
) -> dict[str, ScheduledJob]:
    live = {pool.name for pool in pools}
    # Nodes are cluster-scoped: the cache keys them by name already.
    with (memos.leader_jobs if memos is not None else LeaderJobs()).call() as job_of:
        return scheduling_map(snapshot.leader_pods.values(), snapshot.nodes, live, job_of)
