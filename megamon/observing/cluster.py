"""Every observer at once: from a cluster snapshot (and GKE's node pools) to one batch of
observations per enabled kind, the scheduling map and the slice→owner map. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.owners import SliceOwner
from megamon.domain.reports import ScheduledJob
from megamon.observing.common import Memos, Observed, Problem, Settings
from megamon.observing.nodepools import observe_nodepools
from megamon.observing.scheduling import scheduling_map
from megamon.observing.slices import observe_slices
from megamon.observing.workloads import (
    observe_jobset_nodes,
    observe_jobsets,
    observe_leaderworkersets,
)
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.snapshot import ClusterSnapshot

WORKLOAD_KINDS = frozenset({Kind.JOBSET, Kind.JOBSET_NODES, Kind.SLICE, Kind.LEADERWORKERSET})


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
) -> WorkloadObservation:
    """JobSets, JobSet nodes, LWS and Slices, as far as they are enabled."""
    kinds = set(kinds)
    jobsets = list(snapshot.jobsets.values())
    lwss = list(snapshot.leaderworkersets.values())
    result = WorkloadObservation(owner_map=dict(owner_map))
    if Kind.JOBSET in kinds:
        _take(result, Kind.JOBSET, observe_jobsets(jobsets, settings))
    if Kind.JOBSET_NODES in kinds:
        nodes = snapshot.nodes.values()
        _take(result, Kind.JOBSET_NODES, observe_jobset_nodes(jobsets, nodes, now, settings))
    if Kind.LEADERWORKERSET in kinds:
        _take(result, Kind.LEADERWORKERSET, observe_leaderworkersets(lwss, settings))
    if Kind.SLICE in kinds:
        observed, result.owner_map = observe_slices(
            snapshot.slices.values(), jobsets, lwss, owner_map, settings
        )
        _take(result, Kind.SLICE, observed)
    return result


def observe_pools(
    pools: Iterable[NodePoolView],
    snapshot: ClusterSnapshot,
    settings: Settings,
    now: int,
    memos: Memos,
) -> Observed:
    return observe_nodepools(pools, snapshot.nodes.values(), now, settings, memos.nodepools)


def observe_scheduling(
    snapshot: ClusterSnapshot, pools: Iterable[NodePoolView]
) -> dict[str, ScheduledJob]:
    live = {pool.name for pool in pools}
    # Nodes are cluster-scoped: the cache keys them by name already.
    return scheduling_map(snapshot.leader_pods.values(), snapshot.nodes, live)
