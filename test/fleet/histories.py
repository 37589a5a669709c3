"""Writing test histories in each layout the fleet report reads: the Go megamon's snapshot
files and archive entries (through the real ``LocalEventStore``), and the append-only log's
NDJSON segments (``log/kind=<kind>/date=<day>/<sequence>.ndjson``, one line per event with
cluster, kind, key, RFC 3339 and integer-nanosecond timestamps, state, flags and attributes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from megamon.codec.log import SnapshotMark, encode_mark
from megamon.domain import timestamps
from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    ArchiveEntry,
    EventRecord,
)
from megamon.domain.kinds import Kind
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import Resource


@dataclass(frozen=True)
class Lifetime:
    """One lifetime of a key: its events, attributes and retirement (``None``: live)."""

    kind: Kind
    key: str
    events: tuple[tuple[int, int], ...]
    attrs: Mapping[str, object] = field(default_factory=dict)
    retired_at: int | None = None

    @property
    def record(self) -> EventRecord:
        return EventRecord.trusted(
            tuple(t for t, _ in self.events), bytes(f for _, f in self.events)
        )

    def resource(
        self, *, live_attrs: bool, unobserved: tuple[tuple[int, int], ...] = ()
    ) -> Resource:
        """The Python report's view; a live record is named only when ``live_attrs``;
        ``unobserved``: the gaps in its history's coverage (``unobserved_gaps``)."""
        attrs = self.attrs if (self.retired_at is not None or live_attrs) else {}
        return Resource(self.kind, self.key, self.record, attrs, self.retired_at, unobserved)


Coverage = Mapping[Kind, Sequence[tuple[int, int]]]
"""Per kind, the spans megamon was observing (``since``, ``until``), as heartbeats record them."""


def write_snapshots(
    root: Path, lifetimes: Sequence[Lifetime], coverage: Coverage | None = None
) -> None:
    """Live lifetimes as Go-format event files, retired ones as archive entries, and the
    spans of ``coverage`` in each kind's snapshot mark (as megamon keeps them)."""
    store = LocalEventStore(root)
    for kind, spans in (coverage or {}).items():
        mark = SnapshotMark(generation=0, covers="", observed=tuple(spans))
        store.log.write_mark(kind, encode_mark(mark))
    for kind in Kind:
        live = {lt.key: lt.record for lt in lifetimes if lt.kind is kind and lt.retired_at is None}
        if live:
            store.write(kind, live, None)
    for lt in lifetimes:
        if lt.retired_at is not None:
            entry = ArchiveEntry(
                kind=lt.kind.value,
                key=lt.key,
                retired_at=lt.retired_at,
                attrs=dict(lt.attrs),
                record=lt.record,
            )
            store.archive(entry)


def _state(flags: int) -> str:
    if flags & FLAG_UP:
        return "up"
    if flags & FLAG_EXPECTED_DOWN:
        return "expected-down"
    return "failed" if flags & FLAG_FAILED else "down"


def log_line(
    cluster: str,
    kind: Kind,
    key: str,
    ts: int,
    flags: int | None,
    attrs: Mapping[str, object] | None,
    line_type: str = "event",
) -> dict[str, object]:
    is_event = line_type == "event" and flags is not None
    return {
        "type": line_type,
        "cluster": cluster,
        "kind": kind.value,
        "key": key,
        "ts": timestamps.format_ns(ts),
        "tsNs": ts,
        "state": _state(flags) if is_event and flags is not None else None,
        "up": bool(flags & FLAG_UP) if is_event and flags is not None else None,
        "ed": bool(flags & FLAG_EXPECTED_DOWN) if is_event and flags is not None else None,
        "f": bool(flags & FLAG_FAILED) if is_event and flags is not None else None,
        "attrs": dict(attrs) if attrs is not None else None,
        "since": None,
    }


def write_segments(
    root: Path, kind: Kind, lines: Iterable[dict[str, object]], per_segment: int = 50
) -> None:
    """``lines`` in append order, cut into segments of ``per_segment`` lines."""
    batch: list[bytes] = []
    sequence = 0

    def flush() -> None:
        nonlocal sequence
        if not batch:
            return
        first = orjson.loads(batch[0])
        day = str(first["ts"])[:10]
        directory = root / "log" / f"kind={kind.value}" / f"date={day}"
        directory.mkdir(parents=True, exist_ok=True)
        sequence += 1
        (directory / f"{sequence:016d}.ndjson").write_bytes(b"".join(batch))
        batch.clear()

    for line in lines:
        batch.append(orjson.dumps(line) + b"\n")
        if len(batch) >= per_segment:
            flush()
    flush()


def heartbeat(cluster: str, kind: Kind, since: int, until: int) -> dict[str, object]:
    """An ``observed`` line: megamon observed ``kind`` without a break over the span."""
    line = log_line(cluster, kind, "", until, None, None, "observed")
    line["since"] = since
    return line


def write_log(
    root: Path,
    cluster: str,
    lifetimes: Sequence[Lifetime],
    *,
    archive: bool = True,
    coverage: Coverage | None = None,
) -> None:
    """Every lifetime as log lines (events with attributes, then a ``retired`` line), the
    spans of ``coverage`` as heartbeats, and the retired lifetimes as archive entries too
    (as the recorder keeps them) unless not ``archive``."""
    for kind in Kind:
        lines: list[tuple[int, dict[str, object]]] = [
            (until, heartbeat(cluster, kind, since, until))
            for since, until in (coverage or {}).get(kind, ())
        ]
        for lt in lifetimes:
            if lt.kind is not kind:
                continue
            for ts, flags in lt.events:
                lines.append((ts, log_line(cluster, kind, lt.key, ts, flags, lt.attrs)))
            if lt.retired_at is not None:
                retired = log_line(cluster, kind, lt.key, lt.retired_at, None, None, "retired")
                lines.append((lt.retired_at, retired))
        lines.sort(key=lambda pair: pair[0])
        write_segments(root, kind, (line for _, line in lines))
    if not archive:
        return
    store = LocalEventStore(root)
    for lt in lifetimes:
        if lt.retired_at is not None:
            store.archive(
                ArchiveEntry(
                    kind=lt.kind.value,
                    key=lt.key,
                    retired_at=lt.retired_at,
                    attrs=dict(lt.attrs),
                    record=lt.record,
                )
            )
