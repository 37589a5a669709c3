"""Every JobSet restart, through the real Kubernetes client and the emulator: whole (with and
without the ``RestartingJobSet`` condition), single-Job, and in place — one of 2 s while the
aggregation interval is minutes long, seen on the watch path alone. Each is one interruption
with reason ``restart`` in the durable history, counted by kind, timed by the server's
condition when it gives one."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from megamon.cli import report_format, report_html
from megamon.cli.report import read_resources
from megamon.domain import interruptions, restarts
from megamon.domain.events import UpEvent
from megamon.domain.kinds import Kind
from megamon.domain.observations import JobSetAttrs, Observation
from megamon.domain.reports import Report
from megamon.recording.loading import load_kind
from megamon.stores.memory import MemoryEventStore
from megamon.summary.availability import Window, availability_report
from test.integration.scenarios.world import Megamon, World

S = 1_000_000_000


class Clock:
    """megamon's clock, on a whole second (as the server's condition times are): it moves
    only when the test says."""

    def __init__(self) -> None:
        self.now = time.time_ns() // S * S

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: int) -> int:
        self.now += seconds * S
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def megamon(world: World, clock: Clock) -> Iterator[Megamon]:
    running = Megamon(world, clock=clock)
    yield running
    running.stop()


def jobset(report: Report, uid: str) -> Observation | None:
    return report.kind(Kind.JOBSET).observations.get(uid)


def running(world: World, megamon: Megamon) -> str:
    uid = world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1, restarts=0, job_restarts=[0])
    megamon.settle(lambda r: (obs := jobset(r, uid)) is not None and obs.up)
    return uid


def settle_on(megamon: Megamon, uid: str, check: Callable[[Observation], bool]) -> Observation:
    report = megamon.settle(lambda r: (obs := jobset(r, uid)) is not None and check(obs))
    found = jobset(report, uid)
    assert found is not None
    return found


def events(megamon: Megamon, uid: str) -> tuple[UpEvent, ...]:
    assert megamon.aggregator.persist_once()
    return load_kind(megamon.store, Kind.JOBSET).history.records[uid].events


def assert_reported_timed_by(megamon: Megamon, uid: str, now: int, timed: str) -> None:
    """``megamon report`` says how the restart was timed: the resource's JSON field, the
    table's reasons cell and the page's tooltip of the restart's band."""
    resources = list(read_resources(megamon.store, [Kind.JOBSET], {}, now))
    report = availability_report(resources, Window(now=now, since=None))
    (found,) = [r for r in report_format.report_dict(report)["resources"] if r["key"] == uid]
    assert found["restartTimedBy"] == timed
    (restarted,) = found["interruptions"]
    assert restarted["reason"] == interruptions.RESTART
    assert f"restart 1 (latest restart timed: {timed})" in report_format.render_table(report)
    assert f"restart, timed by {timed}: " in report_html.render_html(report)


def restart(down_at: int, up_at: int) -> tuple[UpEvent, UpEvent]:
    return UpEvent(up=False, ts=down_at, reason=interruptions.RESTART), UpEvent(up=True, ts=up_at)


def test_a_whole_restart_is_timed_by_the_restarting_condition(
    world: World, megamon: Megamon, clock: Clock
) -> None:
    uid = running(world, megamon)
    seen_up = clock.now
    began = clock.advance(3)
    clock.advance(7)  # megamon looks later than the server's transition
    world.jobset_status("train", ready=0, restarts=1, restarting=("True", "FailurePolicy_r", began))
    settle_on(megamon, uid, lambda obs: obs.reason == interruptions.RESTART)
    ended = clock.advance(5)
    clock.advance(10)
    world.jobset_status("train", ready=1, restarts=1, restarting=("False", "JobsReady", ended))
    back = settle_on(megamon, uid, lambda obs: obs.up)
    assert events(megamon, uid)[1:] == (UpEvent(up=True, ts=seen_up), *restart(began, ended))
    assert isinstance(back.attrs, JobSetAttrs)
    assert back.attrs.restart_timed_by == restarts.TIMED_BY_CONDITION
    assert dict(back.restart_counts)[restarts.KIND_JOBSET] == 1
    assert_reported_timed_by(megamon, uid, clock.now, restarts.TIMED_BY_CONDITION)


