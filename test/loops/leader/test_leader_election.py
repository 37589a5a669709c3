"""Leader election on a Lease, with the real kubernetes client against the Kubernetes emulator:
one leader among candidates, hand-over on release and on a crash, stepping down when renewals
fail (500s, a stopped API server, a hung call), 409 as a lost round, and the Lease's record
(holder, transitions, MicroTime format).

Durations are short (lease 1.0 s, renew deadline 0.6 s, retry 0.1 s). Tests that need exact
timing drive `try_acquire_or_renew()` by hand with a fake clock instead of threads.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from internal.fakekube.fakekube import FakeKube
from megamon.loops.leader import LeaseElector, default_identity

NAMESPACE = "megamon-system"
NAME = "megamon-leader"
LEASE = 1.0
DEADLINE = 0.6
RETRY = 0.1
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Candidate:
    """An elector and how often its callbacks ran."""

    elector: LeaseElector = field(init=False)
    started: int = 0
    stopped: int = 0

    def on_started(self) -> None:
        self.started += 1

    def on_stopped(self) -> None:
        self.stopped += 1

    def leads(self) -> bool:
        return self.elector.is_leader()


Make = Callable[..., Candidate]


@pytest.fixture
def make(kube_api_client: Any) -> Iterator[Make]:
    """Builds candidates on the one Lease (without starting them); stops them all after."""
    made: list[Candidate] = []

    def build(identity: str, clock: Callable[[], float] = time.time) -> Candidate:
        candidate = Candidate()
        candidate.elector = LeaseElector(
            kube_api_client,
            NAMESPACE,
            NAME,
            identity,
            lease_duration=LEASE,
            renew_deadline=DEADLINE,
            retry_period=RETRY,
            clock=clock,
            on_started_leading=candidate.on_started,
            on_stopped_leading=candidate.on_stopped,
        )
        made.append(candidate)
        return candidate

    yield build
    for candidate in made:
        candidate.elector.stop(release=False)


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> float:
    """Wait until `check()` holds; returns the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def lease(fake_kube: FakeKube) -> dict[str, Any]:
    spec: dict[str, Any] = fake_kube.get("leases", NAME, NAMESPACE)["spec"]
    return spec


def leader_of(a: Candidate, b: Candidate) -> tuple[Candidate, Candidate]:
    eventually(lambda: a.leads() or b.leads())
    return (a, b) if a.leads() else (b, a)


def renewed_at(fake_kube: FakeKube) -> float:
    return datetime.fromisoformat(lease(fake_kube)["renewTime"]).timestamp()


# -- 1. one leader ----------------------------------------------------------------------------


def test_two_candidates_elect_exactly_one_leader_named_in_the_lease(
    make: Make, fake_kube: FakeKube
) -> None:
    a, b = make("a"), make("b")
    a.elector.start()
    b.elector.start()
    leader, standby = leader_of(a, b)
    for _ in range(30):  # a few renewals later: still the same single leader
        assert leader.leads()
        assert not standby.leads()
        time.sleep(0.02)
    spec = lease(fake_kube)
    assert spec["holderIdentity"] == leader.elector.identity
    assert spec["leaseDurationSeconds"] == 1
    assert (leader.started, leader.stopped, standby.started) == (1, 0, 0)


def test_times_are_written_as_micro_time_even_on_a_whole_second(
    make: Make, fake_kube: FakeKube
) -> None:
    a = make("a", clock=FakeClock(1_700_000_000.0))
    assert a.elector.try_acquire_or_renew()
    spec = lease(fake_kube)
    assert spec["renewTime"] == spec["acquireTime"] == "2023-11-14T22:13:20.000000Z"
    assert a.elector.try_acquire_or_renew()  # renewing sends back the acquireTime it read
    assert MICRO_TIME.match(lease(fake_kube)["acquireTime"])


# -- 2. hand-over ---------------------------------------------------------------------------------


