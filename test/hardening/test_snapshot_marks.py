"""A snapshot that is deleted, or replaced by an older copy, must never erase history.

Each history here is written by megamon's own event log (six transitions over two snapshots),
in a directory and in a bucket (fake-gcs-server). Its snapshot is then deleted or restored from
the copy the first snapshot wrote, the way an operator's mistake or a backup restore would.
When the log still holds what the mark covers, ``megamon events show`` and a restarted service
see all six transitions and the service writes the file again; when it does not (its first
segment expired, or the history began from a Go-format file), both refuse — one line and exit
2, not ready and a metric — and nothing is written over the old coverage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from megamon.cli.main import main
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.errors import StoreError
from megamon.recording.eventlog import REFUSED_RETRY_NS, EventLog
from megamon.recording.loading import load_kind
from megamon.stores.base import EventStore
from megamon.stores.factory import gcs_client
from megamon.stores.gcs import GcsEventStore
from megamon.stores.local import LocalEventStore
from megamon.stores.memory import MemoryEventStore
from megamon.telemetry import Instruments

S = timestamps.NANOS_PER_SECOND
T = 1_780_272_000 * S  # 2026-06-01T00:00:00Z
NP = Kind.NODEPOOL
FILE = "node-pools.json"
MARK = "log/snapshots/node-pools.json"
PATH = "megamon/clusters/c1"
GO_WRITTEN = b'{"np":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24Z"}]}}'
"""The node pool's first transition, recorded by the Go megamon before megamon took over."""


def observed(up: bool) -> Observation:
    return Observation.build(expected=1, ready=1 if up else 0, attrs=Attrs(nodepool_name="np"))


class Clock:
    def __init__(self) -> None:
        self.now = T

    def __call__(self) -> int:
        return self.now


@dataclass
class Side:
    """One kind of store: how megamon opens it, how an operator touches its objects."""

    store: Callable[[], EventStore]
    put: Callable[[str, bytes], None]
    get: Callable[[str], bytes | None]
    delete: Callable[[str], None]
    names: Callable[[], list[str]]
    cli: list[str]


def _local(root: Path) -> Side:
    def put(name: str, data: bytes) -> None:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)

    def get(name: str) -> bytes | None:
        return (root / name).read_bytes() if (root / name).exists() else None

    return Side(
        store=lambda: LocalEventStore(root),
        put=put,
        get=get,
        delete=lambda name: (root / name).unlink(),
        names=lambda: sorted(
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        ),
        cli=["--events-dir", str(root)],
    )


def _gcs(bucket: str) -> Side:
    client = gcs_client("megamon-test")
    blobs = client.bucket(bucket)

    def get(name: str) -> bytes | None:
        blob = blobs.get_blob(f"{PATH}/{name}")
        return None if blob is None else bytes(blob.download_as_bytes())

    return Side(
        store=lambda: GcsEventStore(gcs_client("megamon-test"), bucket, PATH),
        put=lambda name, data: blobs.blob(f"{PATH}/{name}").upload_from_string(data),
        get=get,
        delete=lambda name: blobs.blob(f"{PATH}/{name}").delete(),
        names=lambda: sorted(
            b.name.removeprefix(PATH + "/") for b in client.list_blobs(bucket, prefix=PATH)
        ),
        cli=["--bucket", bucket, "--path", PATH],
    )


@pytest.fixture(params=["local", "gcs"])
def side(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Side]:
    if request.param == "local":
        yield _local(tmp_path / "events")
    else:
        request.getfixturevalue("gcs_emulator_env")
        yield _gcs(request.getfixturevalue("gcs_bucket"))


def write_history(side: Side) -> bytes:
    """Six transitions of one node pool, snapshotted after the second and at the end;
    returns the first snapshot's file (the "older copy" a restore brings back)."""
    clock = Clock()
    log = EventLog(side.store(), [NP], holder="megamon-0/1", clock=clock, snapshot_interval_s=10)
    for step in range(6):
        clock.now = T + step * 10 * S
        log.append({NP: {"np": observed(up=step % 2 == 1)}}, clock.now)
        if step == 1:
            clock.now += 11 * S
            log.flush()  # the first snapshot: two transitions
            first = side.get(FILE)
    log.close()
    assert first is not None and first.count(b'"ts"') == 2
    assert side.get(FILE) != first
    return first


