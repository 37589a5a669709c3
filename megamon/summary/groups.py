"""The timeline of a group of resources — one cluster's resources of one kind, in the fleet
report — as a faithful aggregate of its members' bands (pure).

A fleet of hundreds of node pools cannot be read one timeline per resource; a cluster's
pools read as one row that opens onto theirs. That row must not hide an outage: at each
instant it shows the **worst** state any member is in (``STATE_SEVERITY``: failed over down
over expected-down over provisioning over unobserved over up), with how many members are in
that state and how many exist then, so "down, 1 of 40" and "down, 40 of 40" read apart in
its tooltips. Where no member exists (between lifetimes), the row has no band, as a
resource's timeline has none outside its span. Its figures are the members' summed as
``availability.aggregate_group`` sums a shape's (time weighted, never a mean of percentages).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import NamedTuple

from megamon.domain.kinds import Kind
from megamon.summary.availability import (
    Aggregate,
    BandState,
    ResourceAvailability,
    aggregate_group,
)

STATE_SEVERITY: dict[BandState, int] = {
    BandState.UP: 0,
    BandState.UNOBSERVED: 1,
    BandState.PROVISIONING: 2,
    BandState.EXPECTED_DOWN: 3,
    BandState.DOWN: 4,
    BandState.FAILED: 5,
}
"""Which state shows when several meet at one instant (in a group, or in one pixel column of
a drawn timeline): the one an SRE must not miss."""

ANY_SHAPE = ""
"""The accelerator and topology of a group's aggregate: every shape of its kind."""


class GroupBand(NamedTuple):
    """``[start, end)`` in which the worst state of the members is ``state``: ``in_state`` of
    the ``present`` members that exist then are in it."""

    start: int
    end: int
    state: BandState
    in_state: int
    present: int


@dataclass(frozen=True, slots=True)
class GroupTimeline:
    """One cluster's resources of one kind: their summed figures, the spans in which any of
    them existed, and the aggregate of their bands."""

    cluster: str
    kind: Kind
    members: tuple[ResourceAvailability, ...]
    figures: Aggregate
    spans: tuple[tuple[int, int], ...]
    """``[start, end)`` where at least one member existed, merged, oldest first."""
    bands: tuple[GroupBand, ...]

    @property
    def down_now(self) -> int:
        """Members down or failed at the end of their span, live ones only."""
        return sum(
            1
            for f in self.members
            if f.resource.live and f.state in (BandState.DOWN, BandState.FAILED)
        )


def worst_bands(members: Iterable[ResourceAvailability]) -> tuple[GroupBand, ...]:
    """At each instant any member exists, its most severe state and how many are in it;
    adjacent instants alike are one band."""
    changes: dict[int, dict[BandState, int]] = {}
    for figures in members:
        for start, end, state in figures.bands:
            if end <= start:
                continue
            at_start = changes.setdefault(start, {})
            at_start[state] = at_start.get(state, 0) + 1
            at_end = changes.setdefault(end, {})
            at_end[state] = at_end.get(state, 0) - 1
    by_severity = sorted(BandState, key=STATE_SEVERITY.__getitem__, reverse=True)
    counts = dict.fromkeys(BandState, 0)
    present = 0
    result: list[GroupBand] = []
    times = sorted(changes)
    for t, following in pairwise(times):
        for state, delta in changes[t].items():
            counts[state] += delta
            present += delta
        if not present:
            continue
        worst = next(s for s in by_severity if counts[s])
        last = result[-1] if result else None
        if last is not None and last.end == t and last[2:] == (worst, counts[worst], present):
            result[-1] = last._replace(end=following)
        else:
            result.append(GroupBand(t, following, worst, counts[worst], present))
    return tuple(result)


def merged_spans(members: Iterable[ResourceAvailability]) -> tuple[tuple[int, int], ...]:
    """The union of the members' spans, as disjoint ``[start, end)`` intervals."""
    spans: list[tuple[int, int]] = []
    for start, end in sorted((f.start, f.end) for f in members):
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return tuple(spans)


def group_timeline(
    cluster: str, kind: Kind, members: Sequence[ResourceAvailability]
) -> GroupTimeline:
    figures = replace(aggregate_group((kind, ANY_SHAPE, ANY_SHAPE), list(members)), cluster=cluster)
    return GroupTimeline(
        cluster=cluster,
        kind=kind,
        members=tuple(members),
        figures=figures,
        spans=merged_spans(members),
        bands=worst_bands(members),
    )


def group_timelines(resources: Iterable[ResourceAvailability]) -> list[GroupTimeline]:
    """One group per cluster and kind, in the order the resources come (the report's:
    cluster, kind, name), each member in that order too."""
    groups: dict[tuple[str, Kind], list[ResourceAvailability]] = {}
    for figures in resources:
        groups.setdefault((figures.resource.cluster, figures.resource.kind), []).append(figures)
    return [group_timeline(cluster, kind, members) for (cluster, kind), members in groups.items()]
