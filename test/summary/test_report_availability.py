"""The availability figures of ``megamon report`` on hand-built records: window clipping,
expected-down and provisioning excluded, failed bands, archived resources, aggregates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.summary.availability import (
    Band,
    BandState,
    Incidents,
    Resource,
    ResourceAvailability,
    TimeSplit,
    Window,
    availability_report,
    resource_availability,
)
from megamon.summary.summarizing import summarize
from test.timeline import T0, H, M, down, record, up

V5P = {"tpuAccelerator": "tpu-v5p-slice", "tpuTopology": "2x2x1"}
V6E = {"tpuAccelerator": "tpu-v6e-slice", "tpuTopology": "4x4"}


def figures(
    rec: EventRecord,
    now: int,
    since: int | None = None,
    *,
    retired_at: int | None = None,
) -> ResourceAvailability:
    retired = None if retired_at is None else T0 + retired_at
    resource = Resource(Kind.NODEPOOL, "np", rec, {}, retired)
    window = Window(now=T0 + now, since=None if since is None else T0 + since)
    result = resource_availability(resource, window)
    assert result is not None
    return result


def bands(*spec: tuple[int, int, BandState]) -> tuple[Band, ...]:
    return tuple(Band(T0 + a, T0 + b, s) for a, b, s in spec)


# --- whole history -----------------------------------------------------------------------


def test_all_history_counts_from_the_first_event() -> None:
    f = figures(record(down(0), up(H), down(5 * H), up(6 * H)), now=10 * H)
    assert (f.start, f.end) == (T0, T0 + 10 * H)
    assert f.times == TimeSplit(up=8 * H, down=H, provisioning=H)
    assert f.availability == pytest.approx(100 * 8 / 9)
    assert f.incidents == Incidents(interruptions=1, recoveries=1, recovered_down_time=H)
    assert (f.mttr, f.mtbi) == (H, 8 * H)
    assert f.state is BandState.UP
    assert f.bands == bands(
        (0, H, BandState.PROVISIONING),
        (H, 5 * H, BandState.UP),
        (5 * H, 6 * H, BandState.DOWN),
        (6 * H, 10 * H, BandState.UP),
    )


def test_no_interruption_means_no_mtbi_and_full_availability() -> None:
    f = figures(record(down(0), up(H)), now=3 * H)
    assert f.availability == 100.0
    assert (f.mttr, f.mtbi) == (None, None)


# --- window clipping ---------------------------------------------------------------------


def test_periods_are_clipped_to_the_window() -> None:
    f = figures(record(down(0), up(H), down(5 * H), up(6 * H)), now=10 * H, since=3 * H)
    assert f.start == T0 + 3 * H
    assert f.times == TimeSplit(up=6 * H, down=H)
    assert f.bands == bands(
        (3 * H, 5 * H, BandState.UP),
        (5 * H, 6 * H, BandState.DOWN),
        (6 * H, 10 * H, BandState.UP),
    )


def test_an_outage_across_since_counts_its_inside_part_but_recovers_whole() -> None:
    f = figures(record(down(0), up(H), down(2 * H), up(4 * H)), now=5 * H, since=3 * H)
    assert f.times == TimeSplit(up=H, down=H)
    assert f.incidents == Incidents(interruptions=0, recoveries=1, recovered_down_time=2 * H)
    assert f.mttr == 2 * H  # the whole outage, not its 1h inside the window


def test_transitions_count_in_the_half_open_window() -> None:
    rec = record(down(0), up(H), down(2 * H), up(3 * H))
    at_since = figures(rec, now=4 * H, since=2 * H)  # the interruption is at since: not counted
    assert (at_since.incidents.interruptions, at_since.incidents.recoveries) == (0, 1)
    at_now = figures(rec, now=2 * H, since=H)  # the interruption is at now: counted
    assert (at_now.incidents.interruptions, at_now.incidents.recoveries) == (1, 0)


def test_events_after_now_are_ignored() -> None:
    rec = record(down(0), up(H), down(5 * H), up(6 * H))
    f = figures(rec, now=5 * H + 30 * M)
    assert f.times == TimeSplit(up=4 * H, down=30 * M, provisioning=H)
    assert f.state is BandState.DOWN
    assert f.incidents == Incidents(interruptions=1)


def test_a_resource_created_inside_the_window_starts_at_its_first_event() -> None:
    f = figures(record(down(4 * H), up(5 * H)), now=10 * H, since=2 * H)
    assert f.start == T0 + 4 * H
    assert f.times == TimeSplit(up=5 * H, provisioning=H)


def test_resources_outside_the_window_are_left_out() -> None:
    rec = record(down(0), up(H))
    retired = Resource(Kind.NODEPOOL, "old", rec, {}, retired_at=T0 + 2 * H)
    assert resource_availability(retired, Window(now=T0 + 5 * H, since=T0 + 2 * H)) is None
    future = Resource(Kind.NODEPOOL, "new", record(down(6 * H)))
    assert resource_availability(future, Window(now=T0 + 5 * H)) is None
    assert resource_availability(Resource(Kind.NODEPOOL, "empty", EventRecord()), Window(1)) is None


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.integers(0, 5 * H), min_size=1, max_size=12),
    kinds=st.lists(st.sampled_from(["up", "down", "ed", "f"]), min_size=12, max_size=12),
    cut=st.integers(0, 60 * H),
    tail=st.integers(1, 10 * H),
)
def test_consecutive_windows_add_up_to_the_whole(
    gaps: list[int], kinds: list[str], cut: int, tail: int
) -> None:
    """[a, b] and [b, c] split time, transitions and recoveries exactly as [a, c] does; the
    time classes always fill the span; over all history the counts and the provisioning are
    summarize()'s."""
    at, events = 0, [down(0)]
    for gap, kind in zip(gaps, kinds, strict=False):
        at += gap
        events.append(up(at) if kind == "up" else down(at, ed=kind == "ed", f=kind == "f"))
    rec = record(*events)
    end = at + tail
    b = min(cut, end - 1)
    whole = figures(rec, now=end, since=-1)
    first = figures(rec, now=b, since=-1) if b >= 0 else None
    second = figures(rec, now=end, since=b)
    t = whole.times
    assert t.up + t.down + t.expected_down + t.provisioning == whole.end - whole.start
    if first is not None:
        assert first.times + second.times == whole.times
        assert first.incidents + second.incidents == whole.incidents
    summary = summarize(rec, T0 + end)
    assert (whole.incidents.interruptions, whole.incidents.recoveries) == (
        summary.interruption_count,
        summary.recovery_count,
    )
    assert (whole.provisioning_duration, whole.provisioning_state) == (
        summary.provisioning_duration,
        summary.provisioning_state,
    )


