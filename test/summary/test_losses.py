"""What the window cost and why: interruptions with their reasons, down time by reason that
adds up to the down time, chip-hours lost to failed provisioning, the worst first — on
hand-built timelines, on random ones, and on a history megamon's event log wrote."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.interruptions import MAINTENANCE, NODE_LOST, PREEMPTION, UNKNOWN, Cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.summaries import ProvisioningState
from megamon.fleet.resources import read_resources
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import (
    Resource,
    ResourceAvailability,
    Window,
    availability_report,
    resource_availability,
)
from megamon.summary.losses import (
    down_time_by_reason,
    failed_provisioning_time,
    interruptions,
    kind_losses,
    worst_resources,
)
from test.timeline import T0, H, M, S, up

CHIPS = {"tpuChipCount": 16, "tpuAccelerator": "tpu-v6e-slice", "tpuTopology": "4x4"}


def down(at: int, reason: str = "", *, ed: bool = False, f: bool = False) -> UpEvent:
    return UpEvent(up=False, ts=T0 + at, expected_down=ed, failed=f, reason=reason)


def figures(
    events: list[UpEvent], now: int, since: int | None = None, **attrs: object
) -> tuple[ResourceAvailability, Window]:
    window = Window(now=T0 + now, since=None if since is None else T0 + since)
    resource = Resource(Kind.NODEPOOL, "np", EventRecord.of(events), {**CHIPS, **attrs})
    result = resource_availability(resource, window)
    assert result is not None
    return result, window


def test_each_interruption_has_its_reason_and_its_down_time() -> None:
    f, window = figures(
        [down(0), up(10 * M), down(1 * H, MAINTENANCE), up(2 * H), down(3 * H, NODE_LOST)],
        now=4 * H,
    )
    found = interruptions(f, window)
    assert [(i.reason, i.down_time, i.end is None, i.counted) for i in found] == [
        (MAINTENANCE, 1 * H, False, True),
        (NODE_LOST, 1 * H, True, True),
    ]
    assert found[0].start == T0 + H and found[0].end == T0 + 2 * H
    assert down_time_by_reason(f, window) == {MAINTENANCE: H, NODE_LOST: H}


def test_a_history_without_reasons_says_unknown_and_planned_stops_are_no_interruption() -> None:
    f, window = figures([up(0), down(H), up(2 * H), down(3 * H, ed=True)], now=4 * H)
    assert [(i.reason, i.down_time) for i in interruptions(f, window)] == [(UNKNOWN, H)]


def test_an_outage_across_since_is_listed_not_counted_and_only_its_inside_is_lost() -> None:
    f, window = figures([up(0), down(H, PREEMPTION), up(3 * H)], now=4 * H, since=2 * H)
    (only,) = interruptions(f, window)
    assert (only.counted, only.down_time, only.start) == (False, H, T0 + H)
    assert f.incidents.interruptions == 0 and f.times.down == H


def test_a_pool_stuck_failing_to_provision_costs_its_chips() -> None:
    f, window = figures([down(0, f=True)], now=5 * H)
    assert f.availability is None and f.times.down == 0
    assert f.provisioning_state is ProvisioningState.FAILED
    assert failed_provisioning_time(f) == 5 * H
    report = availability_report([f.resource], window)
    (losses,) = kind_losses(report)
    assert losses.failed_provisioning_chip_seconds == 16 * 5 * 3600
    assert losses.availability is None
    (worst,) = worst_resources(report)
    assert worst.lost_chip_seconds == 16 * 5 * 3600


def test_a_pool_that_came_up_lost_nothing_to_provisioning() -> None:
    f, _ = figures([down(0), up(H)], now=2 * H)
    assert failed_provisioning_time(f) == 0


_REASONS = st.sampled_from(["", MAINTENANCE, NODE_LOST, PREEMPTION])


@given(
    steps=st.lists(
        st.tuples(st.integers(0, 3 * H), st.sampled_from(["up", "down", "ed", "f"]), _REASONS),
        min_size=1,
        max_size=14,
    ),
    since=st.one_of(st.none(), st.integers(0, 20 * H)),
    tail=st.integers(1, 5 * H),
    gap=st.one_of(st.none(), st.tuples(st.integers(0, 20 * H), st.integers(1, 5 * H))),
)
def test_down_time_by_reason_adds_up_to_the_down_time_and_counts_to_the_interruptions(
    steps: list[tuple[int, str, str]],
    since: int | None,
    tail: int,
    gap: tuple[int, int] | None,
) -> None:
    at, events = 0, [down(0)]
    for step, kind, reason in steps:
        at += step
        if kind == "up":
            events.append(up(at))
        else:
            events.append(down(at, reason, ed=kind == "ed", f=kind == "f"))
    now = at + tail
    if since is not None and since >= now:
        since = None
    window = Window(now=T0 + now, since=None if since is None else T0 + since)
    unobserved = () if gap is None else ((T0 + gap[0], T0 + gap[0] + gap[1]),)
    resource = Resource(Kind.NODEPOOL, "np", EventRecord.of(events), CHIPS, unobserved=unobserved)
    f = resource_availability(resource, window)
    if f is None:
        return
    found = interruptions(f, window)
    assert sum(i.down_time for i in found) == f.times.down
    assert sum(i.counted for i in found) == f.incidents.interruptions
    assert sum(down_time_by_reason(f, window).values()) == f.times.down


def test_on_a_history_megamons_event_log_wrote(tmp_path: Path) -> None:
    """Reasons come back through the log and the snapshot exactly as recorded."""
    store = LocalEventStore(tmp_path)
    log = EventLog(store, [Kind.NODEPOOL])
    log.load([Kind.NODEPOOL])
    attrs = Attrs(nodepool_name="np", tpu_chip_count=16, tpu_accelerator="tpu-v6e-slice")
    t = T0 + 100 * S
    log.append({Kind.NODEPOOL: {"np": Observation.build(expected=4, ready=4, attrs=attrs)}}, t)
    lost = Observation.build(expected=4, ready=3, attrs=attrs, cause=Cause(MAINTENANCE, "host"))
    log.append({Kind.NODEPOOL: {"np": lost}}, t + M)
    log.append(
        {Kind.NODEPOOL: {"np": Observation.build(expected=4, ready=4, attrs=attrs)}}, t + 3 * M
    )
    log.close()
    window = Window(now=t + 10 * M)
    report = availability_report(read_resources(store, [Kind.NODEPOOL], {}, window.now), window)
    (f,) = report.resources
    (found,) = interruptions(f, window)
    assert (found.reason, found.down_time, found.end) == (MAINTENANCE, 2 * M, t + 3 * M)
    (losses,) = kind_losses(report)
    assert losses.down_chip_ns_by_reason == {MAINTENANCE: 16 * 2 * M}
    assert losses.down_chip_seconds_by_reason == {MAINTENANCE: 16 * 120.0}
    assert losses.interruptions_by_reason == {MAINTENANCE: 1}
