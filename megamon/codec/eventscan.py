"""A lean reader for event files in the compact layout megamon and ``json.Marshal`` write,
tried at start-up before the general decoder.

``megamon.codec.history.decode_event_file`` parses the whole document into Python objects
first: for a snapshot of 5,000 JobSets with 1,000 events each that is a dict per event, over
a gigabyte held at once. This reader finds the records with one regular expression and
parses each record's events on their own, keeping only the columns, so the peak is the file
plus the records. It reads only records laid out as ``"key":{"upEvents":[…]}`` with
well-formed events, and returns ``None`` for anything else (a hand-edited file, another
writer's spelling, a damaged file), which the caller then reads with the general decoder.
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import Any

import msgspec
import orjson

from megamon.domain import timestamps
from megamon.domain.events import (
    EMPTY_RECORD,
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    EventRecord,
    reason_bits,
)

_RECORD = re.compile(rb'"((?:[^"\\]|\\.)*)":\{"upEvents":\[([^\]]*)\]\}(,|\}\Z)', re.DOTALL)


class _Event(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One event as megamon and the Go megamon write it. msgspec checks each field's type
    while parsing, in C, so no Python statement runs per event; the struct is closed, so an
    event with a key neither writes sends the file to the general decoder."""

    up: bool
    ts: str
    ed: bool = False
    f: bool = False
    reason: Any = None  # megamon's; anything but a known reason is ignored


_DECODE_EVENTS = msgspec.json.Decoder(list[_Event]).decode
_UP, _TS = attrgetter("up"), attrgetter("ts")
_PLAIN_QUOTES = 6
"""The quotes of an event with only ``up`` and ``ts``: two keys and the timestamp's text (which
holds none). Each other key adds two and a reason two more, so a record whose text holds six
per event has no annotated event, and its flags are its ``up`` column alone."""


def _events(body: bytes, cache: dict[str, int]) -> EventRecord | None:
    """One record's events, decoded on their own (not the whole file at once).

    Column by column: the timestamp and the state of every event in one C-level pass each (a
    history of millions of events is read at start-up); only a record whose text holds more
    than its plain events' quotes has its events' annotations read one by one."""
    try:
        events = _DECODE_EVENTS(b"[" + body + b"]")
    except msgspec.DecodeError:
        return None
    if not events:
        return EMPTY_RECORD
    cached = tuple(map(cache.get, map(_TS, events)))
    ts = cached if None not in cached else _parsed(events, cache)
    if ts is None:
        return None
    if body.count(b'"') == _PLAIN_QUOTES * len(events):
        flags = bytes(map(_UP, events))  # True is FLAG_UP
    else:
        flags = bytes(event.up | _annotation(event) for event in events)
    return EventRecord.trusted(ts, flags)  # type: ignore[arg-type]


def _parsed(events: list[_Event], cache: dict[str, int]) -> tuple[int, ...] | None:
    """Every event's timestamp, parsing those the cache does not hold; ``None`` when one is
    malformed."""
    ts = []
    for event in events:
        value = cache.get(event.ts)
        if value is None:
            try:
                value = cache[event.ts] = timestamps.parse(event.ts)
            except timestamps.TimestampError:
                return None
        ts.append(value)
    return tuple(ts)


def _annotation(event: _Event) -> int:
    """An event's expected, failed and reason flags (a reason only on a down event)."""
    reason = event.reason
    if reason is None and not event.ed and not event.f:
        return 0
    return (
        (FLAG_EXPECTED_DOWN if event.ed else 0)
        | (FLAG_FAILED if event.f else 0)
        | (reason_bits(reason) if type(reason) is str and not event.up else 0)
    )


def scan_event_file(data: bytes) -> dict[str, EventRecord] | None:
    """The records of a canonical event file; ``None`` when it is not exactly canonical."""
    if data == b"{}":
        return {}
    if not data.startswith(b"{"):
        return None
    records: dict[str, EventRecord] = {}
    cache: dict[str, int] = {}
    position = 1
    closed = False
    for match in _RECORD.finditer(data, 1):
        if match.start() != position:
            return None
        position = match.end()
        try:
            key = orjson.loads(b'"' + match.group(1) + b'"')
        except orjson.JSONDecodeError:
            return None
        record = _events(match.group(2), cache)
        if record is None or type(key) is not str or key in records:
            return None
        records[key] = record
        closed = match.group(3) == b"}"
    return records if position == len(data) and closed else None
