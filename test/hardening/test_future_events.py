"""An event dated in the future — 2099, inside the 2100 horizon, written by a replica whose
clock was off — must not become 73 years of down time: refused at load (counted and named),
both summaries cut at ``now`` and agreeing, and the log's partitions left on the writers' days.

The histories are written by megamon's own event log; the bad one by an event log whose clock
says 2099, as a replica with a broken clock would write it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from megamon.domain import timestamps
from megamon.domain.events import FLAG_UP
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.recording.loading import load_kind
from megamon.stores.local import LocalEventStore
from megamon.stores.segments import SegmentName, date_of
from megamon.summary.availability import Resource, Window, resource_availability
from megamon.summary.report import SettledMemo, build_report
from megamon.telemetry import Instruments

M = 60 * timestamps.NANOS_PER_SECOND
NOW = timestamps.parse("2026-05-04T18:00:00Z")
FUTURE = timestamps.parse("2099-01-01T00:00:00Z")
POOL = Attrs(nodepool_name="np", tpu_topology="2x2", tpu_chip_count=4)
UP = Observation.build(expected=1, ready=1, attrs=POOL)
DOWN = Observation.build(expected=1, ready=0, attrs=POOL)
REFUSED = "megamon_event_store_refused_events_total"


def write(store: LocalEventStore, clock: int, *steps: tuple[int, Observation]) -> None:
    """Append ``steps`` through the event log of a process whose clock reads ``clock``."""
    log = EventLog(store, {Kind.NODEPOOL}, clock=lambda: clock)
    for at, observation in steps:
        log.append({Kind.NODEPOOL: {"np": observation}}, at)
    log.close()  # a clean shutdown: snapshot and mark, lease released


@pytest.fixture
def store(tmp_path: Path) -> LocalEventStore:
    """A pool that came up 5 minutes ago and went down a minute ago; then a replica whose
    clock says 2099 saw it up again, and wrote that (its segment, snapshot and mark)."""
    history = LocalEventStore(tmp_path)
    write(history, NOW - M, (NOW - 5 * M, DOWN), (NOW - 4 * M, UP), (NOW - M, DOWN))
    write(history, FUTURE, (FUTURE, UP))
    return history


def test_the_broken_clock_wrote_what_it_believed(store: LocalEventStore) -> None:
    raw = load_kind(store, Kind.NODEPOOL).history.records["np"]  # no clock: as written
    assert raw.timestamps[-1] == FUTURE and raw.flags[-1] & FLAG_UP
    assert [s.date for s in store.log.segments(Kind.NODEPOOL)][-1] == "2099-01-01"


def test_events_beyond_now_and_the_skew_allowance_are_refused_counted_and_named(
    store: LocalEventStore, caplog: pytest.LogCaptureFixture
) -> None:
    loaded = load_kind(store, Kind.NODEPOOL, NOW)
    record = loaded.history.records["np"]
    assert record.timestamps == (NOW - 5 * M, NOW - 4 * M, NOW - M)
    assert {(r.source, r.key, r.ts) for r in loaded.refused} == {("node-pools.json", "np", FUTURE)}
    assert "key 'np', event at 2099-01-01T00:00:00Z is beyond now plus the clock skew" in (
        caplog.text
    )
    assert max(end for _, end in loaded.history.observed) <= NOW + timestamps.MAX_CLOCK_SKEW_NS

    registry = CollectorRegistry()
    log = EventLog(
        store, {Kind.NODEPOOL}, clock=lambda: NOW, instruments=Instruments("megamon", registry)
    )
    assert registry.get_sample_value(REFUSED, {"kind": "nodepool"}) == 0.0
    log.append({Kind.NODEPOOL: {"np": DOWN}}, NOW)  # still down: nothing new to append
    assert registry.get_sample_value(REFUSED, {"kind": "nodepool"}) == 1.0
    assert log.records()[Kind.NODEPOOL]["np"] == record
    log.close()


def test_the_service_and_the_report_agree_and_neither_counts_73_years(
    store: LocalEventStore,
) -> None:
    record = load_kind(store, Kind.NODEPOOL, NOW).history.records["np"]
    service = (
        build_report(
            {Kind.NODEPOOL: {"np": DOWN}},
            {Kind.NODEPOOL: {"np": record}},
            kinds={Kind.NODEPOOL},
            scheduling={},
            observed_at={},
            now=NOW,
            memo=SettledMemo(),
        )
        .kind(Kind.NODEPOOL)
        .summaries["np"]
    )
    figures = resource_availability(Resource(Kind.NODEPOOL, "np", record), Window(now=NOW))
    assert figures is not None
    assert service.interruption_count == figures.incidents.interruptions == 1
    assert service.recovery_count == figures.incidents.recoveries == 0
    assert service.down_time == 2 * M  # 1 minute provisioning, 1 minute down since
    assert figures.times.down == M and figures.times.provisioning == M


def test_an_event_within_the_skew_allowance_is_kept_and_waits_for_now_in_both(
    tmp_path: Path,
) -> None:
    store = LocalEventStore(tmp_path)
    ahead = NOW + 30 * M  # a replica's clock half an hour ahead
    write(store, NOW, (NOW - 5 * M, DOWN), (NOW - 4 * M, UP))
    write(store, ahead, (ahead, DOWN))
    loaded = load_kind(store, Kind.NODEPOOL, NOW)
    assert loaded.refused == [] and loaded.history.records["np"].timestamps[-1] == ahead
    record = loaded.history.records["np"]
    memo = SettledMemo()
    observations, records = {Kind.NODEPOOL: {"np": UP}}, {Kind.NODEPOOL: {"np": record}}
    for now, interruptions in ((NOW, 0), (ahead, 1)):
        service = (
            build_report(
                observations,
                records,
                kinds={Kind.NODEPOOL},
                scheduling={},
                observed_at={},
                now=now,
                memo=memo,
            )
            .kind(Kind.NODEPOOL)
            .summaries["np"]
        )
        figures = resource_availability(Resource(Kind.NODEPOOL, "np", record), Window(now=now))
        assert figures is not None
        assert service.interruption_count == figures.incidents.interruptions == interruptions
        assert service.up_time == figures.times.up


def test_segments_after_a_future_dated_one_are_filed_under_the_writers_day(
    store: LocalEventStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    write(store, NOW, (NOW, UP))  # back up now, written by a sane clock
    names = store.log.segments(Kind.NODEPOOL)
    assert [s.date for s in names][-2:] == ["2099-01-01", date_of(NOW)]
    assert names[-1].sequence > names[-2].sequence  # still in append order
    loaded = load_kind(store, Kind.NODEPOOL, NOW)
    assert loaded.history.records["np"].timestamps[-1] == NOW
    assert loaded.covers == names[-1]
    # A mark that covers the 2099 segment (a snapshot right after it) still finds the later
    # one, though its name sorts before it.
    assert (
        store.log.segments(Kind.NODEPOOL, SegmentName(names[-2].sequence, "2099-01-01"), NOW)[-1]
        == names[-1]
    )
