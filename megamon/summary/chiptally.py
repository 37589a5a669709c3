"""Chip availability per kind and accelerator, kept from cycle to cycle: the figure
``megamon report`` prints (``summary.chips``) at every report's ``now``, for the metrics.

The definition is ``summary.availability``'s over all history (``Window(now)``, no ``since``),
weighted by chips as ``summary.chips`` weighs it: Σ chips × up / Σ chips × (up + down), over
every live record and every archived resource of the kind. Expected-down, provisioning and
unobserved time are not in the denominator, so a completed or suspended JobSet never lowers
it; a group with neither up nor down time has no ratio at all (the report's ``-``), not 0.

From scratch, that costs O(events in the fleet) every cycle. It need not: records are
immutable, and a record's figures at ``now`` are its figures at its last event plus the band
after it, which grows in one class only (up, down, or neither) but for the parts megamon did
not observe. Both the settled figures and the class of that open band are asked of
``resource_availability`` itself (the class: one nanosecond past the last event), so the
definition stays in one place and the sum is the report's to the nanosecond. An archived
resource's figures stop changing once ``now`` and the observed coverage reach its
retirement; they are then kept as sums, not as records.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    ArchiveEntry,
    EventRecord,
)
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.summary.availability import BandState, Resource, Window, resource_availability
from megamon.summary.chips import CHIPS_ATTR, chips_of
from megamon.summary.summarizing import Extends, extends

Span = tuple[int, int]
ChipRow = tuple[str, str, float]
"""(kind, accelerator, chip availability ratio), as the report holds it."""
Group = tuple[Kind, str]
"""(kind, accelerator): what the ratio is per."""


class Growth(Enum):
    """Where the time after a record's last event goes."""

    UP = "up"
    DOWN = "down"
    NEITHER = "neither"
    """Expected-down or provisioning: out of the ratio."""


def gaps_before(gaps: Iterable[Span], t: int) -> tuple[Span, ...]:
    """The unobserved gaps before ``t``, clipped to it: all that figures up to ``t`` read."""
    return tuple((start, end if end < t else t) for start, end in gaps if start < t)


def unobserved_within(gaps: Iterable[Span], start: int, end: int) -> int:
    """Nanoseconds of ``[start, end)`` inside the gaps (sorted, disjoint)."""
    total = 0
    for gap_start, gap_end in gaps:
        lo, hi = max(gap_start, start), min(gap_end, end)
        if hi > lo:
            total += hi - lo
    return total