# --- expected down, failed, provisioning -------------------------------------------------


def test_expected_down_is_excluded_from_availability_and_counts() -> None:
    f = figures(record(down(0), up(H), down(3 * H, ed=True), up(5 * H)), now=6 * H)
    assert f.times == TimeSplit(up=3 * H, expected_down=2 * H, provisioning=H)
    assert f.availability == 100.0
    assert f.incidents == Incidents()
    assert (f.mttr, f.mtbi) == (None, None)
    assert BandState.EXPECTED_DOWN in {b.state for b in f.bands}


def test_an_expected_period_is_decided_by_its_first_event() -> None:
    # planned stop that then fails: still expected; an outage later marked ed: still an outage
    planned = figures(record(down(0), up(H), down(2 * H, ed=True), down(3 * H, f=True)), 4 * H)
    assert planned.times.expected_down == 2 * H and planned.incidents.interruptions == 0
    outage = figures(record(down(0), up(H), down(2 * H), down(3 * H, ed=True), up(4 * H)), 5 * H)
    assert outage.times.down == 2 * H
    assert outage.incidents == Incidents(1, 1, 2 * H)


def test_failed_bands_are_down_time_and_shown_apart() -> None:
    f = figures(record(down(0), up(H), down(2 * H, f=True), down(3 * H), up(4 * H)), now=5 * H)
    assert f.bands == bands(
        (0, H, BandState.PROVISIONING),
        (H, 2 * H, BandState.UP),
        (2 * H, 3 * H, BandState.FAILED),
        (3 * H, 4 * H, BandState.DOWN),
        (4 * H, 5 * H, BandState.UP),
    )
    assert f.times == TimeSplit(up=2 * H, down=2 * H, failed=H, provisioning=H)
    assert f.incidents == Incidents(1, 1, 2 * H)


def test_a_failed_provisioning_is_provisioning_time_drawn_failed() -> None:
    rec = record(down(0), down(H, f=True))
    f = figures(rec, now=3 * H)
    assert f.bands == bands((0, H, BandState.PROVISIONING), (H, 3 * H, BandState.FAILED))
    assert f.times == TimeSplit(provisioning=3 * H)
    assert f.availability is None
    assert (f.provisioning_state, f.provisioning_duration) == (ProvisioningState.FAILED, H)
    assert f.state is BandState.FAILED


def test_provisioning_equals_summarize_for_a_live_resource() -> None:
    rec = record(down(0), down(H, ed=True))
    f = figures(rec, now=7 * H)
    summary = summarize(rec, T0 + 7 * H)
    assert f.provisioning_state is ProvisioningState.PROVISIONING
    assert (f.provisioning_duration, f.provisioning_state) == (
        summary.provisioning_duration,
        summary.provisioning_state,
    )
    assert f.times == TimeSplit(provisioning=7 * H)


def test_skewed_timestamps_never_make_negative_time() -> None:
    f = figures(record(down(0), up(2 * H), down(H), up(3 * H)), now=4 * H)
    assert f.times == TimeSplit(up=H, down=H, provisioning=2 * H)
    assert all(b.end > b.start for b in f.bands)