def test_a_whole_restart_without_the_condition_is_timed_when_megamon_saw_it(
    world: World, megamon: Megamon, clock: Clock
) -> None:
    """A JobSet before v0.12.0 writes no ``RestartingJobSet``: the count and the ready Jobs
    say it all, at megamon's own looks."""
    uid = running(world, megamon)
    down_at = clock.advance(10)
    world.jobset_status("train", ready=0, restarts=1)
    settle_on(megamon, uid, lambda obs: obs.reason == interruptions.RESTART)
    up_at = clock.advance(10)
    world.jobset_status("train", ready=1, restarts=1)
    back = settle_on(megamon, uid, lambda obs: obs.up)
    assert events(megamon, uid)[2:] == restart(down_at, up_at)
    assert isinstance(back.attrs, JobSetAttrs)
    assert back.attrs.restart_timed_by == restarts.TIMED_BY_OBSERVED
    assert_reported_timed_by(megamon, uid, clock.now, restarts.TIMED_BY_OBSERVED)


def test_a_single_job_restart_is_a_restart_of_its_own_kind(
    world: World, megamon: Megamon, clock: Clock
) -> None:
    uid = running(world, megamon)
    down_at = clock.advance(10)
    world.jobset_status("train", ready=0, restarts=0, job_restarts=[1])
    down = settle_on(megamon, uid, lambda obs: not obs.up)
    assert down.reason == interruptions.RESTART
    up_at = clock.advance(10)
    world.jobset_status("train", ready=1, restarts=0, job_restarts=[1])
    back = settle_on(megamon, uid, lambda obs: obs.up)
    assert events(megamon, uid)[2:] == restart(down_at, up_at)
    assert dict(back.restart_counts) == {"jobset": 0, "job": 1, "in-place": 0}


def _history(store: MemoryEventStore, uid: str) -> tuple[UpEvent, ...]:
    record = load_kind(store, Kind.JOBSET).history.records.get(uid)
    return record.events if record is not None else ()


def _await_history(
    store: MemoryEventStore, uid: str, check: Callable[[tuple[UpEvent, ...]], bool]
) -> tuple[UpEvent, ...]:
    """Wait until the history megamon's loops write satisfies ``check`` (no timing)."""
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        found = _history(store, uid)
        if check(found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"the history never satisfied the check: {_history(store, uid)}")


@pytest.mark.parametrize("lasting_s", [2.0, 0.0])
def test_an_in_place_restart_is_counted_on_the_watch_path_whatever_the_interval(
    world: World, lasting_s: float
) -> None:
    """Pods restart in place (KEP-467): the previous attempt catches up with the current one,
    then the current one moves on; ``status.restarts`` stays 0 and the Jobs stay ready. With
    a 10-minute aggregation interval only the watch path sees it: one restart interruption
    of about its length — and one lasting no time at all (both writes before megamon looks)
    is the count that jumped, counted all the same."""
    store = MemoryEventStore()
    megamon = Megamon(world, store=store, aggregation_s=600.0)
    megamon.aggregator.start()
    try:
        uid = world.jobset("train", replicas=1)
        world.jobset_status("train", ready=1, restarts=0, in_place=(None, 0))
        _await_history(store, uid, lambda found: bool(found) and found[-1].up)
        began = time.time_ns()
        world.jobset_status("train", ready=1, restarts=0, in_place=(0, 0))
        if lasting_s:
            time.sleep(lasting_s)  # the restart itself: pods restarting in place
        ended = time.time_ns()
        world.jobset_status("train", ready=1, restarts=0, in_place=(0, 1))
        found = _await_history(store, uid, lambda found: len(found) >= 4 and found[-1].up)
        report = megamon.settle(lambda r: jobset(r, uid) is not None)  # one cycle, to count
    finally:
        megamon.aggregator.stop()
        megamon.stop()
    down, up = found[2:]
    assert (down.up, down.reason, up.up) == (False, interruptions.RESTART, True)
    assert len(found) == 4
    if lasting_s:  # seen in progress: stamped within a coalescing second of each write
        assert began <= down.ts <= began + 2 * S
        assert ended <= up.ts <= ended + 2 * S
    counts = dict(report.kind(Kind.JOBSET).observations[uid].restart_counts)
    assert counts == {"jobset": 0, "job": 0, "in-place": 1}