@dataclass(slots=True)
class AvailabilityFold:
    """The up and down time of ``resource_availability`` over all history, at a record's
    last event, as a fold: kept where it stopped, so that a record that gained events costs
    its new events only. ``resource_availability`` stays the definition: a fold equals its
    figures at the last event (and the class of the band after it, ``growth``) for every
    record and every set of gaps, folded whole or piece by piece, as long as the gaps before
    the last event folded do not change (``ChipTally`` folds afresh when they do;
    ``test/summary/test_folds.py``).

    It follows the definition's bands exactly: each event's band runs to the next event's
    (running-maximum) timestamp; adjacent bands of one state are one band (a zero-length
    band between them does not part them), and the unobserved gaps cut it into pieces; a
    piece counts as provisioning when it starts before the first up, else by its state."""

    count: int = 0
    latest: int = 0
    """The running maximum of the timestamps folded (the last band's start)."""
    first_up_at: int | None = None
    was_up: bool = True
    expected: bool = False
    """The current down period began expected."""
    state: BandState = BandState.UP
    """The state of the band the last event began."""
    merged: BandState | None = None
    """The state of the band (adjacent bands of one state merged) ending at ``latest``."""
    piece: int = 0
    """Where the piece of that band ending at ``latest`` starts (after the last gap)."""
    up: int = 0
    down: int = 0

    def fold(self, record: EventRecord, gaps: tuple[Span, ...]) -> AvailabilityFold:
        """Take in the events of ``record`` after the ``count`` already folded (``record``
        extends the one folded before; the caller checks)."""
        ts, flags = record.timestamps, record.flags
        i, n = self.count, len(ts)
        if i >= n:
            return self
        if i == 0:
            self.latest = ts[0]
            self.state = self._state_of(flags[0], ts[0])
            i = 1
        for j in range(i, n):
            stamp = ts[j]
            if stamp > self.latest:
                self._band(self.latest, stamp, gaps)
                self.latest = stamp
            self.state = self._state_of(flags[j], self.latest)
        self.count = n
        return self

    def _state_of(self, f: int, at: int) -> BandState:
        """The state of the band an event begins (``availability._event_states``)."""
        if f & FLAG_UP:
            if self.first_up_at is None:
                self.first_up_at = at
            self.was_up = True
            return BandState.UP
        if self.was_up:
            self.expected = bool(f & FLAG_EXPECTED_DOWN)
            self.was_up = False
        if self.first_up_at is None:
            return BandState.FAILED if f & FLAG_FAILED else BandState.PROVISIONING
        if self.expected:
            return BandState.EXPECTED_DOWN
        return BandState.FAILED if f & FLAG_FAILED else BandState.DOWN

    def _band(self, start: int, end: int, gaps: tuple[Span, ...]) -> None:
        """Account the band ``[start, end)`` of the last event's state."""
        if self.merged is not self.state:
            self.merged, self.piece = self.state, start
        cursor = start
        first = max(0, bisect_right(gaps, (start, start)) - 1)
        for gap_start, gap_end in gaps[first:]:
            if gap_start >= end:
                break
            if gap_end <= cursor:
                continue
            if gap_start > cursor:
                self._count(cursor, gap_start)
            cursor = gap_end if gap_end < end else end
            self.piece = max(self.piece, gap_end)
        if cursor < end:
            self._count(cursor, end)

    def _count(self, start: int, end: int) -> None:
        """Observed time ``[start, end)`` of the current piece, by its class."""
        if self.first_up_at is None or self.piece < self.first_up_at:
            return  # provisioning
        if self.merged is BandState.UP:
            self.up += end - start
        elif self.merged is not BandState.EXPECTED_DOWN:
            self.down += end - start

    def growth(self) -> Growth:
        """The class of the band after the last event (``_growth``)."""
        if self.first_up_at is None or self.state is BandState.EXPECTED_DOWN:
            return Growth.NEITHER
        return Growth.UP if self.state is BandState.UP else Growth.DOWN


@dataclass(frozen=True, slots=True)
class _Settled:
    """One live record's figures up to its last event, and how they grow after it."""

    record: EventRecord
    attrs: Attrs | None
    """The attrs it was settled with (compared by identity)."""
    accelerator: str
    chips: int
    gaps: tuple[Span, ...]
    """The gaps before ``last`` it was settled with."""
    up: int
    down: int
    last: int
    growth: Growth
    fold: AvailabilityFold
    """Where the figures stopped (``up``, ``down`` and ``last`` are its, at settling)."""

    def at(self, now: int, gaps: tuple[Span, ...]) -> tuple[int, int]:
        """Up and down time (ns) at ``now``."""
        grown = now - self.last
        if grown > 0 and gaps and gaps[-1][1] > self.last:
            grown -= unobserved_within(gaps, self.last, now)
        if self.growth is Growth.UP:
            return self.up + grown, self.down
        if self.growth is Growth.DOWN:
            return self.up, self.down + grown
        return self.up, self.down


def _attrs_mapping(attrs: Attrs | None) -> Mapping[str, object]:
    """The attrs as the history records them (what ``megamon report`` reads)."""
    return attrs.model_dump(by_alias=True) if attrs is not None else {}


def _growth(resource: Resource, last: int) -> Growth:
    """The class of the band after the last event, as the definition gives it: the figures
    of the one nanosecond after it."""
    probe = resource_availability(resource, Window(now=last + 1, since=last))
    if probe is not None and probe.times.up:
        return Growth.UP
    if probe is not None and probe.times.down:
        return Growth.DOWN
    return Growth.NEITHER


