"""The fleet report gives ``megamon report``'s figures to the nanosecond, per resource and per
aggregate, on random histories megamon's own recorder wrote (``test.fleet.written``): down
events with reasons, resources retired into archive entries and seen again, snapshots taken
every flush or only at shutdown, heartbeats, and runs with unobserved time between them.

Three readings of one history: as written (the fleet report reads snapshots, archives and
every segment, where ``megamon report`` folds only the segments after the snapshot); its log
alone (which holds every event, retirement and heartbeat: the same figures as the whole
history); its snapshots, archives and marks alone.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from megamon.domain import timestamps
from megamon.domain.interruptions import ERROR, MAINTENANCE, PREEMPTION, UNKNOWN
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.fleet.engine import History, fleet_report
from megamon.fleet.model import FLEET, FleetReport
from megamon.fleet.resources import read_resources
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import AvailabilityReport, Window, availability_report
from test.fleet.written import DOWN, FAILED, PLANNED, UP, Run, Step, log_only, snapshots_only
from test.fleet.written import write_runs as write_history

T0 = timestamps.parse("2026-06-01T00:00:00Z")
S = timestamps.NANOS_PER_SECOND
KINDS = [Kind.NODEPOOL, Kind.JOBSET]
RESOURCES: dict[tuple[Kind, str], Attrs] = {
    (Kind.NODEPOOL, "np-a"): Attrs(
        nodepool_name="np-a", tpu_accelerator="tpu-v6e-slice", tpu_topology="8x8", tpu_chip_count=64
    ),
    (Kind.NODEPOOL, "np-b"): Attrs(
        nodepool_name="np-b", tpu_accelerator="tpu-v6e-slice", tpu_topology="8x8", tpu_chip_count=64
    ),
    (Kind.NODEPOOL, "np-c"): Attrs(
        nodepool_name="np-c", tpu_accelerator="tpu-v5p-slice", tpu_topology="2x2x1"
    ),
    (Kind.JOBSET, "uid-1"): Attrs(
        jobset_name="train",
        jobset_namespace="team",
        tpu_accelerator="tpu-v6e-slice",
        tpu_topology="8x8",
        tpu_chip_count=64,
    ),
    (Kind.JOBSET, "uid-2"): Attrs(jobset_name="eval", jobset_namespace="team"),
}
STATES = st.sampled_from(
    [
        (UP, ""),
        (UP, ""),
        (DOWN, UNKNOWN),
        (DOWN, MAINTENANCE),
        (DOWN, PREEMPTION),
        (DOWN, ""),
        (FAILED, ERROR),
        (PLANNED, ""),
        None,  # not observed: retired (and a new lifetime when it is seen again)
    ]
)


@st.composite
def steps(draw: st.DrawFn) -> Step:
    states = {}
    for resource in RESOURCES:
        state = draw(STATES)
        if state is not None:
            states[resource] = state
    return Step(after=draw(st.integers(1, 200)) * S, states=states)


@st.composite
def runs(draw: st.DrawFn) -> list[Run]:
    return [
        Run(
            gap_before=draw(st.sampled_from([0, 1, 30, 600, 7200])) * S,
            steps=draw(st.lists(steps(), min_size=1, max_size=8)),
            snapshot_interval_s=draw(st.sampled_from([0.0, 3600.0])),
        )
        for _ in range(draw(st.integers(1, 3)))
    ]


def _python(root: Path, window: Window) -> AvailabilityReport:
    """``megamon report --events-dir root``: the snapshot, the segments after it, archives."""
    resources = read_resources(LocalEventStore(root), KINDS, {}, window.now)
    return availability_report(list(resources), window)


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


def _check(clusters: Sequence[list[Run]], end_after: int, since_before: int | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        ends, written = [], []
        for n, history in enumerate(clusters):
            root = base / "written" / f"c{n}"
            ends.append(write_history(root, T0, history, RESOURCES))
            written.append(root)
        now = max(ends) + end_after
        window = Window(now=now, since=None if since_before is None else now - since_before)
        expected = {root.name: _python(root, window) for root in written}
        readings = {
            "as written": (written, expected),
            "log only": ([log_only(r, base / "log" / r.name) for r in written], expected),
        }
        snapshots = [snapshots_only(r, base / "snapshots" / r.name) for r in written]
        readings["snapshots only"] = (snapshots, {r.name: _python(r, window) for r in snapshots})
        for reading, (roots, python) in readings.items():
            fleet = fleet_report([History(r.name, r) for r in roots], KINDS, window, workdir=base)
            everything = []
            for root in roots:
                one = python[root.name]
                everything += one.resources
                assert _fleet_figures(fleet, root.name) == _figures(one), reading
                assert _fleet_aggregates(fleet, root.name) == _aggregates(one), reading
            every = availability_report([f.resource for f in everything], window)
            assert _fleet_aggregates(fleet, FLEET) == _aggregates(every), reading


SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    st.lists(runs(), min_size=1, max_size=2),
    st.integers(0, 3600).map(lambda s: s * S),
    st.one_of(st.none(), st.integers(1, 4 * 3600).map(lambda s: s * S)),
)
def test_histories_megamon_wrote_give_megamon_reports_figures(
    clusters: list[list[Run]], end_after: int, since_before: int | None
) -> None:
    _check(clusters, end_after, since_before)


def test_reasons_archives_and_a_recovery_after_provisioning_as_megamon_report_reads_them() -> None:
    """A node pool provisions (down, ``unknown``), comes up, is interrupted for maintenance,
    recovers, is deleted; a JobSet runs and completes (a planned stop). The end of
    provisioning is no recovery, and the completed JobSet stays expected-down."""
    np_a, job = (Kind.NODEPOOL, "np-a"), (Kind.JOBSET, "uid-1")
    script = [
        Step(0, {np_a: (DOWN, UNKNOWN), job: (DOWN, UNKNOWN)}),
        Step(20 * S, {np_a: (UP, ""), job: (UP, "")}),
        Step(60 * S, {np_a: (DOWN, MAINTENANCE), job: (UP, "")}),
        Step(30 * S, {np_a: (UP, ""), job: (PLANNED, "")}),
        Step(30 * S, {job: (PLANNED, "")}),
    ]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "east"
        end = write_history(root, T0, [Run(0, script, 0.0)], RESOURCES)
        window = Window(now=end + 60 * S)
        fleet = fleet_report([History("east", root)], KINDS, window, workdir=Path(scratch))
    by_key = {f.resource.key: f for f in fleet.resources}
    assert by_key["np-a"].incidents.recoveries == 1
    assert by_key["np-a"].incidents.recovered_down_time == 30 * S
    assert by_key["np-a"].resource.retired_at == T0 + 140 * S
    assert by_key["uid-1"].state.value == "expected-down"
    assert by_key["uid-1"].availability == 100.0
    assert by_key["uid-1"].incidents.recoveries == 0
    _check([[Run(0, script, 0.0)]], 60 * S, None)
