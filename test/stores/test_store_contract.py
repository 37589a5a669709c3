"""One behavioural suite for every event store: memory, a local directory, and GCS (the real
google-cloud-storage client against fake-gcs-server, through the fault proxy).

A history the Go megamon wrote must be read and written back unchanged; two writers must
never lose each other's events; a corrupt file is copied aside, never overwritten first; a
retired resource's history is archived, never deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from internal.faultproxy import FaultProxy
from internal.gcsemu.client import fast_retry, make_storage_client
from megamon.codec import history as codec
from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.errors import Conflict
from megamon.recording.eventlog import EventLog
from megamon.stores.base import EventStore, Snapshot
from megamon.stores.gcs import GcsEventStore
from megamon.stores.local import LocalEventStore
from megamon.stores.memory import MemoryEventStore
from megamon.telemetry import Instruments

PATH = "megamon/clusters/test"
GO_WRITTEN = (
    b'{"np-a":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24.123456789Z"},'
    b'{"up":false,"f":true,"ts":"2026-05-04T18:30:00Z"},'
    b'{"up":true,"ts":"2026-05-04T18:41:00.000000001Z"},'
    b'{"up":false,"ed":true,"ts":"2026-05-05T02:00:00Z"}]},'
    b'"np-b":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24Z"}]}}'
)
T = 1_780_272_000 * 10**9  # 2026-06-01T00:00:00Z, after every event of GO_WRITTEN


def up(name: str = "") -> Observation:
    return Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name=name))


def down(name: str = "") -> Observation:
    return Observation.build(expected=1, ready=0, attrs=Attrs(nodepool_name=name))


@dataclass
class Harness:
    """A store plus raw access to the objects under it, and a way to open a second writer."""

    make_store: Callable[[Instruments], EventStore]
    put_raw: Callable[[str, bytes], None]
    get_raw: Callable[[str], bytes | None]
    names: Callable[[], list[str]]
    registry: CollectorRegistry
    instruments: Instruments | None = None

    def store(self) -> EventStore:
        if self.instruments is None:
            self.instruments = Instruments("megamon", self.registry)
        return self.make_store(self.instruments)

    def second_store(self) -> EventStore:
        return self.make_store(Instruments.unregistered())


def _memory() -> Harness:
    first = MemoryEventStore(PATH)
    objects = first.objects

    def make(instruments: Instruments) -> EventStore:
        return MemoryEventStore(PATH, instruments=instruments, objects=objects)  # one namespace

    return Harness(
        make_store=make,
        put_raw=lambda name, data: objects.put_raw(f"{PATH}/{name}", data),
        get_raw=lambda name: _memory_get(objects, f"{PATH}/{name}"),
        names=lambda: [n.removeprefix(PATH + "/") for n in objects.list(PATH + "/")],
        registry=CollectorRegistry(),
    )


def _memory_get(objects: Any, name: str) -> bytes | None:
    generation = objects.generation(name)
    return None if generation is None else bytes(objects.download(name, generation))


def _local(root: Path) -> Harness:
    def put(name: str, data: bytes) -> None:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)

    def get(name: str) -> bytes | None:
        return (root / name).read_bytes() if (root / name).exists() else None

    def names() -> list[str]:
        return sorted(
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    return Harness(
        make_store=lambda i: LocalEventStore(root, instruments=i),
        put_raw=put,
        get_raw=get,
        names=names,
        registry=CollectorRegistry(),
    )


def _gcs(proxy: FaultProxy, direct: Any, bucket: str) -> Harness:
    def make(instruments: Instruments) -> EventStore:
        client = make_storage_client(proxy.endpoint)
        return GcsEventStore(
            client, bucket, PATH, instruments=instruments, retry=fast_retry(), timeout=(2, 2)
        )

    def put(name: str, data: bytes) -> None:
        direct.bucket(bucket).blob(f"{PATH}/{name}").upload_from_string(data)

    def get(name: str) -> bytes | None:
        blob = direct.bucket(bucket).get_blob(f"{PATH}/{name}")
        return None if blob is None else bytes(blob.download_as_bytes())

    def names() -> list[str]:
        return sorted(
            b.name.removeprefix(PATH + "/") for b in direct.list_blobs(bucket, prefix=PATH + "/")
        )

    return Harness(make, put, get, names, CollectorRegistry())


@pytest.fixture(params=["memory", "local", "gcs"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "memory":
        yield _memory()
    elif request.param == "local":
        yield _local(tmp_path / "events")
    else:
        proxy = request.getfixturevalue("gcs_proxy")
        direct = request.getfixturevalue("gcs_client")
        yield _gcs(proxy, direct, request.getfixturevalue("gcs_bucket"))


def test_a_go_written_history_is_read_and_written_back_unchanged(harness: Harness) -> None:
    harness.put_raw("node-pools.json", GO_WRITTEN)
    store = harness.store()
    snapshot = store.read(Kind.NODEPOOL)
    assert snapshot.version is not None
    assert snapshot.records == codec.decode_event_file(GO_WRITTEN, "go")
    store.write(Kind.NODEPOOL, snapshot.records, snapshot.version)
    assert harness.get_raw("node-pools.json") == GO_WRITTEN


@pytest.mark.parametrize("spacing", [b"", b" "], ids=["canonical", "general-decoder"])
def test_a_large_snapshot_is_read_with_the_digest_of_its_bytes(
    harness: Harness, spacing: bytes
) -> None:
    """A snapshot of megabytes has its digest taken beside the parsing: the digest is still
    that of the bytes stored, whichever decoder reads them (a mark compares it)."""
    events = b",".join(
        b'{"up":%s,"ts":"2026-05-%02dT%02d:00:00Z"}' % (b"true" if i % 2 else b"false", d, h)
        for i, (d, h) in enumerate((d, h) for d in range(1, 29) for h in range(24))
    )
    record = b'{"upEvents":[' + events + b"]}"
    data = b"{" + (b"," + spacing).join(b'"np-%d":%s' % (i, record) for i in range(60)) + b"}"
    assert len(data) > 1 << 20
    harness.put_raw("node-pools.json", data)
    snapshot = harness.store().read(Kind.NODEPOOL)
    assert snapshot.digest == codec.file_digest(data)
    assert snapshot.records == codec.decode_event_file(data, "x")
    assert len(snapshot.records["np-59"]) == 28 * 24


def test_taking_over_a_go_history_appends_without_loss(harness: Harness) -> None:
    harness.put_raw("node-pools.json", GO_WRITTEN)
    log = EventLog(harness.store(), [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np-a": up(), "np-b": up()}}, T)
    log.close()
    written = codec.decode_event_file(harness.get_raw("node-pools.json") or b"", "x")
    before = codec.decode_event_file(GO_WRITTEN, "go")
    for key in ("np-a", "np-b"):
        assert written[key].timestamps[:-1] == before[key].timestamps
        assert written[key].events[-1].up and written[key].timestamps[-1] == T


def test_absent_history_reads_empty_and_creation_is_compare_and_swap(harness: Harness) -> None:
    store = harness.store()
    assert store.read(Kind.JOBSET) == Snapshot({}, None)
    record = EventRecord.trusted((T,), b"\x00")
    version = store.write(Kind.JOBSET, {"js": record}, None)
    with pytest.raises(Conflict):
        store.write(Kind.JOBSET, {"js": record}, None)
    assert store.read(Kind.JOBSET) == Snapshot({"js": record}, version)
    newer = store.write(Kind.JOBSET, {}, version)
    with pytest.raises(Conflict):
        store.write(Kind.JOBSET, {"js": record}, version)
    assert store.read(Kind.JOBSET).version == newer


def test_a_second_writer_stands_by_and_writes_nothing(harness: Harness) -> None:
    """Two processes on one history (a second client of the same bucket): the second finds
    the writer lease held, stands by, says so in a metric, and appends nothing."""
    first = EventLog(harness.store(), [Kind.NODEPOOL], holder="first")
    first.append({Kind.NODEPOOL: {"x": down(), "y": down()}}, T)
    second = EventLog(
        harness.second_store(), [Kind.NODEPOOL], holder="second", instruments=harness.instruments
    )
    second.append({Kind.NODEPOOL: {"x": up(), "y": up()}}, T + 1)
    assert second.standing_by
    assert harness.registry.get_sample_value("megamon_history_writer_standing_by") == 1.0
    first.append({Kind.NODEPOOL: {"x": down(), "y": up()}}, T + 2)
    first.close()
    final = harness.store().read(Kind.NODEPOOL).records
    assert final["x"].timestamps == (T,)  # the second's view was never written
    assert final["y"].timestamps == (T, T + 2)
    second.append({Kind.NODEPOOL: {"x": up(), "y": up()}}, T + 3)  # released: it takes over
    assert not second.standing_by
    assert harness.registry.get_sample_value("megamon_history_writer_standing_by") == 0.0


def test_a_corrupt_file_is_copied_aside_and_never_overwritten_first(harness: Harness) -> None:
    harness.put_raw("jobsets.json", b'{"js": {"upEvents": [{"up": 1}]}')
    store = harness.store()
    snapshot = store.read(Kind.JOBSET)
    assert snapshot.records == {} and snapshot.version is not None
    quarantined = [n for n in harness.names() if n.startswith("jobsets.json.corrupt-")]
    assert len(quarantined) == 1
    assert harness.get_raw(quarantined[0]) == b'{"js": {"upEvents": [{"up": 1}]}'
    assert (
        harness.registry.get_sample_value(
            "megamon_event_store_corrupt_objects_total", {"kind": "jobset"}
        )
        == 1.0
    )

    log = EventLog(store, [Kind.JOBSET])
    log.append({Kind.JOBSET: {"js2": up()}}, T)
    log.close()
    assert set(codec.decode_event_file(harness.get_raw("jobsets.json") or b"", "x")) == {"js2"}
    assert harness.get_raw(quarantined[0]) == b'{"js": {"upEvents": [{"up": 1}]}'


def test_any_key_archives_and_reads_back_whatever_its_length_and_characters(
    harness: Harness,
) -> None:
    """Object names are safe for any key: slashes, dots, spaces, non-ASCII, 10 KB."""
    store = harness.store()
    keys = ["a/../b", "ns/with space/ü", "x" * 10_000, "y" * 9_000 + "/"]
    log = EventLog(store, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {key: up(key[:50]) for key in [*keys, "stays"]}}, T)
    log.append({Kind.NODEPOOL: {"stays": up("stays")}}, T + 5)
    log.close()
    assert store.archived_keys(Kind.NODEPOOL) == sorted(keys)
    for key in keys:
        [entry] = store.read_archive(Kind.NODEPOOL, key)
        assert entry.key == key and entry.retired_at == T + 5
    assert set(store.read(Kind.NODEPOOL).records) == {"stays"}


def test_a_retirement_archived_twice_is_one_retirement(harness: Harness) -> None:
    """Killed between archiving a key and recording its retirement, a restarted megamon
    archives it again, later: the same events, so the same retirement."""
    store = harness.store()
    record = EventRecord.trusted((T, T + 1), bytes((0, 1)))
    first = ArchiveEntry(kind="nodepool", key="b", retired_at=T + 5, attrs={}, record=record)
    name = store.archive(first)
    assert store.archive(first.model_copy(update={"retired_at": T + 60})) == name
    assert store.archive(first) == name  # and the very same entry once more: the same object
    assert store.read_archive(Kind.NODEPOOL, "b") == [first]
    assert [n for n in harness.names() if n.startswith("archive/")] == ["archive/nodepool/b.json"]
    relived = EventRecord.trusted((T + 100, T + 101), bytes((0, 1)))  # a later lifetime
    second = first.model_copy(update={"retired_at": T + 200, "record": relived})
    store.archive(second)
    assert store.archive(second.model_copy(update={"retired_at": T + 260})) != name
    assert store.read_archive(Kind.NODEPOOL, "b") == [first, second]
    assert [n for n in harness.names() if n.startswith("archive/")] == [
        "archive/nodepool/b.json",
        f"archive/nodepool/b@{T + 200}.json",
    ]


class _KilledAfterArchiving:
    """A store whose process dies (as kill -9 would) right after archiving, before the
    segment that retires the key."""

    def __init__(self, inner: EventStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def archive(self, entry: ArchiveEntry) -> str:
        self._inner.archive(entry)
        raise SystemExit("killed after archiving")


def test_killed_while_archiving_the_restart_archives_nothing_new(harness: Harness) -> None:
    """The restart still holds the key (its retirement was never written) and retires it
    again, later, with the same events: one archive object, one retirement."""
    dying: Any = _KilledAfterArchiving(harness.store())
    log = EventLog(dying, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"a": up("a"), "b": up("b")}}, T)
    with pytest.raises(SystemExit):
        log.append({Kind.NODEPOOL: {"a": up("a")}}, T + 5)
    restarted = EventLog(harness.second_store(), [Kind.NODEPOOL])  # the same holder: taken over
    restarted.append({Kind.NODEPOOL: {"a": up("a")}}, T + 60)
    restarted.close()
    assert [n for n in harness.names() if n.startswith("archive/")] == ["archive/nodepool/b.json"]
    [entry] = harness.store().read_archive(Kind.NODEPOOL, "b")
    assert entry.retired_at == T + 5


def test_a_retired_resource_is_archived_with_its_last_attrs(harness: Harness) -> None:
    store = harness.store()
    log = EventLog(store, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"a": up("a"), "b": up("b")}}, T)
    log.append({Kind.NODEPOOL: {"a": up("a")}}, T + 5)
    log.close()

    assert set(store.read(Kind.NODEPOOL).records) == {"a"}
    assert store.archived_keys(Kind.NODEPOOL) == ["b"]
    [entry] = store.read_archive(Kind.NODEPOOL, "b")
    assert entry == ArchiveEntry(
        kind="nodepool",
        key="b",
        retired_at=T + 5,
        attrs=Attrs(nodepool_name="b").model_dump(by_alias=True),
        record=EventRecord.trusted((T, T), b"\x00\x01"),
    )
    assert "archive/nodepool/b.json" in harness.names()


def test_a_key_retired_twice_keeps_both_retirements(harness: Harness) -> None:
    store = harness.store()
    log = EventLog(store, [Kind.NODEPOOL])
    for step, observed in enumerate([{"a", "b"}, {"a"}, {"a", "b"}, {"a"}]):
        log.append({Kind.NODEPOOL: {k: down(k) for k in observed}}, T + step)
    entries = store.read_archive(Kind.NODEPOOL, "b")
    assert [e.retired_at for e in entries] == [T + 1, T + 3]
    assert [e.record.timestamps for e in entries] == [(T,), (T + 2,)]
    assert store.archived_keys(Kind.NODEPOOL) == ["b"]


def test_archiving_the_same_retirement_again_is_idempotent(harness: Harness) -> None:
    store = harness.store()
    entry = ArchiveEntry(kind="slice", key="s/1", retired_at=T, record=EventRecord())
    first = store.archive(entry)
    assert store.archive(entry) == first
    assert store.read_archive(Kind.SLICE, "s/1") == [entry]
    assert store.archived_keys(Kind.SLICE) == ["s/1"]
