"""Availability over a time window: resources (event records + attrs) and ``now`` in, figures
out. Pure and clock-free, like the summarizer; ``megamon report`` does the reading and the
printing. The definitions below are the contract (also in ``docs/report.md``).

**Window.** ``[since, now]``; ``since=None`` means "all history". Events later than ``now``
are ignored: the report is what megamon knew at ``now``, so ``--now`` reproduces old reports.
Timestamps that step back (replicas with skewed clocks) are read as not moving (a running
maximum), so no period is ever negative — the summarizer's rule.

**Lifetime.** A resource exists from its first event until ``now`` (live) or until it was
retired (archived: ``min(retired_at, now)``). Its *span* is its lifetime clipped to the
window. A resource whose lifetime ends at or before ``since`` is left out: it has nothing to
say about the window. Each retirement of a key is its own resource; a key retired and seen
again is one archived resource plus one live resource.

**Bands.** Each event starts a band lasting until the next event or the end of the lifetime.
Its state, decided as the summarizer decides periods:

- ``up``: an up event;
- ``provisioning``: down before the first up event (the summarizer's provisioning period,
  whatever its ``ed`` flag says), or ``failed`` when that down event is failed;
- ``expected-down``: down in a down period whose *first* event is expected (a planned stop);
- ``failed``: down with the failed flag, in a period that is not expected;
- ``down``: any other down.

Bands are clipped to the span; adjacent bands of one state are merged.

- ``unobserved``: time megamon itself was not running (the gaps between the spans its log
  records as observed, ``Resource.unobserved``) replaces whatever band it falls in. It is
  its own figure and is left out of availability, whatever state the resource was last seen
  in. (The Go-named summaries and gauges keep the Go megamon's rule: a gap counts as the
  last state.) A history without coverage records (written by the Go megamon) has no gaps.

**Time.** Within the span: ``up`` is the up bands; ``down`` is the down and failed bands after
the first up (``failed`` is the failed part of it); ``expected-down`` the expected-down bands;
``provisioning`` everything before the first up, failed or not.

**Availability** = ``up / (up + down)``, as a percentage, ``None`` when ``up + down`` is zero
(e.g. a resource that was provisioning or stopped for the whole window). Expected-down time
and provisioning time are excluded from the denominator: a planned stop is not an outage, and
how long capacity took to arrive is what the provisioning figures report, not availability.

**Interruptions / recoveries** are transitions at a time ``t`` with ``since < t <= now``
(half-open, so consecutive windows never count one transition twice): an up→down transition
into a period that is not expected, and a down→up transition out of a down period that is
neither expected nor the provisioning period.

**MTTR** = the total *full* length of the down periods recovered in the window, divided by the
recoveries in the window (integer nanoseconds, truncating): a recovery's time to recover is a
property of the incident, so an outage that began before ``since`` counts whole.
**MTBI** = up time in the window / interruptions in the window (the classic MTBF: operating
time per failure). Both are ``None`` without recoveries / interruptions. Unlike the Go-compatible
summary (docs/rules.md), expected-down periods never enter either.

**Provisioning** duration and state are exactly ``summarize()``'s, on the events up to ``now``
at the end of the lifetime: ``summarize(record, now)`` for a live resource, and at its
retirement for an archived one (a retired resource stops provisioning when it is retired).

**Aggregates** group resources by (kind, accelerator, topology): times, counts and recovered
down time are summed, and availability, MTTR and MTBI are recomputed from the sums (time
weighted, not a mean of percentages). Provisioning is summarized as a count per state and the
mean duration of the successful ones.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.domain.timestamps import add
from megamon.summary.summarizing import summarize

ACCELERATOR_ATTR = "tpuAccelerator"
TOPOLOGY_ATTR = "tpuTopology"

_KIND_ORDER = {kind: index for index, kind in enumerate(Kind)}
_DESCRIBED_NAME_ATTRS = ("workloadNamespace", "workloadName")
"""A described kind's resource names (docs/kinds.md), unless its labels are a built-in's."""


def _kind_rank(kind: Kind) -> tuple[int, str]:
    """Built-in kinds in their order, then described kinds by noun."""
    return _KIND_ORDER.get(kind, len(_KIND_ORDER)), kind.value


_LIVE_LAST = 1 << 62
"""Sort position of a live resource: after every retirement of the same key."""

# Per kind, the attrs that name a resource for humans (joined with "/"); the key otherwise.
# JobSets and LWS are keyed by UID, which says nothing to a reader.
_NAME_ATTRS: dict[Kind, tuple[str, ...]] = {
    Kind.NODEPOOL: ("nodePoolName",),
    Kind.JOBSET: ("jobsetNamespace", "jobsetName"),
    Kind.JOBSET_NODES: ("jobsetNamespace", "jobsetName"),
    Kind.SLICE: ("sliceName",),
    Kind.LEADERWORKERSET: ("lwsNamespace", "lwsName"),
}


def name_attrs(kind: Kind) -> tuple[str, ...]:
    """The attrs that name a resource of ``kind`` for humans, joined with "/" (for the
    engines that read attributes themselves, such as the fleet report's SQL)."""
    return _NAME_ATTRS.get(kind, _DESCRIBED_NAME_ATTRS)


class BandState(StrEnum):
    """What a resource was doing during one band of its timeline."""

    UP = "up"
    DOWN = "down"
    FAILED = "failed"
    EXPECTED_DOWN = "expected-down"
    PROVISIONING = "provisioning"
    UNOBSERVED = "unobserved"


class Band(NamedTuple):
    """``[start, end)`` in nanoseconds, spent in one state (a tuple: there is one per
    event in the window)."""

    start: int
    end: int
    state: BandState


@dataclass(frozen=True, slots=True)
class Window:
    """The reporting window ``[since, now]``; ``since=None`` means all history."""

    now: int
    since: int | None = None


@dataclass(frozen=True, slots=True)
class Resource:
    """One lifetime of one resource: a live record, or one archive entry."""

    kind: Kind
    key: str
    record: EventRecord
    attrs: Mapping[str, object] = field(default_factory=dict)
    retired_at: int | None = None
    """``None`` for a live resource."""
    unobserved: tuple[tuple[int, int], ...] = ()
    """``[start, end)`` spans when megamon was not observing (``unobserved_gaps``)."""
    detail: str = ""
    """What goes with the reason of its ongoing down period (from the log), if any."""
    cluster: str = ""
    """The cluster whose history it is in a fleet report (``megamon.fleet``); empty in a
    one-history report."""

    @property
    def live(self) -> bool:
        return self.retired_at is None

    @property
    def accelerator(self) -> str:
        return _text_attr(self.attrs, ACCELERATOR_ATTR)

    @property
    def topology(self) -> str:
        return _text_attr(self.attrs, TOPOLOGY_ATTR)

    @property
    def name(self) -> str:
        """The human name (``namespace/name`` for workloads); the key when attrs lack it."""
        parts = [_text_attr(self.attrs, a) for a in name_attrs(self.kind)]
        return "/".join(parts) if all(parts) and parts else self.key


def _text_attr(attrs: Mapping[str, object], name: str) -> str:
    value = attrs.get(name)
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class TimeSplit:
    """Where the time of a span went, in nanoseconds; ``failed`` is a part of ``down``."""

    up: int = 0
    down: int = 0
    failed: int = 0
    expected_down: int = 0
    provisioning: int = 0
    unobserved: int = 0

    def __add__(self, other: TimeSplit) -> TimeSplit:
        return TimeSplit(
            up=add(self.up, other.up),
            down=add(self.down, other.down),
            failed=add(self.failed, other.failed),
            expected_down=add(self.expected_down, other.expected_down),
            provisioning=add(self.provisioning, other.provisioning),
            unobserved=add(self.unobserved, other.unobserved),
        )

    @property
    def availability(self) -> float | None:
        """``up / (up + down)`` in percent; ``None`` when there is neither."""
        return availability_percent(self.up, self.down)


def availability_percent(up: int, down: int) -> float | None:
    """``up / (up + down)`` in percent; ``None`` when there is neither (also for
    chip-weighted time)."""
    counted = up + down
    return 100.0 * up / counted if counted else None


@dataclass(frozen=True, slots=True)
class Incidents:
    """Transitions in the window and the full length of the outages that were recovered."""

    interruptions: int = 0
    recoveries: int = 0
    recovered_down_time: int = 0

    def __add__(self, other: Incidents) -> Incidents:
        return Incidents(
            self.interruptions + other.interruptions,
            self.recoveries + other.recoveries,
            add(self.recovered_down_time, other.recovered_down_time),
        )


def mean_time_to_recover(incidents: Incidents) -> int | None:
    """MTTR: recovered down time per recovery (truncating); ``None`` without recoveries."""
    if not incidents.recoveries:
        return None
    return incidents.recovered_down_time // incidents.recoveries


def mean_time_between_interruptions(times: TimeSplit, incidents: Incidents) -> int | None:
    """MTBI: up time per interruption (truncating); ``None`` without interruptions."""
    return times.up // incidents.interruptions if incidents.interruptions else None


def mean_provisioning_duration(
    states: Mapping[ProvisioningState, int], provisioned_duration: int
) -> int | None:
    """Mean provisioning time of the resources that came up; ``None`` if none did."""
    succeeded = states.get(ProvisioningState.SUCCESS, 0)
    return provisioned_duration // succeeded if succeeded else None


@dataclass(frozen=True, slots=True)
class ResourceAvailability:
    """The figures of one resource over the window."""

    resource: Resource
    start: int
    """Start of the span: the later of ``since`` and the first event."""
    end: int
    """End of the span: ``now``, or the retirement for an archived resource."""
    state: BandState
    """The state at ``end`` (the last band's, even when it is not in the window)."""
    bands: tuple[Band, ...]
    times: TimeSplit
    incidents: Incidents
    provisioning_duration: int
    provisioning_state: ProvisioningState

    @property
    def availability(self) -> float | None:
        return self.times.availability

    @property
    def mttr(self) -> int | None:
        return mean_time_to_recover(self.incidents)

    @property
    def mtbi(self) -> int | None:
        return mean_time_between_interruptions(self.times, self.incidents)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """The figures of every resource of one kind, accelerator and topology."""

    kind: Kind
    accelerator: str
    topology: str
    resources: int
    times: TimeSplit
    incidents: Incidents
    provisioning_states: Mapping[ProvisioningState, int]
    provisioned_duration: int
    """Sum of the provisioning durations of the resources that came up (``success``)."""
    cluster: str = ""
    """The cluster summed in a fleet report (``megamon.fleet``; ``*`` for every cluster);
    empty in a one-history report."""

    @property
    def availability(self) -> float | None:
        return self.times.availability

    @property
    def mttr(self) -> int | None:
        return mean_time_to_recover(self.incidents)

    @property
    def mtbi(self) -> int | None:
        return mean_time_between_interruptions(self.times, self.incidents)

    @property
    def mean_provisioning_duration(self) -> int | None:
        """Mean provisioning time of the resources that came up; ``None`` if none did."""
        return mean_provisioning_duration(self.provisioning_states, self.provisioned_duration)


@dataclass(frozen=True, slots=True)
class AvailabilityReport:
    """Every resource that overlaps the window, and their aggregates."""

    window: Window
    start: int
    """The window's effective start: ``since``, or the earliest first event (all history)."""
    resources: tuple[ResourceAvailability, ...]
    aggregates: tuple[Aggregate, ...]


def monotonic_prefix(timestamps: tuple[int, ...], now: int) -> list[int]:
    """Running-maximum timestamps of the events up to ``now`` (skewed clocks never go back)."""
    result: list[int] = []
    latest = timestamps[0] if timestamps else 0
    for ts in timestamps:
        latest = ts if ts > latest else latest
        if latest > now:
            break
        result.append(latest)
    return result


def _event_states(flags: bytes) -> tuple[list[BandState], int]:
    """The state of the band each event starts, and the index of the first up event
    (``len(flags)`` when there is none)."""
    states: list[BandState] = []
    first_up = len(flags)
    period_expected = False
    was_up = True  # so that a first down event starts a down period
    for i, f in enumerate(flags):
        if f & FLAG_UP:
            first_up = min(first_up, i)
            states.append(BandState.UP)
            was_up = True
            continue
        if was_up:  # a down period starts: its first event says whether it is expected
            period_expected = bool(f & FLAG_EXPECTED_DOWN)
            was_up = False
        if first_up == len(flags):
            states.append(BandState.FAILED if f & FLAG_FAILED else BandState.PROVISIONING)
        elif period_expected:
            states.append(BandState.EXPECTED_DOWN)
        else:
            states.append(BandState.FAILED if f & FLAG_FAILED else BandState.DOWN)
    return states, first_up


def _incidents(ts: list[int], flags: bytes, since: int | None) -> Incidents:
    """Interruptions and recoveries at ``t > since``; the full length of recovered outages."""
    interruptions = recoveries = recovered = 0
    was_up = bool(flags[0] & FLAG_UP)
    seen_up = was_up
    expected = bool(flags[0] & FLAG_EXPECTED_DOWN)
    period_start = ts[0]
    for i in range(1, len(ts)):
        is_up = bool(flags[i] & FLAG_UP)
        if is_up == was_up:
            continue
        t = ts[i]
        counted = since is None or t > since
        if is_up:
            if counted and seen_up and not expected:
                recoveries += 1
                recovered += t - period_start
            seen_up = True
        else:
            expected = bool(flags[i] & FLAG_EXPECTED_DOWN)
            if counted and not expected:
                interruptions += 1
        period_start, was_up = t, is_up
    return Incidents(interruptions, recoveries, recovered)


def _clipped(ts: list[int], states: list[BandState], start: int, end: int) -> list[Band]:
    """Each event's band, from it to the next event (or ``end``), clipped to
    ``[start, end]``, adjacent bands of one state merged. One pass and no object per event:
    a history may hold millions."""
    bands: list[Band] = []
    state: BandState | None = None
    lo = hi = 0
    last = len(ts) - 1
    for i in range(max(0, bisect_right(ts, start) - 1), last + 1):
        begin = ts[i] if ts[i] > start else start  # not max()/min(): this loop is the hot spot
        stop = ts[i + 1] if i < last else end
        stop = stop if stop < end else end
        if stop <= begin:
            continue
        if states[i] is state and begin == hi:
            hi = stop
            continue
        if state is not None:
            bands.append(Band(lo, hi, state))
        state, lo, hi = states[i], begin, stop
    if state is not None:
        bands.append(Band(lo, hi, state))
    return bands


def unobserved_gaps(
    observed: Iterable[tuple[int, int]], now: int, slack: int
) -> tuple[tuple[int, int], ...]:
    """The gaps between observed spans (sorted, disjoint), and after the last one when it
    ended more than ``slack`` before ``now`` (megamon stopped); before the first span there
    is no record either way, so no gap."""
    gaps: list[tuple[int, int]] = []
    last_end: int | None = None
    for start, end in sorted(observed):
        if last_end is not None and start > last_end:
            gaps.append((last_end, min(start, now)))
        last_end = end if last_end is None else max(last_end, end)
    if last_end is not None and now - last_end > slack:
        gaps.append((last_end, now))
    return tuple((s, e) for s, e in gaps if e > s)


def _carve(bands: list[Band], gaps: tuple[tuple[int, int], ...]) -> list[Band]:
    """``bands`` with the parts inside ``gaps`` replaced by unobserved bands."""
    if not gaps:
        return bands
    result: list[Band] = []
    for band in bands:
        cursor = band.start
        for gap_start, gap_end in gaps:
            lo, hi = max(gap_start, cursor), min(gap_end, band.end)
            if hi <= lo:
                continue
            if lo > cursor:
                result.append(Band(cursor, lo, band.state))
            result.append(Band(lo, hi, BandState.UNOBSERVED))
            cursor = hi
        if cursor < band.end:
            result.append(Band(cursor, band.end, band.state))
    merged: list[Band] = []
    for band in result:
        if merged and merged[-1].state is band.state and merged[-1].end == band.start:
            merged[-1] = Band(merged[-1].start, band.end, band.state)
        else:
            merged.append(band)
    return merged


def _split(bands: list[Band], first_up: int) -> TimeSplit:
    """Time per class; everything before ``first_up`` (ns) is provisioning, failed or not."""
    up = down = failed = expected = provisioning = unobserved = 0
    for band in bands:
        length = band.end - band.start
        if band.state is BandState.UNOBSERVED:
            unobserved += length
        elif band.start < first_up:
            provisioning += length
        elif band.state is BandState.UP:
            up += length
        elif band.state is BandState.EXPECTED_DOWN:
            expected += length
        else:
            down += length
            if band.state is BandState.FAILED:
                failed += length
    return TimeSplit(up, down, failed, expected, provisioning, unobserved)


def resource_availability(resource: Resource, window: Window) -> ResourceAvailability | None:
    """The figures of ``resource`` over ``window``; ``None`` when its lifetime misses it."""
    ts = monotonic_prefix(resource.record.timestamps, window.now)
    if not ts:
        return None
    end = window.now if resource.retired_at is None else min(resource.retired_at, window.now)
    end = max(end, ts[0])
    if window.since is not None and end <= window.since:
        return None
    flags = resource.record.flags[: len(ts)]
    start = ts[0] if window.since is None else max(ts[0], window.since)
    states, first_up = _event_states(flags)
    bands = _carve(_clipped(ts, states, start, end), resource.unobserved)
    first_up_at = ts[first_up] if first_up < len(ts) else end
    record = resource.record
    if len(ts) < len(record):
        record = EventRecord.trusted(record.timestamps[: len(ts)], flags)
    summary = summarize(record, end)
    return ResourceAvailability(
        resource=resource,
        start=start,
        end=end,
        state=states[-1],
        bands=tuple(bands),
        times=_split(bands, first_up_at),
        incidents=_incidents(ts, flags, window.since),
        provisioning_duration=summary.provisioning_duration,
        provisioning_state=summary.provisioning_state,
    )


def resource_order(
    kind: Kind, name: str, key: str, retired_at: int | None
) -> tuple[tuple[int, str], str, str, int]:
    """The report's order of resources: kind, name, key, retirement (live ones last)."""
    retired = retired_at if retired_at is not None else _LIVE_LAST
    return (_kind_rank(kind), name, key, retired)


def shape_order(kind: Kind, accelerator: str, topology: str) -> tuple[tuple[int, str], str, str]:
    """The report's order of aggregates: kind, then accelerator and topology."""
    return (_kind_rank(kind), accelerator, topology)


def _sort_key(
    figures: ResourceAvailability,
) -> tuple[str, tuple[tuple[int, str], str, str, int]]:
    """The cluster first (empty in a one-history report), then ``resource_order``."""
    r = figures.resource
    return (r.cluster, resource_order(r.kind, r.name, r.key, r.retired_at))


def aggregate(figures: Iterable[ResourceAvailability]) -> tuple[Aggregate, ...]:
    """Figures summed per (kind, accelerator, topology), sorted by kind then shape."""
    groups: dict[tuple[Kind, str, str], list[ResourceAvailability]] = {}
    for f in figures:
        r = f.resource
        groups.setdefault((r.kind, r.accelerator, r.topology), []).append(f)
    ordered = sorted(groups, key=lambda g: shape_order(*g))
    return tuple(aggregate_group(key, groups[key]) for key in ordered)


def aggregate_group(key: tuple[Kind, str, str], members: list[ResourceAvailability]) -> Aggregate:
    times, incidents = TimeSplit(), Incidents()
    states: dict[ProvisioningState, int] = {}
    provisioned = 0
    for f in members:
        times += f.times
        incidents += f.incidents
        states[f.provisioning_state] = states.get(f.provisioning_state, 0) + 1
        if f.provisioning_state is ProvisioningState.SUCCESS:
            provisioned += f.provisioning_duration
    kind, accelerator, topology = key
    return Aggregate(
        kind=kind,
        accelerator=accelerator,
        topology=topology,
        resources=len(members),
        times=times,
        incidents=incidents,
        provisioning_states=states,
        provisioned_duration=provisioned,
    )


def availability_report(resources: Iterable[Resource], window: Window) -> AvailabilityReport:
    """Figures of every resource that overlaps ``window``, sorted by cluster (the fleet
    page's resources name theirs), kind, name, key, and their aggregates (every cluster's
    resources of a shape together)."""
    figures = [f for r in resources if (f := resource_availability(r, window)) is not None]
    figures.sort(key=_sort_key)
    if window.since is not None:
        start = window.since
    else:
        start = min((f.start for f in figures), default=window.now)
    return AvailabilityReport(window, start, tuple(figures), aggregate(figures))
