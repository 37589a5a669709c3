"""What the window cost, and why: each interruption with its reason, chip-hours lost by
reason and to provisioning that failed or is stuck, and the worst resources first (pure).

The first thing an SRE asks of a report is "how much capacity did we lose, and why". The
report's figures answer it once they are weighed by chips and split by the reason recorded
on each interruption's first down event; this module does that from the window figures of
``availability`` (its bands, already clipped to the window and carved of unobserved time), so
the per-reason down time of a resource always adds up to its ``times.down``.

**Interruptions** of a resource are its down periods after its first up whose first event is
not expected (the periods ``availability`` counts as interruptions), that overlap its span:
``start`` (the first down event), ``end`` (the event that brought it up; ``None`` while it is
down at the end of the span), the reason of the first down event (``unknown`` when it has
none: a history the Go megamon wrote), the detail of an ongoing one (the history keeps
details of ongoing interruptions only), ``down_time`` (its down and failed time inside the
span, unobserved time left out) and ``counted`` (it began in the window: it is one of the
window's ``interruptions``).

**Lost chip time** of a resource: chips × down time, split by the reason of the
interruption the time belongs to; summed in integer chip-nanoseconds (exact in any order),
printed as chip-seconds and chip-hours. **Failed provisioning**: chips × provisioning time in the
window of a resource whose provisioning failed or has not ended (a pool stuck in ``ERROR``
for the whole window has no down time and no availability; this is what it cost). The
provisioning of resources that came up is not a loss: its time is in the provisioning
figures.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_UP, reason_of
from megamon.domain.interruptions import UNKNOWN
from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.domain.timestamps import NANOS_PER_SECOND, seconds
from megamon.summary.availability import (
    Aggregate,
    AvailabilityReport,
    Band,
    BandState,
    ResourceAvailability,
    Window,
    aggregate_group,
    monotonic_prefix,
    shape_order,
)
from megamon.summary.chips import UpDownChipTime, chips_of

_DOWN_STATES = (BandState.DOWN, BandState.FAILED)
_STUCK = (ProvisioningState.FAILED, ProvisioningState.PROVISIONING)


@dataclass(frozen=True, slots=True)
class Interruption:
    """One down period of a resource that was not planned, as the window saw it."""

    start: int
    end: int | None
    """When it came up again; ``None``: still down at the end of the span."""
    reason: str
    detail: str
    down_time: int
    """Its down time inside the span (ns), unobserved time left out."""
    counted: bool
    """Whether it began inside the window (one of the window's interruptions)."""


def _periods(figures: ResourceAvailability, now: int) -> list[tuple[int, int | None, str]]:
    """(start, end or None, reason) of every unexpected down period after the first up, of
    the events up to ``now`` (as ``availability`` reads them)."""
    record = figures.resource.record
    ts = monotonic_prefix(record.timestamps, now)
    flags = record.flags
    periods: list[tuple[int, int | None, str]] = []
    seen_up = False
    open_at: int | None = None
    reason = ""
    was_up = True
    for i, t in enumerate(ts):
        is_up = bool(flags[i] & FLAG_UP)
        if is_up:
            if open_at is not None:
                periods.append((open_at, t, reason))
                open_at = None
            seen_up = was_up = True
            continue
        if was_up and seen_up and not flags[i] & FLAG_EXPECTED_DOWN:
            open_at, reason = t, reason_of(flags[i]) or UNKNOWN
        was_up = False
    if open_at is not None:
        periods.append((open_at, None, reason))
    return periods


def _overlap(bands: Sequence[Band], start: int, end: int) -> int:
    """Down and failed time of ``bands`` (in time order) inside ``[start, end)``: from the
    first band that ends after ``start`` (found by bisection: a resource with many
    interruptions must not scan its bands once per interruption)."""
    total = 0
    for i in range(bisect_right(bands, start, key=_band_end), len(bands)):
        band = bands[i]
        if band.start >= end:
            break
        if band.state in _DOWN_STATES:
            total += min(band.end, end) - max(band.start, start)
    return total


def _band_end(band: Band) -> int:
    return band.end


def interruptions(figures: ResourceAvailability, window: Window) -> tuple[Interruption, ...]:
    """The interruptions that overlap the resource's span, oldest first."""
    found = []
    since = window.since
    periods = _periods(figures, window.now)
    for n, (start, end, reason) in enumerate(periods):
        stop = end if end is not None else figures.end
        if stop <= figures.start or start >= figures.end:
            continue
        ongoing = end is None or end > figures.end
        detail = figures.resource.detail if ongoing and n == len(periods) - 1 else ""
        found.append(
            Interruption(
                start=start,
                end=None if ongoing else end,
                reason=reason,
                detail=detail,
                down_time=_overlap(figures.bands, start, min(stop, figures.end)),
                counted=since is None or start > since,
            )
        )
    return tuple(found)


def down_time_by_reason(figures: ResourceAvailability, window: Window) -> dict[str, int]:
    """The resource's down time in the window, by the reason of its interruption; the values
    add up to ``figures.times.down``."""
    result: dict[str, int] = {}
    for interruption in interruptions(figures, window):
        if interruption.down_time:
            result[interruption.reason] = (
                result.get(interruption.reason, 0) + interruption.down_time
            )
    return result


def failed_provisioning_time(figures: ResourceAvailability) -> int:
    """Provisioning time in the window of a resource that failed or is still provisioning."""
    return figures.times.provisioning if figures.provisioning_state in _STUCK else 0


@dataclass(frozen=True, slots=True)
class KindLosses(UpDownChipTime):
    """What one kind lost over the window, weighed by chips (integer chip-nanoseconds; the
    ``_seconds`` properties are what the report prints)."""

    kind: Kind
    chips: int
    """Chips of the resources counted (each lifetime once)."""
    up_chip_ns: int
    down_chip_ns: int
    down_chip_ns_by_reason: Mapping[str, int]
    failed_provisioning_chip_ns: int
    interruptions_by_reason: Mapping[str, int]
    """Interruptions that began in the window, by reason (every resource, chips or not)."""

    @property
    def down_chip_seconds_by_reason(self) -> dict[str, float]:
        """Most first, as ``down_chip_ns_by_reason``."""
        return {reason: seconds(ns) for reason, ns in self.down_chip_ns_by_reason.items()}

    @property
    def failed_provisioning_chip_seconds(self) -> float:
        return seconds(self.failed_provisioning_chip_ns)


@dataclass(frozen=True, slots=True)
class Worst:
    """A resource ranked by what it lost: chip time down plus failed provisioning."""

    figures: ResourceAvailability
    lost_chip_ns: int
    down_time_by_reason: Mapping[str, int]

    @property
    def lost_chip_seconds(self) -> float:
        return seconds(self.lost_chip_ns)


def _sorted_counts(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


@dataclass(slots=True)
class _Sums:
    chips: int = 0
    up: int = 0
    down: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    stuck: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, figures: ResourceAvailability, spans: Sequence[Interruption]) -> None:
        for interruption in spans:
            if interruption.counted:
                self.counts[interruption.reason] = self.counts.get(interruption.reason, 0) + 1
        chips = chips_of(figures)
        if not chips:
            return
        for interruption in spans:
            if interruption.down_time:
                lost = chips * interruption.down_time
                self.by_reason[interruption.reason] = (
                    self.by_reason.get(interruption.reason, 0) + lost
                )
        self.chips += chips
        self.up += chips * figures.times.up
        self.down += chips * figures.times.down
        self.stuck += chips * failed_provisioning_time(figures)


def kind_losses(report: AvailabilityReport) -> list[KindLosses]:
    """Per kind, in the report's kind order: chips, chip availability, chip-seconds lost by
    reason and to failed provisioning, interruptions by reason."""
    sums: dict[Kind, _Sums] = {}
    for figures in report.resources:
        spans = interruptions(figures, report.window)
        sums.setdefault(figures.resource.kind, _Sums()).add(figures, spans)
    return [
        KindLosses(
            kind=kind,
            chips=s.chips,
            up_chip_ns=s.up,
            down_chip_ns=s.down,
            down_chip_ns_by_reason=_sorted_counts(s.by_reason),
            failed_provisioning_chip_ns=s.stuck,
            interruptions_by_reason=_sorted_counts(s.counts),
        )
        for kind, s in sums.items()
    ]


def worst_resources(report: AvailabilityReport, limit: int = 10) -> list[Worst]:
    """The resources that lost the most chip-seconds (down, or failed provisioning) in the
    window, most first; resources without chips rank by their down and stuck time alone."""
    ranked = []
    for figures in report.resources:
        stuck = failed_provisioning_time(figures)
        lost_time = figures.times.down + stuck
        if not lost_time:
            continue
        weight = chips_of(figures) or 1
        ranked.append(
            Worst(figures, weight * lost_time, down_time_by_reason(figures, report.window))
        )
    ranked.sort(
        key=lambda w: (
            -w.lost_chip_ns,
            w.figures.resource.kind.value,
            w.figures.resource.name,
            w.figures.resource.cluster,
        )
    )
    return ranked[:limit]


ANY_TOPOLOGY = ""
"""The topology of a per-accelerator rollup: every topology of the accelerator."""


def accelerator_rollup(report: AvailabilityReport) -> tuple[Aggregate, ...]:
    """The aggregates per kind and accelerator alone (every topology together), summed and
    recomputed as ``availability.aggregate`` does, in the report's order of shapes."""
    groups: dict[tuple[Kind, str, str], list[ResourceAvailability]] = {}
    for figures in report.resources:
        key = (figures.resource.kind, figures.resource.accelerator, ANY_TOPOLOGY)
        groups.setdefault(key, []).append(figures)
    ordered = sorted(groups, key=lambda key: shape_order(*key))
    return tuple(aggregate_group(key, groups[key]) for key in ordered)


DISTRIBUTION_BOUNDS: Final = tuple(
    n * NANOS_PER_SECOND for n in (60, 5 * 60, 15 * 60, 3600, 6 * 3600, 86_400)
)
"""Upper bounds of the report's distributions: 1 m, 5 m, 15 m, 1 h, 6 h, 1 d, and beyond."""


@dataclass(frozen=True, slots=True)
class Distribution:
    """How many durations fell in each bucket of ``DISTRIBUTION_BOUNDS`` (one more bucket
    for the longer ones)."""

    bounds: tuple[int, ...]
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def distribution(
    durations: Iterable[int], bounds: tuple[int, ...] = DISTRIBUTION_BOUNDS
) -> Distribution:
    counts = [0] * (len(bounds) + 1)
    for duration in durations:
        counts[bisect_left(bounds, duration)] += 1
    return Distribution(bounds, tuple(counts))


def recovery_times(report: AvailabilityReport) -> list[int]:
    """The time to recover of every interruption that began in the window and recovered."""
    return [
        found.end - found.start
        for figures in report.resources
        for found in interruptions(figures, report.window)
        if found.counted and found.end is not None
    ]


def provisioning_times(report: AvailabilityReport) -> list[int]:
    """How long each resource that came up took to, of those whose first up is in the
    window (its provisioning took place, at least in part, within the window)."""
    since = report.window.since
    return [
        f.provisioning_duration
        for f in report.resources
        if f.provisioning_state is ProvisioningState.SUCCESS
        and (since is None or f.resource.record.timestamps[0] + f.provisioning_duration > since)
    ]
