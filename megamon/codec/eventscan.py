"""A lean reader for event files in their canonical form (what megamon and ``json.Marshal``
write), used at start-up before the general decoder.

``megamon.codec.history.decode_event_file`` parses the whole document into Python objects
first: for a snapshot of 5,000 JobSets with 1,000 events each that is a dict per event, over
a gigabyte held at once. This reader scans the bytes record by record with two regular
expressions and keeps only the columns, so the peak is the file plus the records. It accepts
only the exact canonical layout (no whitespace, fields in Go's order, booleans only when true)
and returns ``None`` for anything else — a hand-edited file, another writer's spelling — which
the caller then reads with the general decoder, so the two always agree.
"""

from __future__ import annotations

import re

import orjson

from megamon.domain import timestamps
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord

_RECORD = re.compile(rb'"((?:[^"\\]|\\.)*)":\{"upEvents":\[([^\]]*)\]\}(,|\}\Z)', re.DOTALL)
_EVENT = re.compile(rb'\{"up":(true|false)(,"ed":true)?(,"f":true)?,"ts":"([^"\\]*)"\}(,|\Z)')


def _events(body: bytes, cache: dict[bytes, int]) -> EventRecord | None:
    ts: list[int] = []
    flags = bytearray()
    end = 0
    for match in _EVENT.finditer(body):
        if match.start() != end:
            return None
        end = match.end()
        up, ed, failed, text = match.group(1, 2, 3, 4)
        value = cache.get(text)
        if value is None:
            try:
                value = cache[text] = timestamps.parse(text.decode())
            except (timestamps.TimestampError, UnicodeDecodeError):
                return None
        ts.append(value)
        flags.append(
            (FLAG_UP if up == b"true" else 0)
            | (FLAG_EXPECTED_DOWN if ed else 0)
            | (FLAG_FAILED if failed else 0)
        )
    if end != len(body) or body.endswith(b","):
        return None
    return EventRecord.trusted(tuple(ts), bytes(flags))


def scan_event_file(data: bytes) -> dict[str, EventRecord] | None:
    """The records of a canonical event file; ``None`` when it is not exactly canonical."""
    if data == b"{}":
        return {}
    if not data.startswith(b"{"):
        return None
    records: dict[str, EventRecord] = {}
    cache: dict[bytes, int] = {}
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
