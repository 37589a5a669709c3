"""The append-only log's formats: segments (NDJSON), snapshot marks and the writer lease.

A segment is newline-delimited JSON, one line per entry, every line with the same columns so
that DuckDB (``read_json(..., hive_partitioning=true)``) and BigQuery external tables read a
bucket as it is (docs/history.md)::

    {"type":"event","cluster":"c","kind":"nodepool","key":"np-a","ts":"2026-05-04T18:23:24Z",
     "tsNs":1777919004000000000,"state":"down","up":false,"ed":false,"f":false,
     "attrs":{...},"since":null,"reason":"maintenance","detail":null}

- ``type`` ``event``: one up/down event (``state`` is ``up``, ``down``, ``expected-down`` or
  ``failed``; ``up``/``ed``/``f`` are the Go megamon's flags). ``attrs`` are the key's
  attributes when the event was recorded.
- ``reason`` (since v0.2.0): why a down event went down (``megamon.domain.interruptions``),
  ``null`` on up events, other lines and events without one; ``detail`` what goes with it
  (GKE's status message for ``error``, the node pools of a JobSet's ``nodepool``), or
  ``null``. Segments written before v0.2.0 lack both columns and read as ``null``.
- ``attrs``: the key's attributes changed (no event); ``retired``: the key is no longer
  observed (it leaves the live set, its history is in ``archive/``).
- ``observed``: a heartbeat, key ``""``: the writer has been observing without a break from
  ``since`` (nanoseconds) until ``tsNs``.

A line that cannot be read makes the whole segment corrupt (``EventFileError`` naming the
line); the caller keeps the lines before it, which are whole events (an event's identity is
its key, timestamp and state, so keeping them twice changes nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from megamon.domain import timestamps
from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    reason_bits,
    reason_of,
)
from megamon.errors import EventFileError

TYPE_EVENT = "event"
TYPE_ATTRS = "attrs"
TYPE_RETIRED = "retired"
TYPE_OBSERVED = "observed"
LINE_TYPES = frozenset((TYPE_EVENT, TYPE_ATTRS, TYPE_RETIRED, TYPE_OBSERVED))

STATE_UP = "up"
STATE_DOWN = "down"
STATE_EXPECTED_DOWN = "expected-down"
STATE_FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LogLine:
    """One entry of a segment; ``flags`` only for events, ``since`` only for heartbeats."""

    type: str
    key: str
    ts: int
    flags: int = 0
    attrs: Mapping[str, object] | None = None
    since: int | None = None
    detail: str = ""
    """What goes with a down event's reason (the reason itself is in ``flags``)."""


def state_name(flags: int) -> str:
    """The readable state of an event's flags, for engines that query the log."""
    if flags & FLAG_UP:
        return STATE_UP
    if flags & FLAG_EXPECTED_DOWN:
        return STATE_EXPECTED_DOWN
    if flags & FLAG_FAILED:
        return STATE_FAILED
    return STATE_DOWN


def _line_dict(cluster: str, kind: str, line: LogLine) -> dict[str, Any]:
    is_event = line.type == TYPE_EVENT
    return {
        "type": line.type,
        "cluster": cluster,
        "kind": kind,
        "key": line.key,
        "ts": timestamps.format_ns(line.ts),
        "tsNs": line.ts,
        "state": state_name(line.flags) if is_event else None,
        "up": bool(line.flags & FLAG_UP) if is_event else None,
        "ed": bool(line.flags & FLAG_EXPECTED_DOWN) if is_event else None,
        "f": bool(line.flags & FLAG_FAILED) if is_event else None,
        "attrs": dict(line.attrs) if line.attrs is not None else None,
        "since": line.since,
        "reason": (reason_of(line.flags) or None) if is_event else None,
        "detail": line.detail or None,
    }


def encode_segment(cluster: str, kind: str, lines: Iterable[LogLine]) -> bytes:
    """The NDJSON of ``lines``, each ending with a newline."""
    return b"".join(orjson.dumps(_line_dict(cluster, kind, line)) + b"\n" for line in lines)


