"""Helpers to write event histories in tests as readable timelines."""

from __future__ import annotations

from megamon.domain import timestamps
from megamon.domain.events import EventRecord, UpEvent

T0 = timestamps.parse("2021-01-01T00:00:00Z")
S = 1_000_000_000
M = 60 * S
H = 60 * M


def up(at: int) -> UpEvent:
    return UpEvent(up=True, ts=T0 + at)


def down(at: int, *, ed: bool = False, f: bool = False) -> UpEvent:
    return UpEvent(up=False, ts=T0 + at, expected_down=ed, failed=f)


def record(*events: UpEvent) -> EventRecord:
    return EventRecord.of(events)
