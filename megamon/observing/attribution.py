"""Which down node pools a JobSet or Slice runs on: the ``nodepool`` reason of its interruption.

A JobSet runs on the node pools of the nodes its leader pods are bound to (the scheduling
map's join) and of the nodes the TPU provisioner labelled for it. A pool counts as down here
when any of its nodes is not Ready (NotReady, or Unknown whether within the grace period or
past it), the moment a slice failure reaches the JobSet; GKE's pool status follows later, at
the next node pool cycle. Pure: computed from the cluster snapshot, once per call, and only
when some JobSet is down and asks. A Slice runs on the node pools of the nodes labelled with
its name (``cloud.google.com/gke-tpu-slice``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from functools import cache

from megamon.domain.rules.readiness import Readiness, node_readiness
from megamon.observing.common import Settings
from megamon.observing.described import PoolsDown
from megamon.sources.kube.described import DescribedView
from megamon.sources.kube.projections import NodeView, PodView


def _down_pools(nodes: Iterable[NodeView], now: int, settings: Settings) -> set[str]:
    down: set[str] = set()
    for node in nodes:
        if node.nodepool and node.nodepool not in down:
            state = node_readiness(node.ready_status, node.ready_since_ns, now, settings.grace_ns)
            if state is not Readiness.READY:
                down.add(node.nodepool)
    return down


def _pools_by_jobset(
    nodes: Mapping[str, NodeView], pods: Iterable[PodView]
) -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for pod in pods:
        node = nodes.get(pod.node_name) if pod.jobset_name else None
        if node is not None and node.nodepool:
            found[(pod.namespace, pod.jobset_name)].add(node.nodepool)
    for node in nodes.values():
        if node.jobset_name and node.nodepool:
            found[(node.jobset_namespace, node.jobset_name)].add(node.nodepool)
    return found


def jobset_pools_down(
    nodes: Mapping[str, NodeView], pods: Iterable[PodView], now: int, settings: Settings
) -> PoolsDown:
    """For a JobSet's view: the down node pools it runs on, sorted (built on first use)."""

    @cache
    def tables() -> tuple[set[str], dict[tuple[str, str], set[str]]]:
        return _down_pools(nodes.values(), now, settings), _pools_by_jobset(nodes, pods)

    def pools_down(view: DescribedView) -> tuple[str, ...]:
        down, by_jobset = tables()
        return tuple(sorted(by_jobset.get((view.namespace, view.name), set()) & down))

    return pools_down


SlicePoolsDown = Callable[[str], tuple[str, ...]]
"""For a slice's name: the down node pools of its nodes, sorted (``()`` when none)."""


def no_slice_pools(name: str) -> tuple[str, ...]:
    return ()


def slice_pools_down(nodes: Iterable[NodeView], now: int, settings: Settings) -> SlicePoolsDown:
    """For a slice's name: the down node pools its nodes belong to (built on first use)."""

    @cache
    def tables() -> dict[str, set[str]]:
        members: dict[str, list[NodeView]] = defaultdict(list)
        for node in nodes:
            if node.tpu_slice:
                members[node.tpu_slice].append(node)
        return {name: _down_pools(found, now, settings) for name, found in members.items()}

    def pools_down(name: str) -> tuple[str, ...]:
        return tuple(sorted(tables().get(name, ())))

    return pools_down