def _settle(
    kind: Kind,
    key: str,
    record: EventRecord,
    attrs: Attrs | None,
    gaps: tuple[Span, ...],
    *,
    fold: AvailabilityFold | None = None,
    shape: tuple[str, int] | None = None,
) -> _Settled | None:
    """The record's figures at its last event (``None`` without events), ``fold`` (of a
    record this one extends, under the same gaps before its last event) taken on.
    ``shape``: the accelerator and chips of ``attrs``, when already known (settled with
    the same attrs object before)."""
    if not record.timestamps:
        return None
    fold = (fold or AvailabilityFold()).fold(record, gaps)
    last = fold.latest
    before = gaps_before(gaps, last)
    if shape is None:
        mapping = _attrs_mapping(attrs)
        value = mapping.get(CHIPS_ATTR)
        chips = value if type(value) is int and value > 0 else 0
        accelerator = Resource(kind, key, record, mapping).accelerator
    else:
        accelerator, chips = shape
    growth = fold.growth() if chips else Growth.NEITHER
    return _Settled(
        record, attrs, accelerator, chips, before, fold.up, fold.down, last, growth, fold
    )


@dataclass(slots=True)
class _GroupSums:
    """The live records of one kind and accelerator, summed so that their chip-weighted
    figures at any ``now`` past every last event and every gap cost O(1): Σ chips × up and
    Σ chips × down at the last events, and for the records whose open band grows (up or
    down), Σ chips and Σ chips × (last event + the unobserved time after it). Integers, so
    the sums are those of the records' own ``_Settled.at``, to the nanosecond."""

    up: int = 0
    down: int = 0
    up_chips: int = 0
    up_since: int = 0
    down_chips: int = 0
    down_since: int = 0

    def count(self, entry: _Settled, gaps: tuple[Span, ...], sign: int) -> None:
        """Add ``entry`` (``sign`` 1) or take it back (-1), under the kind's ``gaps``."""
        chips = entry.chips * sign
        self.up += chips * entry.up
        self.down += chips * entry.down
        if entry.growth is Growth.NEITHER:
            return
        end = gaps[-1][1] if gaps else entry.last
        since = chips * (entry.last + unobserved_within(gaps, entry.last, end))
        if entry.growth is Growth.UP:
            self.up_chips += chips
            self.up_since += since
        else:
            self.down_chips += chips
            self.down_since += since

    def at(self, now: int) -> tuple[int, int]:
        """Σ chips × up and Σ chips × down at ``now`` (past every last event and gap)."""
        return (
            self.up + self.up_chips * now - self.up_since,
            self.down + self.down_chips * now - self.down_since,
        )


@dataclass(slots=True)
class _KindSums:
    """``_GroupSums`` of one kind's live records by accelerator, and the latest last event
    among them (an upper bound: a record that left may have set it)."""

    groups: dict[str, _GroupSums] = field(default_factory=dict)
    latest: int = -(1 << 64)

    def count(self, entry: _Settled | None, gaps: tuple[Span, ...], sign: int) -> None:
        if entry is None or not entry.chips:
            return
        group = self.groups.get(entry.accelerator)
        if group is None:
            group = self.groups[entry.accelerator] = _GroupSums()
        group.count(entry, gaps, sign)
        self.latest = max(self.latest, entry.last)

    def hold_at(self, now: int, gaps: tuple[Span, ...]) -> bool:
        """Whether ``at(now)`` is every record's: ``now`` past every last event and gap."""
        return now >= self.latest and (not gaps or now >= gaps[-1][1])


def _add(sums: dict[Group, list[int]], group: Group, chips: int, up: int, down: int) -> None:
    found = sums.get(group)
    if found is None:
        found = sums[group] = [0, 0]
    found[0] += chips * up
    found[1] += chips * down


