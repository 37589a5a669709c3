"""One writer per history, whatever the clocks do: a holder whose wall clock steps back keeps
renewing and stays the only writer; a holder that lost the lease writes nothing more and
stands by until it holds it again; two processes that share a host name and a pid are never
taken for one another. Each on a real history directory written by megamon's event log."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from megamon.codec.log import (
    TYPE_EVENT,
    LeaseHolder,
    LeaseRecord,
    LogLine,
    decode_lease,
    encode_lease,
    encode_segment,
)
from megamon.domain import timestamps
from megamon.domain.events import FLAG_UP
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.recording.eventlog import EventLog
from megamon.recording.loading import load_kind
from megamon.stores.lease import WriterLease, holder_gone, this_process
from megamon.stores.local import LocalEventStore
from megamon.stores.segments import SegmentName, date_of
from megamon.telemetry import Instruments

T = 1_780_272_000 * timestamps.NANOS_PER_SECOND
S = timestamps.NANOS_PER_SECOND
NP = Kind.NODEPOOL
UP = Observation.build(expected=1, ready=1)
DOWN = Observation.build(expected=1, ready=0)
LEASE = "log/writer-lease.json"


class Clock:
    """A clock the test moves by hand (wall or monotonic)."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Writer:
    """One ``megamon run``'s event log on ``root``, with its own clocks and gauge."""

    def __init__(self, root: Path, name: str, wall: int = T) -> None:
        self.wall, self.mono = Clock(wall), Clock(0)
        self.registry = CollectorRegistry()
        self.log = EventLog(
            LocalEventStore(root),
            [NP],
            holder=name,
            clock=self.wall,
            monotonic=self.mono,
            lease_s=30,
            instruments=Instruments("megamon", self.registry),
        )

    def step(self, seconds: int) -> None:
        self.wall.now += seconds * S
        self.mono.now += seconds * S

    def observe(self, observation: Observation) -> None:
        self.log.append({NP: {"np": observation}}, self.wall.now)

    @property
    def gauge(self) -> float | None:
        return self.registry.get_sample_value("megamon_history_writer_standing_by")


def _segments(root: Path) -> list[Path]:
    return sorted((root / "log").glob("kind=*/date=*/*.ndjson"))


def _events(root: Path) -> list[tuple[int, bool]]:
    record = load_kind(LocalEventStore(root), NP).history.records["np"]
    return [(t, bool(f & FLAG_UP)) for t, f in zip(record.timestamps, record.flags, strict=True)]