def test_a_released_lease_is_taken_over_within_a_retry_period(
    make: Make, fake_kube: FakeKube
) -> None:
    a, b = make("a"), make("b")
    a.elector.start()
    b.elector.start()
    leader, standby = leader_of(a, b)
    leader.elector.stop(release=True)
    assert not leader.leads()
    assert leader.stopped == 1
    took = eventually(standby.leads)
    assert took < LEASE / 2, f"took {took:.2f}s: the release was not seen"
    assert lease(fake_kube)["holderIdentity"] == standby.elector.identity


def test_a_crashed_leader_is_replaced_after_the_lease_duration_not_before(
    make: Make, fake_kube: FakeKube
) -> None:
    a, b = make("a"), make("b")
    a.elector.start()
    b.elector.start()
    leader, standby = leader_of(a, b)
    leader.elector.stop(release=False)  # stops renewing, the Lease still names it
    last_renewal = renewed_at(fake_kube)
    eventually(standby.leads, timeout=LEASE + 1.0)
    assert time.time() >= last_renewal + LEASE
    assert time.time() < last_renewal + LEASE + 0.5
    assert lease(fake_kube)["holderIdentity"] == standby.elector.identity


# -- 3. failing renewals ------------------------------------------------------------------------


def test_a_leader_whose_renewals_fail_steps_down_then_leads_again(
    make: Make, fake_kube: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = make("a"), make("b")
    a.elector.start()
    b.elector.start()
    leader, standby = leader_of(a, b)
    caplog.set_level(logging.WARNING, logger="megamon.loops.leader")
    fake_kube.fail_next(None, status=500, path_prefix="/apis/coordination.k8s.io/")
    assert eventually(lambda: not leader.leads()) <= DEADLINE + 0.1
    eventually(lambda: leader.stopped == 1, timeout=DEADLINE)
    time.sleep(DEADLINE)
    assert (leader.stopped, standby.started) == (1, 0)
    assert not standby.leads()
    failures = [r.getMessage() for r in caplog.records if "HTTP 500" in r.getMessage()]
    assert failures
    assert all("\n" not in line for line in failures)
    fake_kube.faults.clear()
    eventually(lambda: a.leads() or b.leads(), timeout=LEASE + 1.0)
    assert a.leads() != b.leads()


def test_a_stopped_api_server_demotes_the_leader_until_it_returns(
    make: Make, fake_kube: FakeKube
) -> None:
    a, b = make("a"), make("b")
    a.elector.start()
    b.elector.start()
    leader, _ = leader_of(a, b)
    fake_kube.stop()
    try:
        assert eventually(lambda: not leader.leads()) <= DEADLINE + 0.1
        eventually(lambda: leader.stopped == 1, timeout=DEADLINE)
        assert not a.leads()
        assert not b.leads()
    finally:
        fake_kube.start()
    eventually(lambda: a.leads() or b.leads(), timeout=LEASE + 1.0)
    assert a.leads() != b.leads()
    assert leader.stopped == 1


def test_leadership_lapses_by_itself_while_the_election_thread_hangs(make: Make) -> None:
    a = make("a")
    a.elector.start()
    eventually(a.leads)
    unblock = threading.Event()
    read = a.elector._api.read_namespaced_lease

    def hanging_read(*args: Any, **kwargs: Any) -> Any:
        unblock.wait(5.0)
        return read(*args, **kwargs)

    a.elector._api.read_namespaced_lease = hanging_read  # type: ignore[method-assign]
    assert eventually(lambda: not a.leads()) <= DEADLINE + 0.1
    assert a.stopped == 0  # the thread has not noticed yet: the deadline alone decided
    unblock.set()
    eventually(lambda: a.stopped == 1)
    eventually(a.leads)  # the Lease still names it: it leads again, a new term
    assert a.started == 2


def test_a_leader_that_finds_another_holder_steps_down_at_once(
    make: Make, fake_kube: FakeKube
) -> None:
    clock = FakeClock()
    a = make("a", clock=clock)
    assert a.elector.try_acquire_or_renew()
    renewed = lease(fake_kube)["renewTime"]
    fake_kube.patch("leases", NAME, {"spec": {"holderIdentity": "x"}}, NAMESPACE)
    assert a.leads()  # its renew deadline has not passed...
    assert not a.elector.try_acquire_or_renew()
    assert not a.leads()  # ...but the Lease names someone else
    assert (a.started, a.stopped) == (1, 1)
    assert lease(fake_kube)["renewTime"] == renewed


# -- 4. conflicts ---------------------------------------------------------------------------------


def test_an_update_that_conflicts_is_a_lost_round(
    make: Make, fake_kube: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="megamon.loops.leader")
    clock = FakeClock()
    a, b = make("a", clock=clock), make("b", clock=clock)
    assert a.elector.try_acquire_or_renew()
    clock.advance(LEASE + 0.1)  # expired: both may claim it; a renews between b's read and write
    read = b.elector._api.read_namespaced_lease

    def read_then_race(*args: Any, **kwargs: Any) -> Any:
        found = read(*args, **kwargs)
        assert a.elector.try_acquire_or_renew()
        return found

    b.elector._api.read_namespaced_lease = read_then_race  # type: ignore[method-assign]
    assert not b.elector.try_acquire_or_renew()
    assert any("(409)" in r.getMessage() for r in caplog.records)  # the emulator's own 409
    assert not b.leads()
    assert a.leads()
    assert lease(fake_kube)["holderIdentity"] == "a"


def test_a_create_that_finds_the_lease_existing_is_a_lost_round(
    make: Make, fake_kube: FakeKube
) -> None:
    a, b = make("a"), make("b")
    read = b.elector._api.read_namespaced_lease

    def read_then_race(*args: Any, **kwargs: Any) -> Any:
        try:
            return read(*args, **kwargs)
        finally:
            assert a.elector.try_acquire_or_renew()  # a creates it meanwhile

    b.elector._api.read_namespaced_lease = read_then_race  # type: ignore[method-assign]
    assert not b.elector.try_acquire_or_renew()
    assert (a.leads(), b.leads()) == (True, False)
    assert lease(fake_kube)["holderIdentity"] == "a"


def test_a_leader_keeps_leading_through_one_conflicting_renewal(
    make: Make, fake_kube: FakeKube
) -> None:
    a = make("a")
    assert a.elector.try_acquire_or_renew()
    fake_kube.fail_next(1, status=409, verb="update")
    assert not a.elector.try_acquire_or_renew()
    assert a.leads()  # within the renew deadline a lost round is not a lost lease
    assert a.elector.try_acquire_or_renew()
    assert (a.started, a.stopped) == (1, 0)


# -- 5. the record --------------------------------------------------------------------------------


def test_lease_transitions_count_holder_changes(make: Make, fake_kube: FakeKube) -> None:
    clock = FakeClock()
    a, b = make("a", clock=clock), make("b", clock=clock)
    assert a.elector.try_acquire_or_renew()  # created: no transition yet
    assert a.elector.try_acquire_or_renew()
    assert lease(fake_kube)["leaseTransitions"] == 0
    clock.advance(LEASE + 0.1)
    assert b.elector.try_acquire_or_renew()  # a → b
    acquired = lease(fake_kube)["acquireTime"]
    clock.advance(RETRY)
    assert b.elector.try_acquire_or_renew()
    spec = lease(fake_kube)
    assert (spec["leaseTransitions"], spec["acquireTime"]) == (1, acquired)
    assert spec["renewTime"] != acquired
    b.elector.stop(release=True)  # b → nobody: not counted until someone takes it
    spec = lease(fake_kube)
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("", 1)
    assert a.elector.try_acquire_or_renew()  # nobody → a, at once
    assert lease(fake_kube)["leaseTransitions"] == 2


# -- arguments ------------------------------------------------------------------------------------


def test_inconsistent_durations_are_refused(kube_api_client: Any) -> None:
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaseElector(kube_api_client, NAMESPACE, NAME, "a", lease_duration=1, renew_deadline=1)
    with pytest.raises(ValueError, match="retry_period"):
        LeaseElector(kube_api_client, NAMESPACE, NAME, "a", renew_deadline=2, retry_period=2)


def test_default_identities_are_unique_per_process() -> None:
    first, second = default_identity(), default_identity()
    assert first != second
    assert first.rsplit("_", 1)[0] == second.rsplit("_", 1)[0]