def _decode_line(raw: Any) -> LogLine:
    if type(raw) is not dict:
        raise ValueError("a line must be a JSON object")
    kind, key, ts = raw.get("type"), raw.get("key"), raw.get("tsNs")
    if kind not in LINE_TYPES:
        raise ValueError(f"unknown type {kind!r}")
    if type(key) is not str or type(ts) is not int:
        raise ValueError("'key' must be a string and 'tsNs' an integer")
    flags = 0
    if kind == TYPE_EVENT:
        up, ed, failed = raw.get("up"), raw.get("ed"), raw.get("f")
        if type(up) is not bool or type(ed) is not bool or type(failed) is not bool:
            raise ValueError("an event needs boolean 'up', 'ed' and 'f'")
        flags = (FLAG_UP if up else 0) | (FLAG_EXPECTED_DOWN if ed else 0)
        flags |= FLAG_FAILED if failed else 0
        reason = raw.get("reason")
        if not up and type(reason) is str:
            flags |= reason_bits(reason)  # an unknown reason is ignored, as the snapshot's
    detail = raw.get("detail")
    if detail is not None and type(detail) is not str:
        raise ValueError("'detail' must be a string or null")
    attrs = raw.get("attrs")
    if attrs is not None and type(attrs) is not dict:
        raise ValueError("'attrs' must be an object or null")
    since = raw.get("since")
    if since is not None and type(since) is not int:
        raise ValueError("'since' must be an integer or null")
    if kind == TYPE_OBSERVED and since is None:
        raise ValueError("a heartbeat needs 'since'")
    return LogLine(kind, key, ts, flags, attrs, since, detail or "")


def decode_segment(data: bytes, source: str) -> list[LogLine]:
    """The lines of a segment; ``EventFileError`` (with the lines read so far in
    ``partial``) if one cannot be read, or if the last line is cut short."""
    lines: list[LogLine] = []
    chunks = data.split(b"\n")
    cut = chunks.pop()  # b"" when the segment ends with its newline, as written
    for number, chunk in enumerate(chunks, 1):
        try:
            lines.append(_decode_line(orjson.loads(chunk)))
        except (orjson.JSONDecodeError, ValueError) as err:
            raise SegmentError(source, f"line {number}: {err}", lines) from None
    if cut:
        raise SegmentError(source, f"line {len(chunks) + 1} is cut short", lines)
    return lines


class SegmentError(EventFileError):
    """A segment that cannot be read whole; ``partial`` holds the whole lines before."""

    def __init__(self, source: str, reason: str, partial: list[LogLine]) -> None:
        super().__init__(source, reason)
        self.partial = partial


# --- snapshot marks -------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotMark:
    """What a snapshot (the Go-format event file) covers, kept where the Go megamon does not
    look: the event file's generation it was written as, the last segment folded into it, the
    attributes of its keys and the spans megamon was observing.

    ``digest`` (since v0.2.0) is the SHA-256 of the event file's bytes, so a file deleted,
    restored from an older copy or edited is told from the one the mark covers, whatever
    generation the store gives it. ``previous`` is the snapshot before it (its ``covers`` and
    ``digest``): the mark is written before the file, so a process stopped in between leaves
    the previous file, which the mark still vouches for. Marks from before v0.2.0 carry
    neither."""

    generation: int
    covers: str
    attrs: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    observed: tuple[tuple[int, int], ...] = ()
    digest: str | None = None
    previous: MarkedFile | None = None


@dataclass(frozen=True)
class MarkedFile:
    """One event file a mark vouches for: its digest and the last segment it holds (``""``:
    none, every segment is folded onto it)."""

    covers: str
    digest: str


def encode_mark(mark: SnapshotMark) -> bytes:
    document: dict[str, object] = {
        "generation": mark.generation,
        "covers": mark.covers,
        "attrs": {k: dict(v) for k, v in sorted(mark.attrs.items())},
        "observed": [list(span) for span in mark.observed],
    }
    if mark.digest is not None:
        document["digest"] = mark.digest
    if mark.previous is not None:
        document["previous"] = {"covers": mark.previous.covers, "digest": mark.previous.digest}
    return orjson.dumps(document)


