"""Random histories written by megamon's own ``EventLog`` (down events with reasons and
details, attributes, retirements into ``archive/``, heartbeats, snapshots at shutdown, and a
restart that leaves megamon unobserved for a while) give the same figures for every resource
on every surface and in every variant (``test.crosssurface``): the second net under the
scenarios, which each end with the same check."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from megamon.domain import interruptions, timestamps
from megamon.domain.interruptions import Cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore
from test.crosssurface import check_history

T0 = timestamps.parse("2026-06-01T00:00:00Z")
MINUTE = 60 * timestamps.NANOS_PER_SECOND
CYCLE = 5 * MINUTE
"""A cycle with nothing new still writes a heartbeat (one is due every minute)."""
STATES = ("up", "down", "failed", "planned")
CAUSES = (
    Cause(interruptions.MAINTENANCE),
    Cause(interruptions.PREEMPTION),
    Cause(interruptions.ERROR, "GKE says: quota exceeded"),
    Cause(interruptions.NODE_LOST),
    Cause(interruptions.UNKNOWN),
)
SHAPES = (
    {"tpu_accelerator": "tpu-v5p-slice", "tpu_topology": "2x2x1", "tpu_chip_count": 4},
    {"tpu_accelerator": "tpu-v6e-slice", "tpu_topology": "4x4", "tpu_chip_count": 16},
)


@dataclass(frozen=True)
class Scripted:
    """One resource: from each minute on, a state (and the cause of a down one)."""

    kind: Kind
    key: str
    attrs: Attrs
    states: tuple[tuple[int, str, Cause], ...]
    retired: int | None

    def alive(self, t: int) -> bool:
        return self.states[0][0] <= t and (self.retired is None or t < self.retired)

    def observation(self, t: int) -> Observation:
        _, state, cause = [s for s in self.states if s[0] <= t][-1]
        return Observation.build(
            expected=4,
            ready=4 if state == "up" else 0,
            expected_down=state == "planned",
            failed=state == "failed",
            attrs=self.attrs,
            cause=cause,
        )


@st.composite
def resources(draw: st.DrawFn, kind: Kind, n: int) -> Scripted:
    key = f"{kind.value}-{n}"
    at = draw(st.integers(0, 30))
    states = []
    for _ in range(draw(st.integers(1, 6))):
        states.append(
            (T0 + at * MINUTE, draw(st.sampled_from(STATES)), draw(st.sampled_from(CAUSES)))
        )
        at += draw(st.integers(1, 40))
    retired = T0 + (at + draw(st.integers(0, 20))) * MINUTE if draw(st.booleans()) else None
    names = (
        {"nodepool_name": key}
        if kind is Kind.NODEPOOL
        else {"jobset_name": key, "jobset_namespace": "team", "jobset_uid": key}
    )
    attrs = Attrs(**names, **draw(st.sampled_from(SHAPES)))
    return Scripted(kind, key, attrs, tuple(states), retired)


@st.composite
def fleets(draw: st.DrawFn) -> list[Scripted]:
    return [
        draw(resources(kind, n))
        for kind in (Kind.NODEPOOL, Kind.JOBSET)
        for n in range(draw(st.integers(0, 3)))
    ]


def _batch(fleet: list[Scripted], t: int) -> dict[Kind, dict[str, Observation]]:
    batch: dict[Kind, dict[str, Observation]] = {Kind.NODEPOOL: {}, Kind.JOBSET: {}}
    for r in fleet:
        if r.alive(t):
            batch[r.kind][r.key] = r.observation(t)
    return batch


def write(root: Path, fleet: list[Scripted], until: int, gap: tuple[int, int] | None) -> None:
    """Every instant the script changes, and a cycle every ``CYCLE``, through
    ``EventLog``; megamon stops (a clean shutdown) at ``gap[0]`` and starts again at
    ``gap[1]``."""
    store = LocalEventStore(root)
    log = EventLog(store, {Kind.NODEPOOL, Kind.JOBSET})
    instants = {s[0] for r in fleet for s in r.states} | {r.retired for r in fleet if r.retired}
    instants |= set(range(T0, until + 1, CYCLE))
    for t in sorted(i for i in instants if i <= until):
        if gap is not None and gap[0] < t < gap[1]:
            continue
        if gap is not None and t >= gap[1] and log is not None and gap[0] < gap[1]:
            log.close()
            log = EventLog(LocalEventStore(root), {Kind.NODEPOOL, Kind.JOBSET})
            gap = None
        log.append(_batch(fleet, t), t)
    log.close()


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure names every difference
)
@given(
    fleets(),
    st.integers(60, 150),
    st.one_of(st.none(), st.tuples(st.integers(10, 80), st.integers(1, 60))),
    st.integers(0, 120),
)
def test_a_written_history_reads_the_same_on_every_surface(
    fleet: list[Scripted], length: int, gap: tuple[int, int] | None, after: int
) -> None:
    until = T0 + length * MINUTE
    stop_start = None if gap is None else (T0 + gap[0] * MINUTE, T0 + (gap[0] + gap[1]) * MINUTE)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "history"
        write(root, fleet, until, stop_start)
        if not any(root.glob("log/kind=*")):
            return  # nothing was ever observed: no history
        check_history(root, until + after * MINUTE)
