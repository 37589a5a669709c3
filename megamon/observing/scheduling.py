"""The scheduling map: which JobSet leader Job runs on which node pool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from megamon.domain.reports import ScheduledJob
from megamon.sources.kube.projections import NodeView, PodView

LEADER_INDEX = "0"


def scheduling_map(
    pods: Iterable[PodView], nodes: Mapping[str, NodeView], live_pools: set[str]
) -> dict[str, ScheduledJob]:
    """Node pool → the leader Job (completion index 0) of a JobSet bound to one of its nodes.

    Entries of node pools that no longer exist are left out.
    """
    result: dict[str, ScheduledJob] = {}
    for pod in pods:
        if not pod.jobset_name or pod.completion_index != LEADER_INDEX or not pod.node_name:
            continue
        node = nodes.get(pod.node_name)
        if node is None or node.nodepool not in live_pools:
            continue
        result[node.nodepool] = ScheduledJob(
            job_name=pod.job_name, jobset_name=pod.jobset_name, namespace=pod.namespace
        )
    return result
