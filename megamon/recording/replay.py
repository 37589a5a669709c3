"""Folding segments into a history: snapshot + log → live records, attributes, coverage. Pure.

An event's identity is its key, timestamp and state, so folding a line that is already in the
record changes nothing: a segment read twice, written twice, or already folded into a Go-format
snapshot leaves the history as it was. An event older than the record's last one (only from
a history written by another program beside megamon) is put in timestamp order.

Nothing dated after ``now`` plus the clock-skew allowance (``MAX_CLOCK_SKEW_NS``, an hour)
is folded: a line dated 2099 — inside the 2100 horizon, so the codec reads it — did not
happen, and folded it would be a 73-year period in every summary. Such lines are refused
(``future_lines``, ``future_events``), for the caller to count and name; the objects that
hold them are never rewritten.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from megamon.codec.log import TYPE_ATTRS, TYPE_EVENT, TYPE_OBSERVED, TYPE_RETIRED, LogLine
from megamon.domain.events import FLAG_UP, EventRecord
from megamon.domain.timestamps import MAX_CLOCK_SKEW_NS

Span = tuple[int, int]


class Retirement(NamedTuple):
    """A key the folded segments retired, with the record and attributes it had then: what
    its archive entry holds, for a reader of the log whose ``archive/`` is not there."""

    key: str
    retired_at: int
    record: EventRecord
    attrs: Mapping[str, object]


@dataclass
class Folded:
    """One kind's history as folded so far."""

    records: dict[str, EventRecord]
    attrs: dict[str, Mapping[str, object]] = field(default_factory=dict)
    observed: list[Span] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)
    """The detail of each key's ongoing down period (GKE's message, a JobSet's node pools),
    from the segments folded; the snapshot does not keep details."""
    retired: list[Retirement] = field(default_factory=list)
    """The retirements in the segments folded, in append order."""


class _Columns:
    """A record's events as lists while lines are folded into it."""

    __slots__ = ("flags", "ts")

    def __init__(self, record: EventRecord | None) -> None:
        self.ts = list(record.timestamps) if record is not None else []
        self.flags = bytearray(record.flags) if record is not None else bytearray()

    def add(self, ts: int, flags: int) -> None:
        if not self.ts or ts > self.ts[-1]:
            self.ts.append(ts)
            self.flags.append(flags)
            return
        low = bisect.bisect_left(self.ts, ts)
        high = bisect.bisect_right(self.ts, ts)
        if flags in self.flags[low:high]:
            return  # already there: this line was folded before
        self.ts.insert(high, ts)
        self.flags.insert(high, flags)

    def record(self) -> EventRecord:
        return EventRecord.trusted(tuple(self.ts), bytes(self.flags))


def fold(history: Folded, lines: Iterable[LogLine]) -> None:
    """Apply ``lines`` (in append order) to ``history`` in place."""
    open_columns: dict[str, _Columns] = {}
    for line in lines:
        if line.type == TYPE_EVENT:
            columns = open_columns.get(line.key)
            if columns is None:
                columns = open_columns[line.key] = _Columns(history.records.get(line.key))
            columns.add(line.ts, line.flags)
            if line.flags & FLAG_UP:
                history.details.pop(line.key, None)
            elif line.detail:
                history.details[line.key] = line.detail
            if line.attrs is not None:
                history.attrs[line.key] = line.attrs
        elif line.type == TYPE_ATTRS and line.attrs is not None:
            history.attrs[line.key] = line.attrs
        elif line.type == TYPE_RETIRED:
            columns = open_columns.pop(line.key, None)
            record = history.records.pop(line.key, None)
            attrs = history.attrs.pop(line.key, {})
            if columns is not None:
                record = columns.record()
            if record is not None:
                history.retired.append(Retirement(line.key, line.ts, record, attrs))
            history.details.pop(line.key, None)
        elif line.type == TYPE_OBSERVED and line.since is not None:
            history.observed = add_span(history.observed, (line.since, line.ts))
    for key, columns in open_columns.items():
        history.records[key] = columns.record()


def add_span(spans: list[Span], span: Span) -> list[Span]:
    """``spans`` (sorted, disjoint) with ``span`` merged in."""
    merged: list[Span] = []
    start, end = span
    placed = False
    for s, e in spans:
        if e < start:
            merged.append((s, e))
        elif s > end:
            if not placed:
                merged.append((start, end))
                placed = True
            merged.append((s, e))
        else:
            start, end = min(s, start), max(e, end)
    if not placed:
        merged.append((start, end))
    return sorted(merged)


def union_records(
    ours: Mapping[str, EventRecord], theirs: Mapping[str, EventRecord]
) -> dict[str, EventRecord]:
    """Every event of both, each once (an event file found changed under a snapshot)."""
    merged = dict(ours)
    for key, record in theirs.items():
        mine = merged.get(key)
        if mine is None:
            merged[key] = record
            continue
        if mine == record:
            continue
        columns = _Columns(mine)
        for ts, flags in zip(record.timestamps, record.flags, strict=True):
            columns.add(ts, flags)
        merged[key] = columns.record()
    return merged


@dataclass(frozen=True, slots=True)
class Refused:
    """A line or event dated beyond what the clock allows, not folded."""

    source: str
    """The object it is in: an event file or a segment, as the store describes it."""
    key: str
    """The resource (``""`` for a heartbeat)."""
    ts: int


def latest_allowed(now: int) -> int:
    """The last timestamp a history loaded at ``now`` may hold: ``now`` plus the clock skew
    another replica's clock may have (``MAX_CLOCK_SKEW_NS``)."""
    return now + MAX_CLOCK_SKEW_NS


def future_lines(
    lines: Iterable[LogLine], limit: int, source: str
) -> tuple[list[LogLine], list[Refused]]:
    """``lines`` without those dated after ``limit``, and what was refused."""
    kept: list[LogLine] = []
    refused: list[Refused] = []
    for line in lines:
        if line.ts > limit:
            refused.append(Refused(source, line.key, line.ts))
        else:
            kept.append(line)
    return kept, refused


def future_events(
    records: Mapping[str, EventRecord], limit: int, source: str
) -> tuple[dict[str, EventRecord], list[Refused]]:
    """``records`` without the events dated after ``limit`` (a key left with none is left
    out), and what was refused."""
    kept: dict[str, EventRecord] = {}
    refused: list[Refused] = []
    for key, record in records.items():
        ts = record.timestamps
        if not ts or max(ts) <= limit:
            kept[key] = record
            continue
        keep = [i for i, t in enumerate(ts) if t <= limit]
        refused.extend(Refused(source, key, t) for t in ts if t > limit)
        if keep:
            kept[key] = EventRecord.trusted(
                tuple(ts[i] for i in keep), bytes(record.flags[i] for i in keep)
            )
    return kept, refused


def spans_until(spans: Iterable[Span], limit: int) -> list[Span]:
    """Observed spans cut at ``limit``: megamon cannot have observed later than that."""
    return [(start, min(end, limit)) for start, end in spans if start <= limit]