def test_a_holder_whose_wall_clock_steps_back_keeps_renewing_and_is_the_only_writer(
    tmp_path: Path,
) -> None:
    """The holder's wall clock steps back an hour after it took the lease. It still renews
    every 10 s (monotonic), so the second process watching it never sees it lapse: one
    gauge at 0, one at 1, for the whole two minutes, and a 6 s outage is 6 s."""
    a = Writer(tmp_path, "a")
    a.log.append({NP: {}}, a.wall.now)  # takes the lease
    a.wall.now -= 3600 * S
    b = Writer(tmp_path, "b")
    b.observe(UP)
    renewed = set()
    for second in range(0, 120, 2):
        a.step(2)
        b.step(2)
        a.observe(DOWN if 60 <= second < 66 else UP)
        b.observe(DOWN if 60 <= second < 66 else UP)
        assert (a.gauge, b.gauge) == (0.0, 1.0), f"{second} s after the step"
        assert not a.log.standing_by and b.log.standing_by
        lease = decode_lease((tmp_path / LEASE).read_bytes(), LEASE)
        assert lease.holder.name == "a"
        renewed.add(lease.acquired)
    assert len(renewed) >= 11  # every 10 s, on the monotonic clock
    events = _events(tmp_path)  # stamped by a's clock: first seen (down, up), the outage
    first = events[0][0]
    assert [((t - first) // S, up) for t, up in events] == [
        (0, False),
        (0, True),
        (60, False),
        (66, True),
    ]


@pytest.mark.parametrize("paused_s", [5, 40], ids=["within-its-deadline", "past-its-deadline"])
def test_a_writer_that_lost_the_lease_stands_by_and_writes_nothing_more(
    tmp_path: Path, paused_s: int
) -> None:
    """``a`` stops (a long pause, a partition) and ``b`` sees its lease unchanged for 30 s and
    takes over, recording a 6 s outage. When ``a`` runs again, its flush's check (within
    its own deadline) or its renewal (past it) meets ``b``'s lease: it stands by at once
    and stays so, and none of its stale view reaches the history."""
    a, b = Writer(tmp_path, "a"), Writer(tmp_path, "b")
    a.observe(UP)
    b.observe(UP)
    assert b.log.standing_by
    for _ in range(7):  # a is paused; b watches its lease stand still, then takes it
        b.step(5)
        b.observe(UP)
    assert not b.log.standing_by and b.gauge == 0.0
    b.step(1)
    b.observe(DOWN)
    b.step(6)
    b.observe(UP)
    written = _segments(tmp_path)
    a.wall.now, a.mono.now = b.wall.now, paused_s * S
    for _ in range(3):
        a.observe(DOWN)  # a's stale view
        assert a.log.standing_by and a.gauge == 1.0
        a.step(1)
    assert _segments(tmp_path) == written
    events = [((t - T) // S, up) for t, up in _events(tmp_path)]
    assert events == [(0, False), (0, True), (36, False), (42, True)]


def test_a_writer_whose_segment_meets_another_stands_by_until_it_holds_the_lease_again(
    tmp_path: Path,
) -> None:
    """A segment another process created at our next sequence number: the writer drops the
    lease and what it holds (gauge 1) instead of writing on; on its next batch it takes
    the lease again (still its own) and reads the history afresh, the other's lines too."""
    a = Writer(tmp_path, "a")
    a.observe(UP)
    foreign = [LogLine(TYPE_EVENT, "np", T + 2 * S, 0, {}, detail="")]
    store = LocalEventStore(tmp_path)
    store.log.create(NP, SegmentName(2, date_of(T)), encode_segment("", NP.value, foreign))
    a.step(1)
    a.observe(DOWN)  # its segment 2 exists: another writer's
    assert a.log.standing_by and a.gauge == 1.0
    a.step(2)
    a.observe(UP)
    assert not a.log.standing_by and a.gauge == 0.0
    assert [((t - T) // S, up) for t, up in _events(tmp_path)] == [
        (0, False),
        (0, True),
        (2, False),
        (3, True),
    ]


# identity --------------------------------------------------------------------------------

needs_proc = pytest.mark.skipif(
    not Path("/proc/self/ns/pid").exists(), reason="PID namespaces are a Linux /proc feature"
)


def _unused_pid() -> int:
    """A pid no process can have: above the kernel's limit."""
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def test_two_processes_never_share_an_identity_and_operators_can_read_it() -> None:
    first, second = this_process(), this_process()
    assert first != second  # a nonce each
    assert first.name == second.name == f"{socket.gethostname()}/{os.getpid()}"
    raw = orjson.loads(encode_lease(LeaseRecord(first, T + 30 * S, T)))
    assert raw["holder"] == first.name and raw["expires"] == "2026-06-01T00:00:30Z"
    assert decode_lease(encode_lease(LeaseRecord(first, T + 30 * S, T)), LEASE).holder == first


@needs_proc
def test_a_holder_in_another_pid_namespace_is_never_taken_for_gone(tmp_path: Path) -> None:
    """Same host name, a pid that does not exist here: in this PID namespace that is a
    process that ended (taken over at once); in another one it may be alive (waited for)."""
    me = this_process()
    ended = LeaseHolder(
        f"{me.host}/{_unused_pid()}",
        host=me.host,
        pid=_unused_pid(),
        boot_id=me.boot_id,
        pid_namespace=me.pid_namespace,
        nonce="0123",
    )
    elsewhere = LeaseHolder(
        ended.name,
        host=me.host,
        pid=_unused_pid(),
        boot_id=me.boot_id,
        pid_namespace="pid:[1]",
        nonce="4567",
    )
    assert holder_gone(ended) and not holder_gone(elsewhere)
    assert not holder_gone(LeaseHolder(f"{me.host}/{_unused_pid()}"))  # no namespace: unknown

    for holder, taken in ((elsewhere, False), (ended, True)):
        store = LocalEventStore(tmp_path / holder.nonce)
        backend, name = store.log.backend, store.log.name("writer-lease.json")
        backend.upload(name, encode_lease(LeaseRecord(holder, T + 30 * S, T)), 0)
        lease = WriterLease(backend, name, me, clock=Clock(T), monotonic=Clock(0))
        assert lease.ensure() is taken