@dataclass
class ChipTally:
    """Every kind's chip-weighted up and down time, kept from cycle to cycle (one per report
    assembly, built in ``megamon.app``, never in a module)."""

    _live: dict[Kind, dict[str, _Settled | None]] = field(default_factory=dict)
    _gaps: dict[Kind, tuple[Span, ...]] = field(default_factory=dict)
    _archived: dict[Group, list[int]] = field(default_factory=dict)
    """Chip-nanoseconds up and down of the archived resources whose figures are settled."""
    _unsettled: list[tuple[Kind, ArchiveEntry]] = field(default_factory=list)
    """Archived resources retired after ``now`` or after the coverage: figured each cycle."""
    _sums: dict[Kind, _KindSums] = field(default_factory=dict)
    """The live records of each kind summed (``_GroupSums``), kept as they change; a kind
    missing is summed afresh when next read (its gaps changed, or folds were seeded)."""

    def update(
        self,
        kind: Kind,
        records: Mapping[str, EventRecord],
        attrs: Mapping[str, Attrs],
        gaps: tuple[Span, ...],
        extended: Extends = extends,
    ) -> None:
        """Settle the live records of ``kind`` that changed and forget the keys that left
        (retired: their figures come from their archive entries, ``add_archived``).

        Records and attrs are handed back as the same objects while nothing changes, so an
        unchanged resource costs two identity checks; new gaps resettle only the records
        whose figures they reach."""
        memo = self._live.setdefault(kind, {})
        if gaps != self._gaps.get(kind, ()):
            for key in [k for k, e in memo.items() if e and gaps_before(gaps, e.last) != e.gaps]:
                del memo[key]
            self._sums.pop(kind, None)  # every record's unobserved time after it changed
        self._gaps[kind] = gaps
        sums = self._sums.get(kind)
        for key, record in records.items():
            entry = memo.get(key)
            obs_attrs = attrs.get(key)
            if entry is not None and entry.record is record and entry.attrs is obs_attrs:
                continue
            fold = None
            if (
                entry is not None
                and entry.fold.count == len(entry.record)
                and extended(record, entry.record)
            ):
                fold = entry.fold
            shape = None
            if entry is not None and entry.attrs is obs_attrs and obs_attrs is not None:
                shape = (entry.accelerator, entry.chips)
            settled = memo[key] = _settle(
                kind, key, record, obs_attrs, gaps, fold=fold, shape=shape
            )
            if sums is not None:
                sums.count(entry, gaps, -1)
                sums.count(settled, gaps, 1)
        if len(memo) > len(records):
            for key in [k for k in memo if k not in records]:
                gone = memo.pop(key)
                if sums is not None:
                    sums.count(gone, gaps, -1)

    def folds(self, kind: Kind) -> dict[str, tuple[EventRecord, AvailabilityFold]]:
        """Every live record of ``kind`` settled, with its fold (the persisted state)."""
        memo = self._live.get(kind, {})
        return {key: (e.record, e.fold) for key, e in memo.items() if e is not None}

    def gaps(self, kind: Kind) -> tuple[Span, ...]:
        """The gaps the folds of ``kind`` were made under."""
        return self._gaps.get(kind, ())

    def seed(
        self,
        kind: Kind,
        key: str,
        record: EventRecord,
        fold: AvailabilityFold,
        gaps: tuple[Span, ...],
    ) -> None:
        """Take ``fold`` (of ``record``, made under ``gaps``) as ``key``'s settled figures,
        from the persisted state; the next ``update`` folds it on and takes the attributes
        in (or, when the gaps before its last event changed, folds it afresh)."""
        last = fold.latest
        before = gaps_before(gaps, last)
        growth = fold.growth()
        entry = _Settled(record, None, "", 0, before, fold.up, fold.down, last, growth, fold)
        self._live.setdefault(kind, {})[key] = entry
        self._gaps[kind] = gaps
        self._sums.pop(kind, None)

    def add_archived(self, kind: Kind, entry: ArchiveEntry) -> None:
        """A retired resource's history (one archive entry), counted from the next rows."""
        self._unsettled.append((kind, entry))

    def drop_archived(self) -> None:
        """Forget every archived resource (the archive is to be read again)."""
        self._archived.clear()
        self._unsettled.clear()

    def rows(self, now: int, covered: Mapping[Kind, int | None]) -> tuple[ChipRow, ...]:
        """The chip availability ratio per kind and accelerator at ``now``, in a stable
        order; a group with neither up nor down time has none. ``covered``: the end of each
        kind's observed coverage (``None``: none recorded), after which gaps may still
        appear."""
        sums = {group: list(values) for group, values in self._archived.items()}
        for kind in self._live:
            kind_sums = self._kind_sums(kind)
            if kind_sums.hold_at(now, self._gaps[kind]):
                for accelerator, group in kind_sums.groups.items():
                    _add(sums, (kind, accelerator), 1, *group.at(now))
            else:
                self._add_each(sums, kind, now)
        self._unsettled = [
            (kind, entry)
            for kind, entry in self._unsettled
            if not self._add_archived_now(sums, kind, entry, now, covered.get(kind))
        ]
        ordered = sorted(sums.items(), key=lambda item: (item[0][0].value, item[0][1]))
        return tuple(
            (kind.value, accelerator, up / (up + down))
            for (kind, accelerator), (up, down) in ordered
            if up + down > 0
        )

    def _kind_sums(self, kind: Kind) -> _KindSums:
        """The kept sums of ``kind``'s live records, summed afresh when missing."""
        found = self._sums.get(kind)
        if found is None:
            found = self._sums[kind] = _KindSums()
            gaps = self._gaps[kind]
            for entry in self._live[kind].values():
                found.count(entry, gaps, 1)
        return found

    def _add_each(self, sums: dict[Group, list[int]], kind: Kind, now: int) -> None:
        """Add the figures of ``kind``'s live records at ``now`` record by record: the
        definition the kept sums follow, for a ``now`` they do not hold at."""
        gaps = self._gaps[kind]
        for entry in self._live[kind].values():
            if entry is not None and entry.chips:
                group = (kind, entry.accelerator)
                if now >= entry.last:
                    _add(sums, group, entry.chips, *entry.at(now, gaps))
                else:  # events after ``now`` (a skewed clock): figured afresh
                    self._add_live_now(sums, kind, entry, gaps, now)

    def _add_live_now(
        self,
        sums: dict[Group, list[int]],
        kind: Kind,
        entry: _Settled,
        gaps: tuple[Span, ...],
        now: int,
    ) -> None:
        resource = Resource(kind, "", entry.record, _attrs_mapping(entry.attrs), unobserved=gaps)
        figures = resource_availability(resource, Window(now=now))
        if figures is not None:
            _add(sums, (kind, entry.accelerator), entry.chips, figures.times.up, figures.times.down)

    def _add_archived_now(
        self,
        sums: dict[Group, list[int]],
        kind: Kind,
        entry: ArchiveEntry,
        now: int,
        covered: int | None,
    ) -> bool:
        """Add an archived resource's figures at ``now``; ``True`` when they are settled
        (kept as sums from now on): retired by ``now``, and no gap can still appear before
        its retirement (coverage reaches it, or there is none, so none ever will)."""
        if not entry.record.timestamps:
            return True  # nothing to count, ever
        gaps = self._gaps.get(kind, ())
        resource = Resource(kind, entry.key, entry.record, entry.attrs, entry.retired_at, gaps)
        figures = resource_availability(resource, Window(now=now))
        if figures is None:
            return False
        chips = chips_of(figures)
        group = (kind, resource.accelerator)
        if chips:
            _add(sums, group, chips, figures.times.up, figures.times.down)
        settled = now >= entry.retired_at and (covered is None or covered >= entry.retired_at)
        if settled and chips:
            _add(self._archived, group, chips, figures.times.up, figures.times.down)
        return settled
