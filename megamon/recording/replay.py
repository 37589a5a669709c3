"""Folding segments into a history: snapshot + log → live records, attributes, coverage. Pure.

An event's identity is its key, timestamp and state, so folding a line that is already in the
record changes nothing: a segment read twice, written twice, or already folded into a Go-format
snapshot leaves the history as it was. An event older than the record's last one (only from
a history written by another program beside megamon) is put in timestamp order.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from megamon.codec.log import TYPE_ATTRS, TYPE_EVENT, TYPE_OBSERVED, TYPE_RETIRED, LogLine
from megamon.domain.events import FLAG_UP, EventRecord

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
