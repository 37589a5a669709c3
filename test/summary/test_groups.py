"""A cluster's resources of one kind as one timeline (``summary.groups``): at every instant
the worst state of the resources that exist then, with how many are in it; and what is down
now in a fleet, whose clusters may name their node pools alike."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from megamon.domain.events import FLAG_UP, EventRecord, reason_bits
from megamon.domain.interruptions import MAINTENANCE, NODEPOOL, PREEMPTION
from megamon.domain.kinds import Kind
from megamon.summary.availability import (
    Resource,
    ResourceAvailability,
    Window,
    availability_report,
    resource_availability,
)
from megamon.summary.chips import down_now
from megamon.summary.groups import STATE_SEVERITY, group_timelines, worst_bands
from test.timeline import T0, H, M, down, record, up


def _figures(key: str, *events: object, cluster: str = "east") -> ResourceAvailability:
    resource = Resource(Kind.NODEPOOL, key, record(*events), cluster=cluster)  # type: ignore[arg-type]
    found = resource_availability(resource, Window(now=T0 + 10 * H))
    assert found is not None
    return found


def test_the_group_shows_the_worst_state_and_how_many_are_in_it() -> None:
    a = _figures("a", down(0), up(10 * M), down(2 * H), up(3 * H))
    b = _figures("b", down(H), up(H + 5 * M), down(2 * H + 30 * M, f=True), up(4 * H))
    bands = {(g.start - T0, g.end - T0): g[2:] for g in worst_bands([a, b])}
    assert bands[(2 * H, 2 * H + 30 * M)] == ("down", 1, 2)
    # failed over down while both are out, and still while a is up again: one band
    assert bands[(2 * H + 30 * M, 4 * H)] == ("failed", 1, 2)
    assert bands[(4 * H, 10 * H)] == ("up", 2, 2)
    assert bands[(0, 10 * M)][:2] == ("provisioning", 1)  # b does not exist yet
    assert bands[(0, 10 * M)][2] == 1


def test_between_lifetimes_the_group_has_no_band() -> None:
    retired = Resource(Kind.NODEPOOL, "old", record(down(0), up(M)), retired_at=T0 + H)
    late = Resource(Kind.NODEPOOL, "new", record(down(3 * H), up(3 * H + M)))
    report = availability_report([retired, late], Window(now=T0 + 4 * H))
    (group,) = group_timelines(report.resources)
    assert [(s - T0, e - T0) for s, e in group.spans] == [(0, H), (3 * H, 4 * H)]
    assert not any(b.start < T0 + 3 * H and b.end > T0 + H for b in group.bands)
    assert group.figures.resources == 2 and group.figures.times.up == H - M + H - M


_event = st.tuples(st.integers(0, 40), st.sampled_from([FLAG_UP, 0, 2, 4]))


@given(st.lists(st.lists(_event, min_size=1, max_size=8), min_size=1, max_size=5))
def test_every_instant_shows_the_worst_of_its_members(
    histories: list[list[tuple[int, int]]],
) -> None:
    members = []
    for n, drawn in enumerate(histories):
        events = sorted(dict(drawn).items())
        rec = EventRecord.trusted(tuple(T0 + t * M for t, _ in events), bytes(f for _, f in events))
        found = resource_availability(Resource(Kind.NODEPOOL, f"r{n}", rec), Window(T0 + 50 * M))
        if found is not None:
            members.append(found)
    grouped = worst_bands(members)
    for minute in range(50):
        t = T0 + minute * M
        states = [b.state for f in members for b in f.bands if b.start <= t < b.end]
        shown = [g for g in grouped if g.start <= t < g.end]
        if not states:
            assert not shown
            continue
        (band,) = shown
        worst = max(states, key=STATE_SEVERITY.__getitem__)
        assert (band.state, band.in_state, band.present) == (
            worst,
            states.count(worst),
            len(states),
        )


def test_down_now_names_the_pools_of_the_jobsets_own_cluster() -> None:
    """Two clusters both have a pool ``np``: a JobSet down for ``nodepool`` is named with its
    own cluster's pool and that pool's reason."""
    now = Window(now=T0 + 2 * H)

    def pool(cluster: str, reason: str) -> Resource:
        events = EventRecord.trusted((T0, T0 + M, T0 + H), bytes([FLAG_UP, 0, 0]))
        flagged = EventRecord.trusted(events.timestamps, bytes([FLAG_UP, reason_bits(reason), 0]))
        return Resource(Kind.NODEPOOL, "np", flagged, cluster=cluster)

    job_record = EventRecord.trusted((T0, T0 + M), bytes([FLAG_UP, reason_bits(NODEPOOL)]))
    job = Resource(Kind.JOBSET, "uid", job_record, detail="np", cluster="west")
    report = availability_report([pool("east", MAINTENANCE), pool("west", PREEMPTION), job], now)
    causes = {
        (d.figures.resource.cluster, d.figures.resource.kind): d.cause
        for d in down_now(report.resources)
    }
    assert causes[("west", Kind.JOBSET)] == f"node pool np, {PREEMPTION}"
    assert causes[("east", Kind.NODEPOOL)] == MAINTENANCE
