"""Histories written from a script of states, through the real ``EventLog`` into any
``EventStore`` — so the files are exactly what ``megamon run`` leaves — plus the
``reports/latest.json`` the gcs exporter writes to label live resources. Used by the report
screenshot and the ``megamon report`` tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from megamon.domain.interruptions import NO_CAUSE, Cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.publishing.exporters.archives import ObjectReportExporter
from megamon.recording.eventlog import EventLog
from megamon.stores.base import EventStore
from megamon.summary.summarizing import summarize_all

UP, DOWN, FAILED, PLANNED = "up", "down", "failed", "planned"
"""Scripted states; ``planned`` is an expected-down observation (a planned stop). A down or
failed state may name its reason: ``"down:maintenance"`` (``because``)."""


def because(state: str, reason: str) -> str:
    """``state`` observed with ``reason`` (``interruptions.REASONS``)."""
    return f"{state}:{reason}"


Batch = dict[Kind, dict[str, Observation]]


@dataclass(frozen=True)
class ScriptedResource:
    """One resource: its state from each given instant on, and when it vanishes (if ever)."""

    kind: Kind
    key: str
    attrs: Attrs
    states: tuple[tuple[int, str], ...]
    retired: int | None = None

    def state_at(self, t: int) -> str:
        return [state for at, state in self.states if at <= t][-1]

    def alive(self, t: int) -> bool:
        return self.states[0][0] <= t and (self.retired is None or t < self.retired)

    def observation(self, t: int) -> Observation:
        state, _, reason = self.state_at(t).partition(":")
        return Observation.build(
            expected=4,
            ready=4 if state == UP else 0,
            expected_down=state == PLANNED,
            failed=state == FAILED,
            attrs=self.attrs,
            cause=Cause(reason) if reason else NO_CAUSE,
        )


def batch_at(fleet: Iterable[ScriptedResource], t: int) -> Batch:
    """What the observers would report at ``t``: every resource alive then."""
    batch: Batch = {Kind.NODEPOOL: {}, Kind.JOBSET: {}}
    for resource in fleet:
        if resource.alive(t):
            batch.setdefault(resource.kind, {})[resource.key] = resource.observation(t)
    return batch


def record(store: EventStore, fleet: list[ScriptedResource], until: int) -> Batch:
    """Append the observations at every instant the script changes, and at ``until``;
    returns the last batch (what the latest report describes)."""
    log = EventLog(store, {r.kind for r in fleet})
    instants = {at for r in fleet for at, _ in r.states if at < until}
    instants |= {r.retired for r in fleet if r.retired is not None and r.retired < until}
    for t in sorted(instants):
        log.append(batch_at(fleet, t), t)
    latest = batch_at(fleet, until)
    log.append(latest, until)
    log.close()  # as megamon run's shutdown: snapshot, release the writer lease
    return latest


def export_latest_report(
    exporter: ObjectReportExporter,
    store: EventStore,
    observations: Mapping[Kind, Mapping[str, Observation]],
    now: int,
) -> None:
    """``reports/latest.json`` (and its hourly archive) as the gcs exporter writes it."""
    kinds = {
        kind: KindReport(
            observations=dict(observed), summaries=summarize_all(store.read(kind).records, now)
        )
        for kind, observed in observations.items()
    }
    exporter.export(Report(generated_at=now, kinds=kinds))
