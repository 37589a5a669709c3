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

import orjson

from megamon.domain import timestamps
from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    EventRecord,
    reason_bits,
)

_RECORD = re.compile(rb'"((?:[^"\\]|\\.)*)":\{"upEvents":\[([^\]]*)\]\}(,|\}\Z)', re.DOTALL)


def _events(body: bytes, cache: dict[str, int]) -> EventRecord | None:
    """One record's events, parsed as one small list (not the whole file at once)."""
    try:
        events = orjson.loads(b"[" + body + b"]")
    except orjson.JSONDecodeError:
        return None
    ts: list[int] = []
    flags = bytearray()
    for event in events:
        if type(event) is not dict or len(event) > 5:
            return None
        up, text = event.get("up"), event.get("ts")
        ed, failed = event.get("ed", False), event.get("f", False)
        if type(up) is not bool or type(text) is not str or (ed is not True and ed is not False):
            return None
        if failed is not True and failed is not False:
            return None
        value = cache.get(text)
        if value is None:
            try:
                value = cache[text] = timestamps.parse(text)
            except timestamps.TimestampError:
                return None
        reason = event.get("reason")  # megamon's; anything but a known reason is ignored
        ts.append(value)
        flags.append(
            (FLAG_UP if up else 0)
            | (FLAG_EXPECTED_DOWN if ed else 0)
            | (FLAG_FAILED if failed else 0)
            | (reason_bits(reason) if type(reason) is str and not up else 0)
        )
    return EventRecord.trusted(tuple(ts), bytes(flags))


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
