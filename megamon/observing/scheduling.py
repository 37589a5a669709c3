"""The scheduling map: which JobSet leader Job runs on which node pool."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

from megamon.domain.reports import ScheduledJob
from megamon.sources.kube.projections import NodeView, PodView

LEADER_INDEX = "0"


def leader_job(pod: PodView) -> ScheduledJob:
    """The Job a leader pod runs, as the scheduling map names it."""
    return ScheduledJob(job_name=pod.job_name, jobset_name=pod.jobset_name, namespace=pod.namespace)


def scheduling_map(
    pods: Iterable[PodView],
    nodes: Mapping[str, NodeView],
    live_pools: set[str],
    job_of: Callable[[PodView], ScheduledJob] = leader_job,
) -> dict[str, ScheduledJob]:
    """Node pool → the leader Job (completion index 0) of a JobSet bound to one of its nodes.

    Entries of node pools that no longer exist are left out. ``job_of``: ``leader_job``, or
    a memo of it (``LeaderJobs``).
    """
    result: dict[str, ScheduledJob] = {}
    for pod in pods:
        if not pod.jobset_name or pod.completion_index != LEADER_INDEX or not pod.node_name:
            continue
        node = nodes.get(pod.node_name)
        if node is None or node.nodepool not in live_pools:
            continue
        result[node.nodepool] = job_of(pod)
    return result


class LeaderJobs:
    """``leader_job`` of each leader pod at the latest call, handed back while the watch
    cache hands out the same projection of the pod: a large fleet's thousands of leader
    pods are not made into models again every cycle. Built once (``Memos``)."""

    def __init__(self) -> None:
        self._latest: dict[int, tuple[PodView, ScheduledJob]] = {}

    @contextmanager
    def call(self) -> Iterator[Callable[[PodView], ScheduledJob]]:
        """``job_of`` for one map; what it made is kept when the call ends."""
        latest, current = self._latest, {}

        def job_of(pod: PodView) -> ScheduledJob:
            found = latest.get(id(pod))
            if found is None or found[0] is not pod:
                found = (pod, leader_job(pod))
            current[id(pod)] = found
            return found[1]

        yield job_of
        self._latest = current
