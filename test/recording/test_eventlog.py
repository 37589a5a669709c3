"""The event log over the in-memory store: batches, snapshots, readiness, retries."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.errors import Conflict, StoreError
from megamon.recording.eventlog import EventLog, merge
from megamon.stores.base import Snapshot
from megamon.stores.memory import MemoryEventStore

T = 1_780_272_000 * 10**9
UP = Observation.build(expected=1, ready=1)
DOWN = Observation.build(expected=1, ready=0)


def test_ready_once_every_required_kind_was_observed() -> None:
    log = EventLog(MemoryEventStore(), [Kind.NODEPOOL, Kind.JOBSET])
    assert not log.ready
    log.append({Kind.NODEPOOL: {}}, T)
    assert not log.ready
    log.append({Kind.JOBSET: {"js": UP}}, T)
    assert log.ready


def test_only_kinds_that_changed_are_written() -> None:
    store = MemoryEventStore()
    log = EventLog(store, [Kind.NODEPOOL, Kind.JOBSET])
    log.append({Kind.NODEPOOL: {"np": UP}, Kind.JOBSET: {"js": DOWN}}, T)
    versions = {k: store.read(k).version for k in (Kind.NODEPOOL, Kind.JOBSET)}
    log.append({Kind.NODEPOOL: {"np": UP}, Kind.JOBSET: {"js": UP}}, T + 1)
    assert store.read(Kind.NODEPOOL).version == versions[Kind.NODEPOOL]
    assert store.read(Kind.JOBSET).version != versions[Kind.JOBSET]


def test_an_empty_kind_writes_no_file() -> None:
    store = MemoryEventStore()
    EventLog(store, [Kind.SLICE]).append({Kind.SLICE: {}}, T)
    assert store.read(Kind.SLICE) == Snapshot({}, None)


def test_the_snapshot_holds_observations_and_records_of_one_batch() -> None:
    log = EventLog(MemoryEventStore(), [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": DOWN}}, T)
    before = log.snapshot()
    log.append({Kind.NODEPOOL: {"np": UP}}, T + 1)
    after = log.snapshot()
    assert before.observations[Kind.NODEPOOL]["np"] is DOWN
    assert len(before.records[Kind.NODEPOOL]["np"]) == 1
    assert after.observations[Kind.NODEPOOL]["np"] is UP
    assert after.records[Kind.NODEPOOL]["np"].timestamps == (T, T + 1)


class _AlwaysConflicting(MemoryEventStore):
    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str:
        raise Conflict("someone else keeps writing")


def test_conflicts_are_retried_a_bounded_number_of_times() -> None:
    log = EventLog(_AlwaysConflicting(), [Kind.NODEPOOL], max_attempts=3)
    with pytest.raises(StoreError, match="nodepool history: gave up after 3 conflicting writes"):
        log.append({Kind.NODEPOOL: {"np": UP}}, T)
    assert log.snapshot().observations[Kind.NODEPOOL]["np"] is UP


class _Broken(MemoryEventStore):
    broken = True

    def read(self, kind: Kind) -> Snapshot:
        if kind is Kind.JOBSET and self.broken:
            raise StoreError("bucket unreachable")
        return super().read(kind)


def test_a_kind_whose_history_cannot_be_loaded_waits_and_the_others_go_on() -> None:
    store = _Broken()
    log = EventLog(store, [Kind.NODEPOOL, Kind.JOBSET])
    with pytest.raises(StoreError, match="jobset: cannot load history: bucket unreachable"):
        log.append({Kind.NODEPOOL: {"np": UP}, Kind.JOBSET: {"js": UP}}, T)
    assert set(store.read(Kind.NODEPOOL).records) == {"np"}
    assert not log.ready  # no report on a history that was never read
    store.broken = False
    log.append({Kind.NODEPOOL: {"np": UP}, Kind.JOBSET: {"js": UP}}, T + 1)
    assert log.ready and set(store.read(Kind.JOBSET).records) == {"js"}


class _Down(MemoryEventStore):
    down = False

    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str:
        if self.down:
            raise StoreError("503 Service Unavailable")
        return super().write(kind, records, version)


def test_transitions_during_a_store_outage_keep_their_timestamps() -> None:
    store = _Down()
    log = EventLog(store, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": DOWN}}, T)
    store.down = True
    with pytest.raises(StoreError, match="503"):
        log.append({Kind.NODEPOOL: {"np": UP}}, T + 10)
    assert log.pending
    assert log.snapshot().records[Kind.NODEPOOL]["np"].timestamps == (T, T + 10)
    with pytest.raises(StoreError):
        log.append({Kind.NODEPOOL: {"np": DOWN}}, T + 20)
    store.down = False
    log.flush()
    assert not log.pending
    assert store.read(Kind.NODEPOOL).records["np"].timestamps == (T, T + 10, T + 20)


def test_appending_without_flush_touches_the_store_only_to_load() -> None:
    store = MemoryEventStore()
    log = EventLog(store, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": DOWN}}, T, flush=False)
    assert store.read(Kind.NODEPOOL).version is None and log.pending
    log.flush()
    assert store.read(Kind.NODEPOOL).records["np"].timestamps == (T,)


def _rec(*pairs: tuple[int, bool]) -> EventRecord:
    return EventRecord.trusted(tuple(t for t, _ in pairs), bytes(int(u) for _, u in pairs))


def test_merge_keeps_each_writers_own_changes_and_our_latest_view_of_shared_ones() -> None:
    base = {
        "a": _rec((T, False)),
        "b": _rec((T, False)),
        "c": _rec((T, False)),
        "gone": _rec((T, False)),
    }
    ours = {
        "a": _rec((T, False), (T + 1, True)),
        "b": base["b"],
        "c": _rec((T, False), (T + 1, True)),
        "new": _rec((T + 1, False)),
    }
    theirs = {
        "a": base["a"],
        "b": _rec((T, False), (T + 2, True)),
        "c": _rec((T, False), (T + 2, True)),
        "gone": base["gone"],
    }
    latest = dict.fromkeys(("a", "c"), (UP, T + 1)) | {"new": (DOWN, T + 1)}
    merged = merge(base, ours, theirs, latest)
    assert merged["a"] == ours["a"]  # only we changed it
    assert merged["b"] == theirs["b"]  # only they changed it
    assert merged["c"] == theirs["c"]  # both: theirs, and our view (up) adds nothing
    assert merged["new"] == ours["new"]
    assert "gone" not in merged  # we retired it, they had not touched it


def test_merge_keeps_what_we_observe_when_their_file_lost_it() -> None:
    base = {"a": _rec((T, False), (T, True))}
    merged = merge(base, base, {}, {"a": (UP, T + 5)})
    assert merged == base
