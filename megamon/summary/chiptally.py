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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.summary.availability import Resource, Window, resource_availability
from megamon.summary.chips import chips_of

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
    kind: Kind, key: str, record: EventRecord, attrs: Attrs | None, gaps: tuple[Span, ...]
) -> _Settled | None:
    """The record's figures at its last event (``None`` without events)."""
    if not record.timestamps:
        return None
    last = max(record.timestamps)
    before = gaps_before(gaps, last)
    resource = Resource(kind, key, record, _attrs_mapping(attrs), unobserved=before)
    settled = resource_availability(resource, Window(now=last))
    if settled is None:
        return None
    chips = chips_of(settled)
    growth = _growth(resource, last) if chips else Growth.NEITHER
    up, down = settled.times.up, settled.times.down
    accelerator = resource.accelerator
    return _Settled(record, attrs, accelerator, chips, before, up, down, last, growth)


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

    def update(
        self,
        kind: Kind,
        records: Mapping[str, EventRecord],
        attrs: Mapping[str, Attrs],
        gaps: tuple[Span, ...],
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
        self._gaps[kind] = gaps
        for key, record in records.items():
            entry = memo.get(key)
            obs_attrs = attrs.get(key)
            if entry is not None and entry.record is record and entry.attrs is obs_attrs:
                continue
            memo[key] = _settle(kind, key, record, obs_attrs, gaps)
        if len(memo) > len(records):
            for key in [k for k in memo if k not in records]:
                del memo[key]

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
        for kind, memo in self._live.items():
            gaps = self._gaps[kind]
            for entry in memo.values():
                if entry is not None and entry.chips:
                    group = (kind, entry.accelerator)
                    if now >= entry.last:
                        _add(sums, group, entry.chips, *entry.at(now, gaps))
                    else:  # events after ``now`` (a skewed clock): figured afresh
                        self._add_live_now(sums, kind, entry, gaps, now)
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
