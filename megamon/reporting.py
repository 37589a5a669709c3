"""The report stage: one immutable snapshot from the event log's latest observations and
records, summarized at one ``now``. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from megamon.eventlog import LogSnapshot
from megamon.history.summarizing import summarize
from megamon.records.events import EMPTY_RECORD
from megamon.records.kinds import Kind
from megamon.records.reports import KindReport, Report, ScheduledJob


def build_report(
    log: LogSnapshot,
    kinds: Iterable[Kind],
    scheduling: Mapping[str, ScheduledJob],
    observed_at: Mapping[str, int],
    now: int,
) -> Report:
    """Summaries of every observed resource of ``kinds`` at ``now``, with its observation."""
    parts: dict[Kind, KindReport] = {}
    for kind in kinds:
        observations = dict(log.observations.get(kind, {}))
        records = log.records.get(kind, {})
        summaries = {key: summarize(records.get(key, EMPTY_RECORD), now) for key in observations}
        # The parts are already-validated models; skip re-validating thousands of them.
        parts[kind] = KindReport.model_construct(observations=observations, summaries=summaries)
    return Report.model_construct(
        generated_at=now,
        kinds=parts,
        scheduling=dict(scheduling),
        observed_at=dict(observed_at),
    )
