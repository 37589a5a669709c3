"""The fleet report's SQL gives the Python report's numbers to the nanosecond, on random
histories written as Go-format snapshots and archives, and as the append-only log, with random
gaps in megamon's coverage (heartbeats, snapshot marks): unobserved time comes out of the
same bands."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.fleet.engine import History, fleet_report
from megamon.fleet.model import FLEET, FleetReport
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS
from megamon.summary.availability import (
    AvailabilityReport,
    Window,
    availability_report,
    unobserved_gaps,
)
from test.fleet.histories import Coverage, Lifetime, write_log, write_snapshots

T0 = timestamps.parse("2026-06-01T00:00:00Z")
FLAGS = st.sampled_from([0, 1, 1, 1, 2, 4, 6, 0])
SHAPES = [
    {"tpuAccelerator": "tpu-v5p-slice", "tpuTopology": "2x2x1", "tpuChipCount": 4},
    {"tpuAccelerator": "tpu-v6e-slice", "tpuTopology": "4x4", "tpuChipCount": 16},
    {"tpuAccelerator": "tpu-v6e-slice", "tpuTopology": "4x4"},
]
KINDS = [Kind.NODEPOOL, Kind.JOBSET]


@st.composite
def key_lifetimes(draw: st.DrawFn, kind: Kind, key: str, skew: bool) -> list[Lifetime]:
    """One key's lifetimes: some retired, the last one maybe live."""
    count = draw(st.integers(1, 3))
    live_last = draw(st.booleans())
    lifetimes = []
    floor = T0 + draw(st.integers(0, 10**12))
    for index in range(count):
        events = []
        t = floor
        for _ in range(draw(st.integers(1, 7))):
            low = -(10**12) if skew else 1
            t = max(floor, t + draw(st.integers(low, 10**13)))
            events.append((t, draw(FLAGS)))
        shape = dict(draw(st.sampled_from(SHAPES)))
        name = (
            {"nodePoolName": key}
            if kind is Kind.NODEPOOL
            else {
                "jobsetName": key,
                "jobsetNamespace": "team",
            }
        )
        attrs = {**shape, **name}
        live = live_last and index == count - 1
        retired = None if live else max(t for t, _ in events) + draw(st.integers(0, 10**12))
        lifetimes.append(Lifetime(kind, key, tuple(events), attrs, retired))
        if retired is not None:
            floor = retired + 1 + draw(st.integers(0, 10**12))
    return lifetimes


@st.composite
def cluster_histories(draw: st.DrawFn, skew: bool) -> list[Lifetime]:
    lifetimes: list[Lifetime] = []
    for kind in KINDS:
        for n in range(draw(st.integers(0, 3))):
            lifetimes += draw(key_lifetimes(kind, f"{kind.value}-{n}", skew))
    return lifetimes


SPAN = st.tuples(st.integers(-(10**12), 10**14), st.integers(0, 3 * 10**13)).map(
    lambda p: (T0 + p[0], T0 + p[0] + p[1])
)


@st.composite
def coverages(draw: st.DrawFn) -> Coverage:
    """Per kind, a few observed spans (overlapping or not, some after ``now``); none at all
    for some kinds (a history the Go megamon wrote: no gaps)."""
    return {kind: draw(st.lists(SPAN, max_size=4)) for kind in KINDS if draw(st.booleans())}


def gaps_of(coverage: Coverage, kind: Kind, now: int) -> tuple[tuple[int, int], ...]:
    """The Python report's unobserved gaps of one kind (``megamon report``'s rule)."""
    return unobserved_gaps(coverage.get(kind, ()), now, UNOBSERVED_SLACK_NS)


@st.composite
def windows(draw: st.DrawFn) -> Window:
    now = T0 + draw(st.integers(0, 10**14))
    since = draw(st.one_of(st.none(), st.integers(1, 10**14).map(lambda d: now - d)))
    return Window(now=now, since=since)


def _figures(report: AvailabilityReport) -> dict[tuple[str, str, int | None], tuple[object, ...]]:
    return {
        (f.resource.kind.value, f.resource.key, f.resource.retired_at): (
            f.resource.name,
            f.resource.accelerator,
            f.resource.topology,
            f.start,
            f.end,
            f.state,
            f.times,
            f.incidents,
            f.provisioning_state,
            f.provisioning_duration,
        )
        for f in report.resources
    }


def _fleet_figures(
    report: FleetReport, cluster: str
) -> dict[tuple[str, str, int | None], tuple[object, ...]]:
    """The figures of one cluster's resources, as ``_figures`` reads the Python report's."""
    mine = tuple(f for f in report.resources if f.resource.cluster == cluster)
    return _figures(AvailabilityReport(report.window, report.start, mine, ()))