def decode_mark(data: bytes, source: str) -> SnapshotMark:
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise EventFileError(source, f"invalid JSON: {err}") from None
    if type(raw) is not dict:
        raise EventFileError(source, "a snapshot mark must be a JSON object")
    generation, covers = raw.get("generation"), raw.get("covers")
    attrs, observed = raw.get("attrs") or {}, raw.get("observed") or []
    if type(generation) is not int or type(covers) is not str:
        raise EventFileError(source, "needs integer 'generation' and string 'covers'")
    if type(attrs) is not dict or not all(type(v) is dict for v in attrs.values()):
        raise EventFileError(source, "'attrs' must map keys to objects")
    spans = []
    for span in observed if type(observed) is list else [None]:
        if type(span) is not list or len(span) != 2 or not all(type(t) is int for t in span):
            raise EventFileError(source, "'observed' must be a list of [since, until] pairs")
        spans.append((span[0], span[1]))
    digest = raw.get("digest")
    if digest is not None and type(digest) is not str:
        raise EventFileError(source, "'digest' must be a string")
    return SnapshotMark(
        generation, covers, attrs, tuple(spans), digest, _decode_previous(raw, source)
    )


def _decode_previous(raw: dict[str, Any], source: str) -> MarkedFile | None:
    previous = raw.get("previous")
    if previous is None:
        return None
    if (
        type(previous) is not dict
        or type(previous.get("covers")) is not str
        or type(previous.get("digest")) is not str
    ):
        raise EventFileError(source, "'previous' needs string 'covers' and 'digest'")
    return MarkedFile(previous["covers"], previous["digest"])


# --- the writer lease ------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseHolder:
    """Which process holds a lease: ``name`` (``host/pid``) for operators, and what tells two
    processes apart that share a host name and a pid (containers with their own PID
    namespace): the host's boot id, the PID namespace and a nonce drawn at start."""

    name: str
    host: str = ""
    pid: int = 0
    boot_id: str = ""
    pid_namespace: str = ""
    nonce: str = ""

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class LeaseRecord:
    """Who may append to a history, and for how long (the holder's wall clock, nanoseconds:
    ``expires - acquired`` is the duration; ``expires`` 0 is a released lease)."""

    holder: LeaseHolder
    expires: int
    acquired: int

    @property
    def released(self) -> bool:
        return self.expires <= self.acquired

    @property
    def duration(self) -> int:
        return max(self.expires - self.acquired, 0)


def encode_lease(lease: LeaseRecord) -> bytes:
    holder = lease.holder
    return orjson.dumps(
        {
            "holder": holder.name,
            "host": holder.host,
            "pid": holder.pid,
            "bootId": holder.boot_id,
            "pidNamespace": holder.pid_namespace,
            "nonce": holder.nonce,
            "expires": timestamps.format_ns(lease.expires),
            "expiresNs": lease.expires,
            "acquiredNs": lease.acquired,
        }
    )


_HOLDER_FIELDS = {"host": str, "pid": int, "bootId": str, "pidNamespace": str, "nonce": str}


def decode_lease(data: bytes, source: str) -> LeaseRecord:
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise EventFileError(source, f"invalid JSON: {err}") from None
    if type(raw) is not dict:
        raise EventFileError(source, "a lease must be a JSON object")
    holder, expires, acquired = raw.get("holder"), raw.get("expiresNs"), raw.get("acquiredNs")
    if type(holder) is not str or type(expires) is not int or type(acquired) is not int:
        raise EventFileError(source, "needs string 'holder', integer 'expiresNs', 'acquiredNs'")
    for name, kind in _HOLDER_FIELDS.items():
        if name in raw and type(raw[name]) is not kind:
            raise EventFileError(source, f"'{name}' must be a {kind.__name__}")
    identity = LeaseHolder(
        holder,
        host=raw.get("host", ""),
        pid=raw.get("pid", 0),
        boot_id=raw.get("bootId", ""),
        pid_namespace=raw.get("pidNamespace", ""),
        nonce=raw.get("nonce", ""),
    )
    return LeaseRecord(identity, expires, acquired)
