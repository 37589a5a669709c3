"""An event file edited by hand while megamon runs is a conflict, never overwritten.

The local store keeps each file's fingerprint (size, mtime, ctime, inode) beside its
generation, so a change megamon did not write — even one of the same size with its mtime put
back — gives the file a new generation: the next snapshot's compare-and-swap fails, and the
event log keeps the edit's events beside its own, as it does for a Go megamon's write.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from megamon.codec import history as codec
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore, LocalObjects
from megamon.telemetry import Instruments

S = timestamps.NANOS_PER_SECOND
T = 1_780_272_000 * S
NP = Kind.NODEPOOL
UP = Observation.build(expected=1, ready=1)
DOWN = Observation.build(expected=1, ready=0)


class Clock:
    def __init__(self) -> None:
        self.now = T

    def __call__(self) -> int:
        return self.now


def _edit_keeping_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    assert len(old) == len(new)
    stat = path.stat()
    data = path.read_bytes()
    assert old in data
    with path.open("r+b") as out:  # in place: same inode
        out.write(data.replace(old, new))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.parametrize("edit", ["a key added", "same size and mtime"])
def test_a_file_edited_by_hand_while_megamon_runs_is_a_conflict_not_overwritten(
    tmp_path: Path, edit: str
) -> None:
    registry, clock = CollectorRegistry(), Clock()
    instruments = Instruments("megamon", registry, [NP])
    store = LocalEventStore(tmp_path, instruments=instruments)
    log = EventLog(store, [NP], clock=clock, snapshot_interval_s=10, instruments=instruments)
    log.append({NP: {"np": DOWN}}, T)
    clock.now = T + 11 * S
    log.append({NP: {"np": UP}}, clock.now)  # the first snapshot
    path = tmp_path / "node-pools.json"
    written = path.read_bytes()
    assert codec.decode_event_file(written, "") == log.records()[NP]

    if edit == "a key added":
        path.write_bytes(
            written.replace(
                b"{", b'{"by-hand":{"upEvents":[{"up":true,"ts":"2026-05-01T00:00:00Z"}]},', 1
            )
        )
        expected = {"np", "by-hand"}
    else:  # the first event's second, same length: only ctime (and content) tell
        _edit_keeping_size_and_mtime(path, b"00:00:00Z", b"00:00:01Z")
        expected = {"np"}
    edited = codec.decode_event_file(path.read_bytes(), "")

    clock.now = T + 22 * S
    log.append({NP: {"np": DOWN}}, clock.now)  # the next snapshot: a conflict, kept
    conflicts = registry.get_sample_value(
        "megamon_event_store_conflicts_total", {"kind": "nodepool"}
    )
    assert conflicts == 1
    final = codec.decode_event_file(path.read_bytes(), "")
    assert set(final) == expected
    for key, record in edited.items():  # every event of the edit is still there
        assert set(record.timestamps) <= set(final[key].timestamps)
    assert len(final["np"]) >= 3


def test_an_unchanged_file_keeps_its_generation_and_a_changed_one_moves_above_it(
    tmp_path: Path,
) -> None:
    objects = LocalObjects(tmp_path)
    first = objects.upload("f.json", b"{}", 0)
    assert objects.generation("f.json") == first == 1
    (tmp_path / "f.json").write_bytes(b"{} ")
    moved = objects.generation("f.json")
    assert moved is not None and moved > first
    assert objects.generation("f.json") == moved  # stable until the next change
    assert objects.upload("f.json", b"{}", moved) == moved + 1
