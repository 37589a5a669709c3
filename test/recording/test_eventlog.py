"""The event log over the in-memory store: segments, snapshots, start-up, attributes, the
writer lease, heartbeats and store failures."""

from __future__ import annotations

from collections.abc import Mapping

import orjson
import pytest

from megamon.codec import history as history_codec
from megamon.codec.log import TYPE_EVENT, TYPE_OBSERVED, decode_segment
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.errors import StoreError
from megamon.recording.eventlog import EventLog
from megamon.recording.loading import LoadedKind, load_kind, read_mark
from megamon.stores.base import Snapshot
from megamon.stores.memory import MemoryEventStore

T = 1_780_272_000 * 10**9
S = 10**9
UP = Observation.build(expected=1, ready=1)
DOWN = Observation.build(expected=1, ready=0)
NP = Kind.NODEPOOL


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: int = T) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _log(store: MemoryEventStore, clock: Clock, holder: str = "a", **kw: float) -> EventLog:
    return EventLog(store, [NP], holder=holder, clock=clock, monotonic=clock, cluster="c", **kw)


def _segments(store: MemoryEventStore) -> list[str]:
    return [n for n in store.objects.list("log/kind=") if n.endswith(".ndjson")]


def _events(store: MemoryEventStore, key: str) -> list[tuple[int, int]]:
    record = load_kind(store, NP).history.records[key]
    return [((t - T) // S, f) for t, f in zip(record.timestamps, record.flags, strict=True)]


def test_two_writers_on_one_store_never_invent_a_transition() -> None:
    """The two-writer bug: B's stale view was re-applied at A's last nanosecond and a pool up
    for an hour came out 3,600 s down. With the lease, B stands by and records nothing."""
    store, clock = MemoryEventStore(), Clock()
    a, b = _log(store, clock, "a"), _log(store, clock, "b")
    a.append({NP: {"a": UP}}, T)
    b.append({NP: {"a": DOWN}}, T - 5 * S, flush=False)
    b.flush()
    a.append({NP: {"a": UP}}, T + 3600 * S)
    b.append({NP: {"a": UP}}, T + 3600 * S)
    assert b.standing_by and not a.standing_by
    assert _events(store, "a") == [(0, 0), (0, 1)]


def test_a_standby_takes_over_when_the_lease_lapses_and_reads_the_history_afresh() -> None:
    store, clock = MemoryEventStore(), Clock()
    a, b = _log(store, clock, "a", lease_s=30), _log(store, clock, "b", lease_s=30)
    a.append({NP: {"np": DOWN}}, T)
    b.append({NP: {"np": DOWN}}, T)
    assert b.standing_by
    clock.now += 31 * S  # a stopped renewing (killed)
    b.append({NP: {"np": UP}}, clock.now)
    assert not b.standing_by
    assert _events(store, "np") == [(0, 0), (31, 1)]
    a.append({NP: {"np": DOWN}}, clock.now)  # a comes back: the lease moved, it stands by
    assert a.standing_by
    assert _events(store, "np") == [(0, 0), (31, 1)]


def test_a_released_lease_is_taken_at_once() -> None:
    store, clock = MemoryEventStore(), Clock()
    a, b = _log(store, clock, "a"), _log(store, clock, "b")
    a.append({NP: {"np": UP}}, T)
    a.close()
    b.append({NP: {"np": UP}}, T + S)
    assert not b.standing_by


def test_each_flush_writes_one_create_only_segment_with_only_its_new_lines() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock)
    log.append({NP: {"np": DOWN}}, T)
    log.append({NP: {"np": DOWN}}, T + S)  # nothing new, heartbeat not due
    log.append({NP: {"np": UP}}, T + 2 * S)
    names = _segments(store)
    assert names == [
        "log/kind=nodepool/date=2026-06-01/0000000000000001.ndjson",
        "log/kind=nodepool/date=2026-06-01/0000000000000002.ndjson",
    ]
    gen = store.objects.generation(names[1])
    assert gen is not None
    lines = decode_segment(store.objects.download(names[1], gen), names[1])
    assert [(line.type, line.ts) for line in lines] == [
        (TYPE_EVENT, T + 2 * S),
        (TYPE_OBSERVED, T + 2 * S),
    ]
    assert lines[1].since == T


def test_a_segment_read_twice_changes_nothing() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock)
    log.append({NP: {"np": DOWN}}, T)
    log.append({NP: {"np": UP}}, T + S)
    [first, second] = _segments(store)
    gen = store.objects.generation(second)
    assert gen is not None
    store.objects.upload(
        first.replace("0001.ndjson", "0003.ndjson"), store.objects.download(second, gen), 0
    )
    assert _events(store, "np") == [(0, 0), (1, 1)]


def test_start_up_reads_the_snapshot_and_the_segments_after_it() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock, snapshot_interval_s=60)
    log.append({NP: {"np": DOWN}}, T)
    clock.now += 61 * S
    log.append({NP: {"np": UP}}, clock.now)  # segment 2, then the snapshot covers it
    assert store.read(NP).records["np"].timestamps == (T, T + 61 * S)
    clock.now += S
    log.append({NP: {"np": DOWN}}, clock.now)  # segment 3, after the snapshot
    loaded = load_kind(store, NP)
    assert loaded.segments_read == 1
    assert loaded.history.records["np"].timestamps == (T, T + 61 * S, T + 62 * S)


