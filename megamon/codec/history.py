"""The durable JSON format — the one module that reads and writes it.

An event file maps a resource key to its record; this is the Go megamon's format plus ``f``,
so files it wrote are read as they are and files written here are byte-for-byte what it
would write::

    {"np-a":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24.123456789Z"},
                         {"up":false,"f":true,"ts":"2026-05-04T18:30:00Z"},
                         {"up":true,"ts":"2026-05-04T18:41:00Z"},
                         {"up":false,"ed":true,"ts":"2026-05-05T02:00:00Z"}]}}

- ``up`` and ``ts`` always; ``ed`` (expected down) and ``f`` (failed) only when true, in the
  order ``up, ed, f, ts`` (Go's struct order); keys sorted, no whitespace (``json.Marshal``).
- ``ts`` is RFC 3339 with up to nine fractional digits, read as integer nanoseconds in any
  offset and written in UTC with a trailing ``Z`` (``time.RFC3339Nano``).
- ``reason`` (since v0.2.0) last, on a down event whose reason is known: why it went down
  (``megamon.domain.interruptions``). The Go megamon ignores it, as every unknown key; read
  back here, a value that is not one of the reasons is ignored likewise.
- Read as Go's decoder reads it: keys in any letter case (``UP``, ``Ts``, ``UpEvents``),
  unknown fields ignored, ``null`` or a missing ``up``/``ed``/``f`` is false, and ``null``
  stands for an empty file, record or event list.

Summaries and reports have their own module, ``megamon.codec.report``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from megamon.domain import timestamps
from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    ArchiveEntry,
    EventRecord,
    reason_bits,
    reason_of,
)
from megamon.errors import EventFileError

UP_EVENTS = "upEvents"


class _TimestampCache(dict[str, int]):
    """Parsed timestamps by text: one ``now`` per cycle is shared by every key of a file."""

    def __missing__(self, text: str) -> int:
        value = timestamps.parse(text)
        self[text] = value
        return value


_EVENT_FIELDS = {"up": FLAG_UP, "ed": FLAG_EXPECTED_DOWN, "f": FLAG_FAILED}
_TS = "ts"
REASON = "reason"
_OTHER_FIELDS = frozenset((_TS, REASON))


def _reason_bits(value: object) -> int:
    """A ``reason`` as flag bits; anything but a known reason is ignored, as Go ignores it."""
    return reason_bits(value) if type(value) is str else 0


_FOLDED_UP_EVENTS = UP_EVENTS.lower()


def _fold(key: str) -> str:
    """A key folded as Go's ``encoding/json`` matches keys to fields (Unicode simple case
    folding: ``UP``, ``Up`` and ``up`` are one field, and so are ``upEvents`` and
    ``upEventſ``)."""
    return key.lower().replace("\u017f", "s")


def _decode_event(raw: Any, cache: _TimestampCache) -> tuple[int, int]:
    """(ts, flags) of one event object, or a ``ValueError`` that says what is wrong.

    As Go's ``encoding/json`` fills an ``UpEvent``: keys in any letter case (the last of
    two spellings wins), ``null`` or a missing flag is false, unknown keys are ignored.
    ``ts`` is required: Go would read a missing one as the year 1, which no history means.
    """
    if type(raw) is not dict:
        raise ValueError(f"an event must be an object, got {_kind_of(raw)}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        folded = _fold(key)
        if value is not None and (folded in _EVENT_FIELDS or folded in _OTHER_FIELDS):
            values[folded] = value  # a null leaves the field as it was (a bool, a time)
    flags = 0 if values.get("up") is True else _reason_bits(values.get(REASON))
    for name, bit in _EVENT_FIELDS.items():
        value = values.get(name)
        if value is True:
            flags |= bit
        elif value is not False and value is not None:
            raise ValueError(f"{name!r} must be true or false, got {_kind_of(value)}")
    text = values.get(_TS)
    if type(text) is not str:
        raise ValueError(f"'ts' must be an RFC 3339 string, got {_kind_of(text)}")
    try:
        return cache[text], flags
    except timestamps.TimestampError as err:
        raise ValueError(f"'ts': {err}") from None


def _events_of(raw: dict[str, Any]) -> Any:
    """The ``upEvents`` value of a record, its key in any letter case (the last wins; a
    ``null`` empties the list, as Go's decoder sets a slice to nil)."""
    if len(raw) == 1 and UP_EVENTS in raw:
        return raw[UP_EVENTS]
    events = None
    for key, value in raw.items():
        if _fold(key) == _FOLDED_UP_EVENTS:
            events = value
    return events


def _decode_record(raw: Any, cache: _TimestampCache, source: str, key: str) -> EventRecord:
    if raw is None:
        return EventRecord()
    if type(raw) is not dict:
        raise EventFileError(source, f"a record must be an object, got {_kind_of(raw)}", key)
    events = _events_of(raw)
    if events is None:
        return EventRecord()
    if type(events) is not list:
        raise EventFileError(source, f"'upEvents' must be a list, got {_kind_of(events)}", key)
    ts: list[int] = []
    flags = bytearray()
    for index, event in enumerate(events):
        # The fast path takes the events megamon and the Go megamon write: exactly the
        # keys ``up``, ``ts`` and the true flags. Anything else (other spellings, nulls,
        # wrong types, bad text) goes through the checking decoder.
        if type(event) is dict:
            up, text = event.get("up"), event.get("ts")
            ed, failed = event.get("ed", False), event.get("f", False)
            reason = event.get(REASON)
            if (
                type(up) is bool
                and type(text) is str
                and (ed is False or ed is True)
                and (failed is False or failed is True)
                and len(event) == 2 + ed + failed + (reason is not None)  # no other spelling
            ):
                try:
                    ts.append(cache[text])
                except timestamps.TimestampError:
                    pass
                else:
                    bits = 0 if up or reason is None else _reason_bits(reason)
                    flags.append(up + (ed << 1) + (failed << 2) + bits)
                    continue
        try:
            t, f = _decode_event(event, cache)
        except ValueError as err:
            raise EventFileError(source, str(err), key, index) from None
        ts.append(t)
        flags.append(f)
    return EventRecord.trusted(tuple(ts), bytes(flags))


def decode_event_file(data: bytes | str, source: str) -> dict[str, EventRecord]:
    """The records of an event file; ``source`` names the file in error messages."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise EventFileError(source, f"invalid JSON: {err}") from None
    if document is None:
        return {}
    if type(document) is not dict:
        raise EventFileError(
            source, f"an event file must be a JSON object of records, got {_kind_of(document)}"
        )
    cache = _TimestampCache()
    return {key: _decode_record(raw, cache, source, key) for key, raw in document.items()}


def decode_record(data: bytes | str, source: str, key: str) -> EventRecord:
    """One record in the form ``{"upEvents": [...]}`` (as in an archive entry)."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise EventFileError(source, f"invalid JSON: {err}") from None
    return _decode_record(document, _TimestampCache(), source, key)


def _event_json(ts: str, flags: int) -> str:
    up = "true" if flags & FLAG_UP else "false"
    ed = ',"ed":true' if flags & FLAG_EXPECTED_DOWN else ""
    failed = ',"f":true' if flags & FLAG_FAILED else ""
    reason = reason_of(flags)
    if reason:
        return f'{{"up":{up}{ed}{failed},"ts":"{ts}","reason":"{reason}"}}'
    return f'{{"up":{up}{ed}{failed},"ts":"{ts}"}}'


def _record_json(record: EventRecord, formatted: dict[int, str]) -> str:
    parts = []
    for t, f in zip(record.timestamps, record.flags, strict=True):
        text = formatted.get(t)
        if text is None:
            text = formatted[t] = timestamps.format_ns(t)
        parts.append(_event_json(text, f))
    return '{"upEvents":[' + ",".join(parts) + "]}"


def encode_record(record: EventRecord) -> bytes:
    """``{"upEvents":[...]}`` of one record, as ``json.Marshal`` writes it."""
    return _record_json(record, {}).encode()


def encode_event_file(records: Mapping[str, EventRecord]) -> bytes:
    """An event file of ``records``, keys sorted, as ``json.Marshal`` writes a Go map."""
    formatted: dict[int, str] = {}
    body = ",".join(
        orjson.dumps(key).decode() + ":" + _record_json(records[key], formatted)
        for key in sorted(records)
    )
    return ("{" + body + "}").encode()


def file_digest(data: bytes) -> str:
    """The SHA-256 of an event file's bytes, as a snapshot mark records it: a file deleted,
    restored from an older copy or edited by hand no longer matches its mark."""
    return hashlib.sha256(data).hexdigest()


def encode_archive_entry(entry: ArchiveEntry) -> bytes:
    """``{"kind","key","retiredAt","attrs","upEvents"}`` of a retired resource."""
    head = orjson.dumps(
        {
            "kind": entry.kind,
            "key": entry.key,
            "retiredAt": timestamps.format_ns(entry.retired_at),
            "attrs": entry.attrs,
        }
    ).decode()
    events = _record_json(entry.record, {})[len('{"upEvents":') : -1]
    return (head[:-1] + ',"upEvents":' + events + "}").encode()


def decode_archive_entry(data: bytes, source: str) -> ArchiveEntry:
    """An archive entry written by ``encode_archive_entry``."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise EventFileError(source, f"invalid JSON: {err}") from None
    if type(document) is not dict:
        raise EventFileError(source, "an archive entry must be a JSON object")
    key = document.get("key")
    kind = document.get("kind")
    retired = document.get("retiredAt")
    attrs = document.get("attrs") or {}
    if type(key) is not str or type(kind) is not str or type(retired) is not str:
        raise EventFileError(source, "an archive entry needs string 'kind', 'key', 'retiredAt'")
    if type(attrs) is not dict:
        raise EventFileError(source, "'attrs' must be an object", key)
    try:
        retired_at = timestamps.parse(retired)
    except timestamps.TimestampError as err:
        raise EventFileError(source, f"'retiredAt': {err}", key) from None
    record = _decode_record(document, _TimestampCache(), source, key)
    return ArchiveEntry(kind=kind, key=key, retired_at=retired_at, attrs=attrs, record=record)


def _kind_of(value: object) -> str:
    """The JSON type of a decoded value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    return "an object"