def _aggregates(report: AvailabilityReport) -> dict[tuple[str, str, str], tuple[object, ...]]:
    return {
        (a.kind.value, a.accelerator, a.topology): (
            a.resources,
            a.times,
            a.incidents,
            dict(a.provisioning_states),
            a.provisioned_duration,
        )
        for a in report.aggregates
    }


def _fleet_aggregates(
    report: FleetReport, cluster: str
) -> dict[tuple[str, str, str], tuple[object, ...]]:
    rows = report.fleet_aggregates if cluster == FLEET else report.cluster_aggregates
    return {
        (a.kind.value, a.accelerator, a.topology): (
            a.resources,
            a.times,
            a.incidents,
            dict(a.provisioning_states),
            a.provisioned_duration,
        )
        for a in rows
        if a.cluster == cluster
    }


def _check(
    clusters: Sequence[tuple[list[Lifetime], Coverage]],
    window: Window,
    *,
    log: bool,
    archive: bool = True,
) -> None:
    """``log``: histories as the log (with archive entries unless not ``archive``: the log
    alone is the engine's other path), else as Go-format files."""
    with tempfile.TemporaryDirectory() as scratch:
        histories = []
        for n, (lifetimes, coverage) in enumerate(clusters):
            root = Path(scratch) / f"c{n}"
            if log:
                write_log(root, f"c{n}", lifetimes, archive=archive, coverage=coverage)
            else:
                write_snapshots(root, lifetimes, coverage)
            histories.append(History(f"c{n}", root))
        fleet = fleet_report(histories, list(Kind), window, workdir=Path(scratch))
    everything = []
    for n, (lifetimes, coverage) in enumerate(clusters):
        resources = [
            lt.resource(live_attrs=log, unobserved=gaps_of(coverage, lt.kind, window.now))
            for lt in lifetimes
        ]
        everything += resources
        expected = availability_report(resources, window)
        assert _fleet_figures(fleet, f"c{n}") == _figures(expected)
        assert _fleet_aggregates(fleet, f"c{n}") == _aggregates(expected)
    assert _fleet_aggregates(fleet, FLEET) == _aggregates(availability_report(everything, window))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


CLUSTERS_SKEWED = st.lists(
    st.tuples(cluster_histories(skew=True), coverages()), min_size=1, max_size=3
)
CLUSTERS = st.lists(st.tuples(cluster_histories(skew=False), coverages()), min_size=1, max_size=3)


@SETTINGS
@given(CLUSTERS_SKEWED, windows())
def test_snapshots_and_archives_give_the_python_numbers(
    clusters: list[tuple[list[Lifetime], Coverage]], window: Window
) -> None:
    _check(clusters, window, log=False)


@SETTINGS
@given(CLUSTERS, windows(), st.booleans())
def test_the_log_gives_the_python_numbers(
    clusters: list[tuple[list[Lifetime], Coverage]], window: Window, archive: bool
) -> None:
    _check(clusters, window, log=True, archive=archive)


def merged_failed_band(gap: tuple[int, int]) -> tuple[list[Lifetime], Coverage]:
    """Failed provisioning, a zero-length up at T0+10s, failed again: one failed band from
    T0 that starts before the first up (provisioning), with a coverage gap at ``gap``."""
    s = timestamps.NANOS_PER_SECOND
    events = ((T0, 4), (T0 + 10 * s, 1), (T0 + 10 * s, 4))
    lifetime = Lifetime(Kind.NODEPOOL, "np", events, {"nodePoolName": "np"})
    return [lifetime], {Kind.NODEPOOL: [(T0 - s, gap[0]), (gap[1], T0 + 1000 * s)]}


def test_a_gap_after_the_first_up_ends_a_merged_provisioning_band() -> None:
    """After a gap that ends past the first up, the failed band is down time, as the Python
    report carves it; a gap that ends before the first up leaves it provisioning."""
    s = timestamps.NANOS_PER_SECOND
    window = Window(now=T0 + 1000 * s)
    late = merged_failed_band((T0 + 20 * s, T0 + 30 * s))
    [figures] = availability_report(
        [
            late[0][0].resource(
                live_attrs=True, unobserved=gaps_of(late[1], Kind.NODEPOOL, window.now)
            )
        ],
        window,
    ).resources
    assert figures.times.provisioning == 20 * s and figures.times.unobserved == 10 * s
    assert figures.times.down == figures.times.failed == 970 * s
    _check([late], window, log=True)
    _check([late], window, log=False)
    early = merged_failed_band((T0 + 2 * s, T0 + 5 * s))
    _check([early], window, log=True)
    _check([early, late], window, log=False)