def test_the_event_file_is_exactly_the_go_format_and_the_mark_is_a_sidecar() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock)
    log.append({NP: {"np": UP}}, T)
    log.close()
    generation = store.objects.generation("node-pools.json")
    assert generation is not None
    data = store.objects.download("node-pools.json", generation)
    assert data == history_codec.encode_event_file({"np": EventRecord.trusted((T, T), b"\0\1")})
    mark_gen = store.objects.generation("log/snapshots/node-pools.json")
    assert mark_gen is not None
    mark = orjson.loads(store.objects.download("log/snapshots/node-pools.json", mark_gen))
    assert mark["generation"] == generation and mark["covers"].endswith("0000000000000001")


def test_a_go_written_file_is_the_starting_snapshot() -> None:
    store, clock = MemoryEventStore(), Clock()
    go = {"np": EventRecord.trusted((T - 100 * S, T - 50 * S), b"\0\1")}
    store.objects.upload("node-pools.json", history_codec.encode_event_file(go), 0)
    log = _log(store, clock)
    log.append({NP: {"np": DOWN}}, T)
    log.close()
    assert _events(store, "np") == [(-100, 0), (-50, 1), (0, 0)]
    assert store.read(NP).records["np"].timestamps == (T - 100 * S, T - 50 * S, T)


def test_attributes_are_recorded_and_survive_a_restart_and_a_retirement() -> None:
    store, clock = MemoryEventStore(), Clock()
    attrs = Attrs(nodepool_name="np", tpu_accelerator="tpu7x", tpu_topology="2x2x2")
    seen = Observation.build(expected=1, ready=1, attrs=attrs)
    log = _log(store, clock)
    log.append({NP: {"np": seen}}, T)
    assert load_kind(store, NP).history.attrs["np"]["tpuAccelerator"] == "tpu7x"
    restarted = _log(store, clock)
    clock.now += 40 * S  # the first process's lease lapsed
    restarted.append({NP: {}}, clock.now)  # np is gone after the restart
    [entry] = store.read_archive(NP, "np")
    assert entry.attrs["nodePoolName"] == "np" and entry.attrs["tpuTopology"] == "2x2x2"


def test_changed_attributes_alone_are_recorded() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock)
    log.append({NP: {"np": UP}}, T)
    relabelled = UP.model_copy(update={"attrs": Attrs(tpu_topology="4x4")})
    log.append({NP: {"np": relabelled}}, T + S)
    assert load_kind(store, NP).history.attrs["np"]["tpuTopology"] == "4x4"
    assert len(_segments(store)) == 2


def test_a_heartbeat_is_written_when_nothing_changes() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock, heartbeat_s=60)
    log.append({NP: {"np": UP}}, T)
    clock.now += 30 * S
    log.append({NP: {"np": UP}}, clock.now)
    assert len(_segments(store)) == 1
    clock.now += 31 * S
    log.append({NP: {"np": UP}}, clock.now)
    assert len(_segments(store)) == 2
    assert load_kind(store, NP).history.observed == [(T, T + 61 * S)]


def test_a_restart_leaves_the_unobserved_gap_out_of_the_coverage() -> None:
    store, clock = MemoryEventStore(), Clock()
    first = _log(store, clock)
    first.append({NP: {"np": UP}}, T)
    first.close()  # stopped; another process starts ten minutes later
    clock.now += 600 * S
    _log(store, clock, holder="b").append({NP: {"np": UP}}, clock.now)
    assert load_kind(store, NP).history.observed == [(T, T), (T + 600 * S, T + 600 * S)]


def test_a_corrupt_segment_is_quarantined_and_its_whole_lines_are_kept() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock)
    log.append({NP: {"np": DOWN}}, T)
    log.append({NP: {"np": UP}}, T + S)
    [_first, second] = _segments(store)
    gen = store.objects.generation(second)
    assert gen is not None
    data = store.objects.download(second, gen)
    store.objects.put_raw(second, data[:-20])  # truncated
    assert _events(store, "np") == [(0, 0), (1, 1)]  # the event line was whole
    assert store.objects.list("log/quarantine/") == [
        "log/quarantine/kind=nodepool/date=2026-06-01/0000000000000002.ndjson.corrupt"
    ]
    gen2 = store.objects.generation(second)
    assert gen2 is not None and store.objects.download(second, gen2) == data[:-20]


class _Down(MemoryEventStore):
    down = False

    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str:
        if self.down:
            raise StoreError("503 Service Unavailable")
        return super().write(kind, records, version)

    def read(self, kind: Kind) -> Snapshot:
        if self.down:
            raise StoreError("503 Service Unavailable")
        return super().read(kind)


