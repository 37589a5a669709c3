"""The fleet report: the one-history report's own result types, each row with its cluster.

A resource is a ``ResourceAvailability`` whose ``Resource`` names its ``cluster``, an
aggregate an ``Aggregate`` with its ``cluster`` (``FLEET`` for the rows over every cluster),
and the chip-weighted time of each aggregate a ``ChipTime``: the types, ratios (availability,
MTTR, MTBI, mean provisioning) and renderings of ``megamon.summary`` and ``megamon report``,
not a copy of them. The SQL returns figures, not events: a resource carries no bands and an
empty record, and its attributes are the ones the report reads (name parts, accelerator,
topology, chips).

The HTML page needs what the SQL does not return — each resource's bands, its interruptions
and their reasons, what is down now — so for it the histories are also read as the summary's
resources (``megamon.fleet.resources``, the one-history report's own reading) and summarized
by the summary stage: ``FleetReport.detail``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from megamon.domain.kinds import Kind
from megamon.summary.availability import (
    Aggregate,
    AvailabilityReport,
    ResourceAvailability,
    Window,
)
from megamon.summary.chips import ChipTime

FLEET = "*"
"""The ``cluster`` of a fleet row: every cluster."""

GroupKey = tuple[str, Kind, str, str]
"""(cluster, kind, accelerator, topology) of an aggregate."""


def group_key(aggregate: Aggregate) -> GroupKey:
    return (aggregate.cluster, aggregate.kind, aggregate.accelerator, aggregate.topology)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A cluster whose history could not be read: none of its resources are in the report."""

    cluster: str
    reason: str


@dataclass(frozen=True, slots=True)
class SkippedSegment:
    """A segment of a cluster's log that could not be read and was left out; the cluster's
    other segments and files are in the report."""

    cluster: str
    segment: str
    """Relative to the history (``log/kind=…/date=…/….ndjson``)."""
    reason: str


@dataclass(frozen=True, slots=True)
class FleetReport:
    """The window, the clusters read, every resource, the per-cluster and fleet aggregates,
    the chip-weighted time of each aggregate; the clusters that could not be read and the
    segments left out, each with why."""

    window: Window
    start: int
    clusters: tuple[str, ...]
    resources: tuple[ResourceAvailability, ...]
    cluster_aggregates: tuple[Aggregate, ...]
    fleet_aggregates: tuple[Aggregate, ...]
    chip_times: Mapping[GroupKey, ChipTime] = field(default_factory=dict)
    unreadable: tuple[Unreadable, ...] = ()
    skipped_segments: tuple[SkippedSegment, ...] = ()
    detail: AvailabilityReport | None = None
    """The summary stage's report of every readable cluster's resources (each naming its
    cluster, with bands and records), for the page; ``None`` unless it was asked for."""

    def chip_time(self, aggregate: Aggregate) -> ChipTime:
        """The aggregate's chip-weighted time (zero when none of its resources has chips)."""
        return self.chip_times.get(group_key(aggregate), ChipTime())
