"""The local store between processes on one host: compare-and-swap under a file lock, so
concurrent writers lose nothing, and a write is all or nothing."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from megamon.codec import history as codec
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.errors import Conflict
from megamon.stores.local import LocalEventStore, LocalObjects

WRITERS = 4
WRITES_EACH = 15
T = 1_780_272_000 * 10**9


def _writer(directory: str, writer: int) -> int:
    """Add WRITES_EACH keys, one read-modify-write each, retrying lost compare-and-swaps."""
    store = LocalEventStore(directory)
    conflicts = 0
    for i in range(WRITES_EACH):
        while True:
            snapshot = store.read(Kind.JOBSET)
            records = dict(snapshot.records)
            records[f"w{writer}-{i}"] = EventRecord.trusted((T + i,), b"\x00")
            try:
                store.write(Kind.JOBSET, records, snapshot.version)
                break
            except Conflict:
                conflicts += 1
    return conflicts


def test_concurrent_processes_lose_no_write(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WRITERS) as pool:
        pool.starmap(_writer, [(str(tmp_path), w) for w in range(WRITERS)])
    records = LocalEventStore(tmp_path).read(Kind.JOBSET).records
    assert len(records) == WRITERS * WRITES_EACH
    assert LocalObjects(tmp_path).generation("jobsets.json") == WRITERS * WRITES_EACH


def test_a_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    store = LocalEventStore(tmp_path)
    version = store.write(Kind.JOBSET, {"a": EventRecord.trusted((T,), b"\x00")}, None)
    store.write(Kind.JOBSET, {"b": EventRecord.trusted((T,), b"\x01")}, version)
    assert codec.decode_event_file((tmp_path / "jobsets.json").read_bytes(), "x").keys() == {"b"}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_file_placed_by_hand_is_taken_over(tmp_path: Path) -> None:
    (tmp_path / "jobsets.json").write_bytes(
        b'{"a":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"}]}}'
    )
    store = LocalEventStore(tmp_path)
    snapshot = store.read(Kind.JOBSET)
    assert snapshot.version is not None and set(snapshot.records) == {"a"}
    written = store.write(Kind.JOBSET, snapshot.records, snapshot.version)
    assert int(written) == int(snapshot.version) + 1
