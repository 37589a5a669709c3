"""Histories written by megamon's own recorder: scripted observations appended through the
real ``EventLog`` (so the files are the ones ``megamon run`` leaves: Go-format snapshots whose
down events carry a ``reason``, archive entries, snapshot marks, segments with heartbeats),
over several runs with the time between them unobserved; and the copies of such a history
that keep only some of what it holds.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from megamon.domain.interruptions import NO_CAUSE, Cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore

UP, DOWN, FAILED, PLANNED = "up", "down", "failed", "planned"
"""A resource's scripted state at one step; ``planned`` is an expected-down observation."""


@dataclass(frozen=True)
class Step:
    """One batch: how long after the previous one, and the state (with the reason of a down
    one) of every resource observed; a resource left out is no longer observed (retired)."""

    after: int
    states: Mapping[tuple[Kind, str], tuple[str, str]]


@dataclass(frozen=True)
class Run:
    """One run of megamon: its batches, and how often it snapshots (0: every flush)."""

    gap_before: int
    steps: Sequence[Step]
    snapshot_interval_s: float


def observation(state: str, reason: str, attrs: Attrs) -> Observation:
    return Observation.build(
        expected=4,
        ready=4 if state == UP else 0,
        expected_down=state == PLANNED,
        failed=state == FAILED,
        attrs=attrs,
        cause=Cause(reason) if reason else NO_CAUSE,
    )


class ScriptClock:
    """The script's time, as the recorder's clock (snapshots due, segment dates)."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def write_runs(
    root: Path, start: int, runs: Sequence[Run], attrs: Mapping[tuple[Kind, str], Attrs]
) -> int:
    """Every run's batches appended through one ``EventLog`` per run, closed at its end as
    ``megamon run`` shuts down; the clock is the script's. Returns the last batch's time."""
    t = start
    store = LocalEventStore(root)
    kinds = {kind for kind, _ in attrs}
    for run in runs:
        t += run.gap_before
        clock = ScriptClock(t)
        log = EventLog(
            store,
            kinds,
            cluster=root.name,
            snapshot_interval_s=run.snapshot_interval_s,
            clock=clock,
        )
        for step in run.steps:
            t += step.after
            clock.now = t
            batch: dict[Kind, dict[str, Observation]] = {kind: {} for kind in kinds}
            for (kind, key), (state, reason) in step.states.items():
                batch[kind][key] = observation(state, reason, attrs[(kind, key)])
            log.append(batch, t)
        log.close()
    return t


def log_only(root: Path, copy: Path) -> Path:
    """A copy with the log's segments alone (no event file, archive entry or mark)."""
    shutil.copytree(root / "log", copy / "log", ignore=shutil.ignore_patterns("snapshots"))
    return copy


def snapshots_only(root: Path, copy: Path) -> Path:
    """A copy without the log's segments: the event files, archive entries and marks."""
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("kind=*"))
    return copy