def show(side: Side, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    status = main(["events", "show", "nodepool", *side.cli])
    out, err = capsys.readouterr()
    return status, orjson.loads(out) if out else None, err


def transitions(document: Any) -> int:
    return len(document["np"]["upEvents"])


def restarted(side: Side, registry: CollectorRegistry, clock: Clock) -> EventLog:
    return EventLog(
        side.store(),
        [NP],
        holder="megamon-1/1",
        clock=clock,
        instruments=Instruments("megamon", registry, [NP]),
    )


@pytest.mark.parametrize("damage", ["deleted", "older copy restored"])
def test_a_lost_snapshot_is_rebuilt_from_the_log_and_written_again(
    side: Side, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write_history(side)
    if damage == "deleted":
        side.delete(FILE)
    else:
        side.put(FILE, first)
    status, document, err = show(side, capsys)
    assert status == 0, err
    assert transitions(document) == 6  # every transition is in the log's segments

    registry, clock = CollectorRegistry(), Clock()
    clock.now = T + 100 * S
    log = restarted(side, registry, clock)
    log.append({NP: {"np": observed(up=True)}}, clock.now)
    log.close()
    assert registry.get_sample_value("megamon_history_rebuilds_total", {"kind": "nodepool"}) == 1
    written = side.get(FILE)
    assert written is not None and written.count(b'"ts"') == 6  # the file holds them again
    assert len(load_kind(side.store(), NP).history.records["np"]) == 6


@pytest.mark.parametrize("cause", ["first segment expired", "history began from a Go file"])
def test_a_lost_snapshot_the_log_cannot_rebuild_is_refused_and_never_overwritten(
    side: Side, cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if cause == "history began from a Go file":
        side.put(FILE, GO_WRITTEN)
    write_history(side)
    if cause == "first segment expired":
        [segment] = [n for n in side.names() if n.endswith("0000000000000001.ndjson")]
        side.delete(segment)
    kept = side.get(FILE)
    side.delete(FILE)
    mark, before = side.get(MARK), side.names()

    status, document, err = show(side, capsys)
    assert (status, document) == (2, None)
    *_, line = err.splitlines()  # after the line saying where the history is read from
    assert line.startswith("megamon events show: nodepool: node-pools.json in ")
    assert "is missing and the log no longer holds what its mark" in line
    assert "until the file is restored" in line and "Traceback" not in err

    registry, clock = CollectorRegistry(), Clock()
    clock.now = T + 100 * S
    log = restarted(side, registry, clock)
    with pytest.raises(StoreError, match="no longer holds"):
        log.append({NP: {"np": observed(up=True)}}, clock.now)
    assert not log.ready and log.refused == [NP]  # readiness: every kind, none refused
    assert registry.get_sample_value("megamon_history_refused", {"kind": "nodepool"}) == 1
    clock.now += S
    log.flush()
    assert side.names() == before and side.get(MARK) == mark  # nothing written

    assert kept is not None
    side.put(FILE, kept)  # the operator restores the file: taken up at the next retry
    clock.now += REFUSED_RETRY_NS
    log.append({NP: {"np": observed(up=True)}}, clock.now)
    assert log.ready and log.refused == []
    assert registry.get_sample_value("megamon_history_refused", {"kind": "nodepool"}) == 0
    log.close()
    assert len(load_kind(side.store(), NP).history.records["np"]) == 6


# A property: whatever the history, the log rebuilds exactly the file its mark covers --------

HYPOTHESIS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ("a", "b", "c")
Cycle = dict[str, tuple[bool, bool]]
"""Per observed key: up, and (when down) failed. A key left out is retired that cycle."""


@HYPOTHESIS
@given(
    cycles=st.lists(
        st.dictionaries(st.sampled_from(KEYS), st.tuples(st.booleans(), st.booleans())),
        min_size=1,
        max_size=12,
    ),
    same_instant=st.lists(st.booleans(), min_size=12, max_size=12),
    snapshots=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_any_history_written_by_megamon_is_rebuilt_whole_when_its_snapshot_is_lost(
    cycles: list[Cycle], same_instant: list[bool], snapshots: list[bool]
) -> None:
    """Keys appearing, failing, recovering and retiring, cycles at one instant (a clock that
    did not move: up and down again at one timestamp), snapshots at any point: with the file
    deleted, the history read is the one megamon held, never a part of it."""
    store, clock = MemoryEventStore(), Clock()
    log = EventLog(store, [NP], clock=clock, snapshot_interval_s=0)
    observed: set[str] = set()
    for step, cycle in enumerate(cycles):
        retiring = bool(observed - set(cycle))  # archives are named by their retirement time
        if retiring or not same_instant[step]:
            clock.now += S
        observed = set(cycle)
        batch = {
            key: Observation.build(expected=1, ready=int(up), failed=failed and not up)
            for key, (up, failed) in cycle.items()
        }
        log.append({NP: batch}, clock.now, flush=snapshots[step])
    log.close()
    held = dict(log.records()[NP])
    store.objects.delete(FILE)
    loaded = load_kind(MemoryEventStore(objects=store.objects), NP)  # a restart's reading
    assert loaded.rebuilt
    assert loaded.history.records == held