def test_an_invalid_history_is_reported_as_its_events_say() -> None:
    f = figures(EventRecord.of([UpEvent(up=True, ts=T0)]), now=H)
    assert f.times == TimeSplit(up=H)
    assert f.provisioning_state is ProvisioningState.NONE


# --- archived resources ------------------------------------------------------------------


def test_an_archived_resource_ends_at_its_retirement() -> None:
    rec = record(down(0), up(H), down(2 * H), up(3 * H))
    f = figures(rec, now=10 * H, retired_at=4 * H)
    assert f.end == T0 + 4 * H
    assert f.times == TimeSplit(up=2 * H, down=H, provisioning=H)
    assert f.resource.live is False


def test_an_archived_resource_stops_provisioning_when_retired() -> None:
    rec = record(down(0))
    f = figures(rec, now=10 * H, retired_at=2 * H)
    assert (f.provisioning_state, f.provisioning_duration) == (
        ProvisioningState.PROVISIONING,
        2 * H,
    )
    assert f.provisioning_duration == summarize(rec, T0 + 2 * H).provisioning_duration


# --- the report and aggregates -----------------------------------------------------------


def _report_resources() -> list[Resource]:
    return [
        Resource(Kind.NODEPOOL, "a", record(down(0), up(H), down(5 * H), up(6 * H)), V5P),
        Resource(Kind.NODEPOOL, "b", record(down(0), up(2 * H), down(8 * H)), V5P),
        Resource(Kind.NODEPOOL, "c", record(down(0), down(H, f=True)), V6E),
        Resource(Kind.NODEPOOL, "old", record(down(0), up(H)), V6E, retired_at=T0 + 3 * H),
        Resource(Kind.JOBSET, "uid-1", record(down(0), up(30 * M)), V5P),
        Resource(Kind.NODEPOOL, "gone", record(down(0), up(H)), V5P, retired_at=T0 + 3 * H),
    ]


def test_archived_resources_are_in_the_report_and_aggregates() -> None:
    report = availability_report(_report_resources(), Window(now=T0 + 10 * H))
    keys = [(f.resource.kind, f.resource.key) for f in report.resources]
    assert keys == [
        (Kind.NODEPOOL, "a"),
        (Kind.NODEPOOL, "b"),
        (Kind.NODEPOOL, "c"),
        (Kind.NODEPOOL, "gone"),
        (Kind.NODEPOOL, "old"),
        (Kind.JOBSET, "uid-1"),
    ]
    v6e = next(a for a in report.aggregates if a.accelerator == "tpu-v6e-slice")
    assert v6e.resources == 2
    assert v6e.times.up == 2 * H  # "old" was up 1h..3h, then retired


def test_aggregates_are_per_kind_accelerator_and_topology_and_time_weighted() -> None:
    report = availability_report(_report_resources(), Window(now=T0 + 10 * H))
    shapes = [(a.kind, a.accelerator, a.topology, a.resources) for a in report.aggregates]
    assert shapes == [
        (Kind.NODEPOOL, "tpu-v5p-slice", "2x2x1", 3),
        (Kind.NODEPOOL, "tpu-v6e-slice", "4x4", 2),
        (Kind.JOBSET, "tpu-v5p-slice", "2x2x1", 1),
    ]
    v5p = report.aggregates[0]
    # a: up 8h down 1h (1 intr, 1 rec); b: up 6h down 2h (1 intr); gone: up 2h
    assert v5p.times == TimeSplit(up=16 * H, down=3 * H, provisioning=4 * H)
    assert v5p.availability == pytest.approx(100 * 16 / 19)
    assert v5p.incidents == Incidents(2, 1, H)
    assert (v5p.mttr, v5p.mtbi) == (H, 8 * H)
    assert v5p.provisioning_states == {ProvisioningState.SUCCESS: 3}
    assert v5p.mean_provisioning_duration == (H + 2 * H + H) // 3
    v6e = report.aggregates[1]
    assert v6e.provisioning_states == {ProvisioningState.FAILED: 1, ProvisioningState.SUCCESS: 1}
    assert v6e.mean_provisioning_duration == H  # the successful one only


def test_the_window_start_of_all_history_is_the_earliest_event() -> None:
    resources = [Resource(Kind.NODEPOOL, "a", record(down(2 * H), up(3 * H)))]
    report = availability_report(resources, Window(now=T0 + 5 * H))
    assert report.start == T0 + 2 * H
    assert availability_report([], Window(now=T0)).start == T0


def test_names_come_from_attrs_and_fall_back_to_the_key() -> None:
    attrs = {"jobsetNamespace": "team", "jobsetName": "train"}
    assert Resource(Kind.JOBSET, "uid", EventRecord(), attrs).name == "team/train"
    assert Resource(Kind.JOBSET, "uid", EventRecord(), {"jobsetName": "x"}).name == "uid"
    assert Resource(Kind.NODEPOOL, "np", EventRecord()).name == "np"
