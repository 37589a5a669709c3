"""The resource kinds megamon tracks, as data: adding a kind means adding a row here, not a
field and a flag per kind across the code base."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """A resource kind; its value is the metric infix (``megamon_<kind>_up``)."""

    NODEPOOL = "nodepool"
    JOBSET = "jobset"
    JOBSET_NODES = "jobset_nodes"
    SLICE = "slice"
    LEADERWORKERSET = "leaderworkerset"


@dataclass(frozen=True, slots=True)
class KindSpec:
    """Where a kind's history and report entries live (the Go megamon's names)."""

    event_file: str
    report_up_key: str
    report_summaries_key: str


KIND_SPECS: dict[Kind, KindSpec] = {
    Kind.NODEPOOL: KindSpec("node-pools.json", "nodePoolsUp", "nodePoolsUpSummaries"),
    Kind.JOBSET: KindSpec("jobsets.json", "jobSetsUp", "jobSetsUpSummaries"),
    Kind.JOBSET_NODES: KindSpec("jobset-nodes.json", "jobSetNodesUp", "jobSetNodesUpSummaries"),
    Kind.SLICE: KindSpec("slices.json", "slicesUp", "slicesUpSummaries"),
    Kind.LEADERWORKERSET: KindSpec(
        "leader-worker-sets.json", "leaderWorkerSetsUp", "leaderWorkerSetsUpSummaries"
    ),
}


def event_file(kind: Kind) -> str:
    """The name of the kind's live event file, e.g. ``node-pools.json``."""
    return KIND_SPECS[kind].event_file