class _DownObjects:
    """Makes every object call of a memory store fail while ``down``."""

    def __init__(self, store: _Down) -> None:
        self.store = store
        inner = store.objects
        for name in ("generation", "download", "upload", "list"):
            setattr(self, name, self._guard(getattr(inner, name)))
        self.describe = inner.describe

    def _guard(self, call):  # type: ignore[no-untyped-def]
        def guarded(*args, **kwargs):  # type: ignore[no-untyped-def]
            if self.store.down:
                raise StoreError("503 Service Unavailable")
            return call(*args, **kwargs)

        return guarded


def test_transitions_during_a_store_outage_across_a_snapshot_keep_their_timestamps() -> None:
    store, clock = _Down(), Clock()
    store.log.backend = _DownObjects(store)  # type: ignore[assignment]
    log = _log(store, clock, snapshot_interval_s=10, lease_s=30)
    log.append({NP: {"np": DOWN}}, T)
    store.down = True
    for offset in (10, 20, 40, 60):  # beyond the snapshot interval and the lease
        clock.now = T + offset * S
        observation = UP if offset in (10, 40) else DOWN
        with pytest.raises(StoreError, match="503"):
            log.append({NP: {"np": observation}}, clock.now)
    assert log.pending
    store.down = False
    clock.now += S
    log.flush()
    assert not log.pending and not log.standing_by
    assert _events(store, "np") == [(0, 0), (10, 1), (20, 0), (40, 1), (60, 0)]


def test_appending_without_flush_touches_the_store_only_to_load() -> None:
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock)
    log.append({NP: {"np": DOWN}}, T, flush=False)
    assert _segments(store) == [] and log.pending
    log.flush()
    assert _events(store, "np") == [(0, 0)]


def test_ready_once_every_required_kind_was_observed() -> None:
    log = EventLog(MemoryEventStore(), [NP, Kind.JOBSET])
    assert not log.ready
    log.append({NP: {}}, T)
    assert not log.ready
    log.append({Kind.JOBSET: {"js": UP}}, T)
    assert log.ready


class _CrashBeforeMark(MemoryEventStore):
    """Dies (as kill -9 would) between the event file and its mark."""

    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str:
        written = super().write(kind, records, version)
        raise SystemExit(f"killed after writing generation {written}")


def test_killed_between_the_snapshot_and_its_mark_the_restart_reads_each_event_once() -> None:
    crashing, clock = _CrashBeforeMark(), Clock()
    log = _log(crashing, clock, snapshot_interval_s=10)
    log.append({NP: {"np": DOWN}}, T)
    log.append({NP: {"np": UP}}, T + S)
    clock.now += 11 * S
    with pytest.raises(SystemExit):
        log.append({NP: {"np": DOWN}}, clock.now)  # segment 3, then the snapshot: killed
    store = MemoryEventStore(objects=crashing.objects)
    mark = read_mark(store, NP)
    assert mark is not None and mark.digest == store.read(NP).digest  # written first
    assert _events(store, "np") == [(0, 0), (1, 1), (11, 0)]
    assert not load_kind(store, NP).rebuilt


class _CrashBeforeFile(MemoryEventStore):
    """Dies (as kill -9 would) after the mark, before the event file it announces."""

    crash = False

    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str:
        if self.crash:
            raise SystemExit("killed before writing the event file")
        return super().write(kind, records, version)


@pytest.mark.parametrize("first", [True, False], ids=["first snapshot", "a later snapshot"])
def test_killed_between_the_mark_and_its_snapshot_the_restart_reads_each_event_once(
    first: bool,
) -> None:
    """The mark names the file about to be written and still vouches for the one before it:
    the file a crash leaves (none, or the previous one) is trusted, nothing is rebuilt."""
    crashing, clock = _CrashBeforeFile(), Clock()
    log = _log(crashing, clock, snapshot_interval_s=10)
    log.append({NP: {"np": DOWN}}, T)
    if not first:
        clock.now += 11 * S  # the next flush snapshots: the previous file
    log.append({NP: {"np": UP}}, T + S)
    assert (crashing.read(NP).digest is None) is first
    clock.now += 11 * S
    crashing.crash = True
    with pytest.raises(SystemExit):
        log.append({NP: {"np": DOWN}}, clock.now)
    store = MemoryEventStore(objects=crashing.objects)
    loaded = load_kind(store, NP)
    assert [((t - T) // S, f) for t, f in zip(*_columns(loaded), strict=True)] == [
        (0, 0),
        (1, 1),
        (11 if first else 22, 0),
    ]
    assert loaded.rebuilt is first  # no file at all: the log holds the whole history


def _columns(loaded: LoadedKind) -> tuple[tuple[int, ...], bytes]:
    record = loaded.history.records["np"]
    return record.timestamps, record.flags


def test_a_quiet_history_is_still_snapshotted_when_due() -> None:
    """Nothing changes after a transition: the persist loop still has a snapshot to write
    (and heartbeats and lease renewals), so ``due`` says so and ``flush`` writes it."""
    store, clock = MemoryEventStore(), Clock()
    log = _log(store, clock, snapshot_interval_s=60)
    log.append({NP: {"np": DOWN}}, T)
    assert not log.due and not log.pending
    clock.now = T + 61 * S
    assert log.due
    log.flush()
    assert store.read(NP).records["np"].timestamps == (T,)
    assert not log.due
