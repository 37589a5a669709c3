"""Histograms of time to recover, time between interruptions and provisioning, from the
durable history (docs/metrics.md).

Derived from the event records, so they survive restarts and leader changes: a new leader
reads the same history and counts the same periods. Only closed periods count, so a
histogram never goes backwards. A resource that leaves the fleet keeps its periods counted:
its contribution stays in the tally when its key leaves the live records, and at start the
archived records are added once (``add_archived``).

The lead time of a ``maintenance`` interruption (how long before it megamon saw the
maintenance announced) is the exception: it needs the attributes the resource has as the
interruption begins, which the history keeps only as its latest; so it is counted as megamon
sees each such interruption begin (or, at start, still open), and kept from then on.

Queueing times (how long a Kueue Workload waited from its creation for quota and for
admission) are read from the objects, not the history: each resource's time to each stage is
counted once, the first time megamon observes the stage reached — at start, for every live
resource that has reached it — and kept from then on, as lead times are.

The tally is incremental: records are immutable and handed back unchanged while nothing
happens, so each cycle only resources whose record changed are re-counted (their old
contribution taken back, the new one added).

Every duration is kept as integer nanoseconds, and chip time as integer chip-nanoseconds
(nanoseconds × chips): sums of integers do not depend on the order they were added in, on
take-backs or on a start from the persisted parts, so the tally equals a recount of the
history exactly. They become float seconds only where they leave (``timestamps.seconds``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from megamon.domain import maintenance
from megamon.domain.distributions import (
    ANNOUNCED,
    MAINTENANCE_LEAD_TIME,
    NOT_ANNOUNCED,
    PROVISIONING,
    PROVISIONING_FAILED,
    PROVISIONING_SUCCESS,
    QUEUEING,
    TIME_BETWEEN_INTERRUPTIONS,
    TIME_TO_RECOVER,
    Histogram,
    SeriesKey,
    Shape,
)
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord, reason_of
from megamon.domain.interruptions import MAINTENANCE, UNKNOWN
from megamon.domain.observations import Attrs, NodePoolAttrs, Observation
from megamon.domain.timestamps import NANOS_PER_SECOND
from megamon.summary.summarizing import Extends, extends

Period = tuple[str, str, int]
"""(measure, reason or provisioning state, nanoseconds)."""


def _reason(flags: int) -> str:
    return reason_of(flags) or UNKNOWN


def record_periods(record: EventRecord) -> list[Period]:
    """Every closed period of a record that a histogram counts.

    Provisioning: first event to first up (``success``), or to the first failed event of a
    resource never up (``failed``). Then, after the first up: each up period ended by a down
    that is not expected (between interruptions, with that down's reason), and each down
    period begun by such a down and ended by an up (time to recover, same reason).
    """
    ts, flags = record.timestamps, record.flags
    if not ts:
        return []
    periods: list[Period] = []
    first_up = next((i for i, f in enumerate(flags) if f & FLAG_UP), None)
    if first_up is None:
        failed = next((i for i, f in enumerate(flags) if f & FLAG_FAILED), None)
        if failed is not None:
            periods.append((PROVISIONING, PROVISIONING_FAILED, _duration(ts[failed] - ts[0])))
        return periods
    periods.append((PROVISIONING, PROVISIONING_SUCCESS, _duration(ts[first_up] - ts[0])))
    up_since = ts[first_up]
    down: tuple[int, str] | None = None  # start and reason of an unexpected down period
    was_up = True
    for t, f in zip(ts[first_up + 1 :], flags[first_up + 1 :], strict=True):
        if f & FLAG_UP:
            if not was_up:
                if down is not None:
                    periods.append((TIME_TO_RECOVER, down[1], _duration(t - down[0])))
                up_since, down, was_up = t, None, True
            continue
        if was_up:
            was_up = False
            if not f & FLAG_EXPECTED_DOWN:
                reason = _reason(f)
                periods.append((TIME_BETWEEN_INTERRUPTIONS, reason, _duration(t - up_since)))
                down = (t, reason)
    return periods


@dataclass(slots=True)
class PeriodFold:
    """``record_periods`` as a fold: the scan kept where it stopped, so that a record that
    gained events costs its new events only. ``record_periods`` stays the definition: the
    provisioning period a fold holds, followed by every closed period its folds returned,
    equals it for every record, folded whole or piece by piece
    (``test/summary/test_folds.py``).

    The provisioning period is kept apart from the closed ones after the first up: it is the
    one period a later event can change (failed, then up after all: ``success``). The closed
    periods are handed out, not kept: the histograms hold them."""

    count: int = 0
    first: int = 0
    failed: bool = False
    """A failed event came before the first up."""
    up_seen: bool = False
    provisioning: Period | None = None
    up_since: int = 0
    down: tuple[int, str] | None = None
    was_up: bool = True

    def fold(self, record: EventRecord) -> list[Period]:
        """Take in the events of ``record`` after the ``count`` already folded (``record``
        extends the one folded before; the caller checks); the periods they closed."""
        ts, flags = record.timestamps, record.flags
        i, n = self.count, len(ts)
        closed: list[Period] = []
        if i >= n:
            return closed
        if i == 0:
            self.first = ts[0]
        while i < n and not self.up_seen:
            f = flags[i]
            if f & FLAG_UP:
                self.up_seen = True
                ns = _duration(ts[i] - self.first)
                self.provisioning = (PROVISIONING, PROVISIONING_SUCCESS, ns)
                self.up_since, self.down, self.was_up = ts[i], None, True
            elif not self.failed and f & FLAG_FAILED:
                self.failed = True
                ns = _duration(ts[i] - self.first)
                self.provisioning = (PROVISIONING, PROVISIONING_FAILED, ns)
            i += 1
        up_since, down, was_up = self.up_since, self.down, self.was_up
        for j in range(i, n):
            t, f = ts[j], flags[j]
            if f & FLAG_UP:
                if not was_up:
                    if down is not None:
                        closed.append((TIME_TO_RECOVER, down[1], _duration(t - down[0])))
                    up_since, down, was_up = t, None, True
                continue
            if was_up:
                was_up = False
                if not f & FLAG_EXPECTED_DOWN:
                    reason = _reason(f)
                    closed.append((TIME_BETWEEN_INTERRUPTIONS, reason, _duration(t - up_since)))
                    down = (t, reason)
        self.up_since, self.down, self.was_up = up_since, down, was_up
        self.count = n
        return closed


def open_interruption(record: EventRecord) -> tuple[int, str] | None:
    """(start, reason) of the interruption a record is in now, ``None`` when it is up, never
    was, or is down as expected."""
    ts, flags = record.timestamps, record.flags
    if not ts or flags[-1] & FLAG_UP:
        return None
    start = len(flags) - 1
    while start > 0 and not flags[start - 1] & FLAG_UP:
        start -= 1
    if start == 0 or flags[start] & FLAG_EXPECTED_DOWN:
        return None  # never up yet, or a planned down
    return ts[start], _reason(flags[start])


def lead_period(opened: tuple[int, str], attrs: Attrs | None) -> Period | None:
    """The lead time of an interruption that began at ``opened`` (start, reason), when it is
    a ``maintenance`` one: how long before it megamon saw it announced on the resource's
    nodes (``NodePoolAttrs``), else 0 s not announced; None for any other reason."""
    start, reason = opened
    if reason != MAINTENANCE:
        return None
    lead = None
    if isinstance(attrs, NodePoolAttrs):
        lead = maintenance.lead_time_ns(
            scheduled_s=attrs.scheduled_maintenance,
            announced_ns=attrs.maintenance_announced * NANOS_PER_SECOND,
            down_ns=start,
        )
    if lead is None:
        return (MAINTENANCE_LEAD_TIME, NOT_ANNOUNCED, 0)
    return (MAINTENANCE_LEAD_TIME, ANNOUNCED, lead)


def queueing_periods(marks: Iterable[tuple[str, int, int]]) -> list[Period]:
    """The queueing times of a resource's stages: (stage, created, reached) → nanoseconds
    from its creation to the stage (0 when the clocks disagree)."""
    return [(QUEUEING, stage, _duration(reached - created)) for stage, created, reached in marks]


def _duration(ns: int) -> int:
    """A period's length: clocks that disagree give 0, never a negative time."""
    return max(ns, 0)


def shape_of(attrs: Attrs) -> Shape:
    return Shape(attrs.tpu_accelerator, attrs.tpu_topology, attrs.spot)


def shape_of_archived(attrs: Mapping[str, object]) -> Shape:
    """The shape from an archive entry's attributes (the report JSON's keys)."""
    accelerator, topology = attrs.get("tpuAccelerator"), attrs.get("tpuTopology")
    return Shape(
        accelerator if isinstance(accelerator, str) else "",
        topology if isinstance(topology, str) else "",
        attrs.get("spot") is True,
    )


@dataclass
class Counted:
    record: EventRecord
    attrs: Attrs | None
    shape: Shape
    fold: PeriodFold
    """Where the scan of ``record``'s periods stopped (they are in the histograms)."""
    chips: int
    open: tuple[int, str] | None
    contribution: Contribution = field(default_factory=dict)
    """What its periods add to the histograms, per (measure, label), and chip-nanoseconds
    down (``TIME_TO_RECOVER`` × chips) per label: what a start-up from the persisted summary
    state adds back without reading the history (``summary.foldstate``)."""
    seeded: bool = False
    """Taken from the persisted state, its attributes not yet compared."""


Contribution = dict[tuple[str, str], tuple[Histogram, list[int]]]
"""Per (measure, label): the histogram of one resource's periods and its chip-nanoseconds
(one integer in a list, added to in place)."""


ChipKey = tuple[str, Shape, str]
"""(kind, shape, reason) of chip-nanoseconds down."""


@dataclass
class DistributionTally:
    """Every kind's histograms, kept from cycle to cycle (one per report assembly, built in
    ``megamon.app``, never in a module)."""

    histograms: dict[SeriesKey, Histogram] = field(default_factory=dict)
    chip_ns: dict[ChipKey, int] = field(default_factory=dict)
    """Chip-nanoseconds down in closed interruptions (time to recover × chips), by reason."""
    lead_times: dict[SeriesKey, Histogram] = field(default_factory=dict)
    """Maintenance lead times, counted as interruptions begin (``lead_period``): kept apart
    from ``histograms``, which a recount of the history rebuilds exactly."""
    _counted: dict[str, dict[str, Counted]] = field(default_factory=dict)
    """Per kind, per key: what each live record contributes now."""
    _open: dict[str, dict[str, Counted]] = field(default_factory=dict)
    """The ``_counted`` with an interruption going on and chips: the ones ``chips_down``
    adds up to ``now`` (a few of a large fleet, every report)."""
    queueing: dict[SeriesKey, Histogram] = field(default_factory=dict)
    """Queueing times, each resource's stage counted once (``count_queueing``)."""
    _queued: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)
    """Per kind, per key of a live resource: the stages already counted."""

    def _apply(
        self,
        kind: str,
        shape: Shape,
        periods: Iterable[Period],
        times: int,
        chips: int = 0,
        *,
        contribution: Contribution | None = None,
    ) -> None:
        for measure, label, ns in periods:
            key = SeriesKey(measure, kind, shape, label)
            histogram = self.histograms.get(key)
            if histogram is None:
                histogram = self.histograms[key] = Histogram()
            histogram.add(ns, times)
            lost = ns * chips * times if measure == TIME_TO_RECOVER else 0
            if lost:
                self._add_chip_ns((kind, shape, label), lost)
            if contribution is not None:
                found = contribution.get((measure, label))
                if found is None:
                    found = contribution[(measure, label)] = (Histogram(), [0])
                found[0].add(ns, times)
                found[1][0] += lost

    def _add_chip_ns(self, chip_key: ChipKey, lost: int) -> None:
        """Add (or, negative, take back) chip-nanoseconds down; a key back at zero is
        dropped, so a tally that took a resource back holds what a recount would."""
        total = self.chip_ns.get(chip_key, 0) + lost
        if total:
            self.chip_ns[chip_key] = total
        else:
            self.chip_ns.pop(chip_key, None)

    def _merge(
        self, kind: str, shape: Shape, contribution: Contribution, chips: int, times: int = 1
    ) -> None:
        """Add one resource's contribution to the histograms and the chip time down (a
        persisted one, at start-up), or take it back (``times`` -1, when it is recounted)."""
        for (measure, label), (part, lost) in contribution.items():
            key = SeriesKey(measure, kind, shape, label)
            histogram = self.histograms.get(key)
            if histogram is None:
                histogram = self.histograms[key] = Histogram()
            histogram.merge(part, times)
            if lost[0] and chips:
                self._add_chip_ns((kind, shape, label), lost[0] * times)

    def chips_down(self, now: int) -> dict[ChipKey, int]:
        """Chip-nanoseconds down by kind, shape and reason: closed interruptions (retired
        resources' included) plus the ongoing ones of live resources up to ``now``."""
        total = dict(self.chip_ns)
        for kind, open_kind in self._open.items():
            for counted in open_kind.values():
                if counted.open is not None and counted.chips:
                    start, reason = counted.open
                    key = (kind, counted.shape, reason)
                    total[key] = total.get(key, 0) + _duration(now - start) * counted.chips
        return total

    def _count(self, kind: str, key: str, counted: Counted | None) -> None:
        """``counted`` is what ``key`` contributes now (``None``: it is no longer live)."""
        counted_kind = self._counted.setdefault(kind, {})
        open_kind = self._open.setdefault(kind, {})
        if counted is None:
            counted_kind.pop(key, None)
        else:
            counted_kind[key] = counted
        if counted is not None and counted.open is not None and counted.chips:
            open_kind[key] = counted
        else:
            open_kind.pop(key, None)

    def chips_down_rows(self, now: int) -> tuple[tuple[str, Shape, str, int], ...]:
        """``chips_down`` as the report holds it: (kind, shape, reason, chip-nanoseconds)
        rows in a stable order."""
        found = self.chips_down(now).items()
        ordered = sorted(found, key=lambda item: (item[0][0], str(item[0][1:])))
        return tuple((kind, shape, reason, ns) for (kind, shape, reason), ns in ordered)

    def update(
        self,
        kind: str,
        records: Mapping[str, EventRecord],
        attrs: Mapping[str, Attrs],
        extended: Extends = extends,
    ) -> None:
        """Count the live records of ``kind``; a key no longer live keeps its periods.

        Records and attrs are handed back as the same objects while nothing changes, so an
        unchanged resource costs two identity checks; a record that gained events costs only
        those (its fold takes them in, and only the periods they close are counted); any
        other change costs the periods that differ from what it contributed before."""
        counted_kind = self._counted.setdefault(kind, {})
        for key, record in records.items():
            found = counted_kind.get(key)
            obs_attrs = attrs.get(key)
            if (
                found is not None
                and found.record is record
                and found.attrs is obs_attrs
                and not found.seeded
            ):
                continue
            shape = shape_of(obs_attrs) if obs_attrs is not None else Shape()
            chips = obs_attrs.tpu_chip_count if obs_attrs is not None else 0
            contribution = found.contribution if found is not None else {}
            fold, contribution = self._recount(
                kind, found, record, shape, chips, contribution=contribution, extended=extended
            )
            opened = open_interruption(record)
            if opened is not None and (found is None or found.open != opened):
                lead = lead_period(opened, obs_attrs)
                if lead is not None:  # counted once, as the interruption begins
                    measure, label, ns = lead
                    series = SeriesKey(measure, kind, shape, label)
                    self.lead_times.setdefault(series, Histogram()).add(ns)
            counted = Counted(record, obs_attrs, shape, fold, chips, opened, contribution)
            self._count(kind, key, counted)
        if len(counted_kind) > len(records):
            for gone in [k for k in counted_kind if k not in records]:
                self._count(kind, gone, None)  # retired: its periods stay in the histograms

    def count_queueing(self, kind: str, observations: Mapping[str, Observation]) -> None:
        """Count the queueing time of each stage a live resource of ``kind`` reached that
        was not counted yet (a stage reached again, after an eviction, is not counted again);
        a resource gone takes its memo with it, its times staying counted."""
        counted_kind = self._queued.setdefault(kind, {})
        for key, observation in observations.items():
            if not observation.queued:
                continue
            done = counted_kind.get(key, frozenset())
            new = [mark for mark in observation.queued if mark[0] not in done]
            if not new:
                continue
            shape = shape_of(observation.attrs)
            for measure, stage, ns in queueing_periods(new):
                series = SeriesKey(measure, kind, shape, stage)
                self.queueing.setdefault(series, Histogram()).add(ns)
            counted_kind[key] = done | {stage for stage, _, _ in new}
        for gone in [k for k in counted_kind if k not in observations]:
            del counted_kind[gone]

    def seed(self, kind: str, key: str, counted: Counted) -> None:
        """Count ``counted`` (a fold of ``counted.record`` and its contribution, from the
        persisted summary state) for ``key``, without reading its history. Its ``open`` is
        left ``None``, so the next ``update`` counts the lead time of an interruption still
        open, as a start from the history does."""
        self._merge(kind, counted.shape, counted.contribution, counted.chips)
        self._count(kind, key, counted)

    def counted(self, kind: str) -> Mapping[str, Counted]:
        """What each live record of ``kind`` contributes now (for the persisted state)."""
        return self._counted.get(kind, {})

    def _recount(
        self,
        kind: str,
        found: Counted | None,
        record: EventRecord,
        shape: Shape,
        chips: int,
        *,
        contribution: Contribution,
        extended: Extends = extends,
    ) -> tuple[PeriodFold, Contribution]:
        """The fold of ``record`` and its contribution, its periods counted in place of
        ``found``'s."""
        if (
            found is not None
            and found.fold.count == len(found.record)
            and extended(record, found.record)
        ):
            fold = found.fold
            if found.shape == shape and found.chips == chips:
                if record is not found.record:
                    provisioning = fold.provisioning
                    closed = fold.fold(record)
                    if fold.provisioning != provisioning:
                        if provisioning is not None:
                            self._apply(
                                kind, shape, (provisioning,), -1, chips, contribution=contribution
                            )
                        if fold.provisioning is not None:
                            self._apply(
                                kind,
                                shape,
                                (fold.provisioning,),
                                1,
                                chips,
                                contribution=contribution,
                            )
                    self._apply(kind, shape, closed, 1, chips, contribution=contribution)
                return fold, contribution
            # counted under another shape or chip count (rare): every period moves
            self._merge(kind, found.shape, found.contribution, found.chips, -1)
            fold.fold(record)
            fresh: Contribution = {}
            self._apply(kind, shape, record_periods(record), 1, chips, contribution=fresh)
            return fold, fresh
        fold = PeriodFold()
        closed = fold.fold(record)
        periods = [fold.provisioning, *closed] if fold.provisioning is not None else closed
        if found is not None:
            self._merge(kind, found.shape, found.contribution, found.chips, -1)
        fresh = {}
        self._apply(kind, shape, periods, 1, chips, contribution=fresh)
        return fold, fresh

    def add_archived(self, kind: str, record: EventRecord, attrs: Mapping[str, object]) -> None:
        """A retired resource's history (from the archive, at start): counted once."""
        chips = attrs.get("tpuChipCount")
        count = chips if type(chips) is int and chips > 0 else 0
        self._apply(kind, shape_of_archived(attrs), record_periods(record), 1, count)

    def frozen(self) -> tuple[tuple[SeriesKey, Histogram], ...]:
        """Copies of every non-empty histogram, for a report (which outlives this cycle)."""
        return tuple(
            (key, Histogram(list(h.counts), h.total_ns, h.count)) for key, h in self.series()
        )

    def series(self) -> Iterator[tuple[SeriesKey, Histogram]]:
        """Every non-empty histogram, in a stable order."""
        every = {**self.histograms, **self.lead_times, **self.queueing}
        for key in sorted(every, key=_order):
            histogram = every[key]
            if histogram.count > 0:
                yield key, histogram


def _order(key: SeriesKey) -> tuple[str, str, str, str, bool, str]:
    shape = key.shape
    return (key.kind, key.measure, shape.accelerator, shape.topology, shape.spot, key.label)
