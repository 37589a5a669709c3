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
from operator import methodcaller

import orjson

from megamon.domain import timestamps
from megamon.domain.events import (
    EMPTY_RECORD,
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    EventRecord,
    reason_bits,
)

_UP, _TS = methodcaller("get", "up"), methodcaller("get", "ts")
_RECORD = re.compile(rb'"((?:[^"\\]|\\.)*)":\{"upEvents":\[([^\]]*)\]\}(,|\}\Z)', re.DOTALL)


def _events(body: bytes, cache: dict[str, int]) -> EventRecord | None:
    """One record's events, parsed as one small list (not the whole file at once).

    Column by column: the state and timestamp of every event in one pass each (a history of
    a million events is read at start-up, so no Python statement runs per event that need
    not), then the few events with more than the two keys (expected, failed, a reason)."""
    try:
        events = orjson.loads(b"[" + body + b"]")
    except orjson.JSONDecodeError:
        return None
    if not events:
        return EMPTY_RECORD
    if set(map(type, events)) != {dict}:
        return None
    ups = list(map(_UP, events))
    texts = list(map(_TS, events))
    if set(map(type, ups)) != {bool} or set(map(type, texts)) != {str}:
        return None
    ts = list(map(cache.get, texts))
    if None in ts and not _parse_missing(ts, texts, cache):
        return None
    flags = bytearray(ups)  # True is FLAG_UP
    sizes = list(map(len, events))
    if sizes.count(2) != len(sizes):
        for i, size in enumerate(sizes):
            if size != 2 and not _annotate(events[i], size, flags, i):
                return None
    return EventRecord.trusted(tuple(ts), bytes(flags))  # type: ignore[arg-type]


def _parse_missing(ts: list[int | None], texts: list[str], cache: dict[str, int]) -> bool:
    """Parse the timestamps the cache did not hold; ``False`` when one is malformed."""
    for i, value in enumerate(ts):
        if value is None:
            text = texts[i]
            try:
                ts[i] = cache[text] = timestamps.parse(text)
            except timestamps.TimestampError:
                return False
    return True


def _annotate(event: dict[str, object], size: int, flags: bytearray, i: int) -> bool:
    """Add an event's expected, failed and reason flags; ``False`` when it is malformed."""
    if size > 5:
        return False
    ed, failed = event.get("ed", False), event.get("f", False)
    if (ed is not True and ed is not False) or (failed is not True and failed is not False):
        return False
    reason = event.get("reason")  # megamon's; anything but a known reason is ignored
    up = flags[i]
    flags[i] = (
        up
        | (FLAG_EXPECTED_DOWN if ed else 0)
        | (FLAG_FAILED if failed else 0)
        | (reason_bits(reason) if type(reason) is str and not up else 0)
    )
    return True


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
