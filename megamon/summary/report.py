"""The report stage: one immutable snapshot from the latest observations and records,
summarized at one ``now``.

Pure, but for a memo the caller owns: summarizing every resource's whole history every
cycle would cost O(events in the fleet) per cycle, though only a few records change from
one cycle to the next. Records are immutable, so what a record's summary owes to its events
alone (``summarizing.settle``) is kept for as long as the record stays its key's latest;
each cycle then only adds the running time (``Settled.at(now)``) — the same figures, to the
nanosecond, as summarizing from scratch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from megamon.domain.events import EMPTY_RECORD, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import Summary
from megamon.summary.summarizing import Settled, settle


class SettledMemo:
    """The settled part of the summary of each record of the last report, by identity.

    Each report keeps the entries it used and drops the rest, so the memo never holds more
    than one report's records (which the event log holds anyway).
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[EventRecord, Settled]] = {}
        self._lock = threading.Lock()

    def summaries(
        self,
        parts: Iterable[tuple[Mapping[str, Observation], Mapping[str, EventRecord]]],
        now: int,
    ) -> list[dict[str, Summary]]:
        """For each (observations, records) part: every observed key's summary at ``now``."""
        with self._lock:
            previous = self._entries
        kept: dict[int, tuple[EventRecord, Settled]] = {}
        result = []
        for observations, records in parts:
            summaries: dict[str, Summary] = {}
            for key in observations:
                record = records.get(key, EMPTY_RECORD)
                entry = kept.get(id(record)) or previous.get(id(record))
                if entry is None or entry[0] is not record:
                    entry = (record, settle(record))
                kept[id(record)] = entry
                summaries[key] = entry[1].at(now)
            result.append(summaries)
        with self._lock:
            self._entries = kept
        return result


def build_report(
    observations: Mapping[Kind, Mapping[str, Observation]],
    records: Mapping[Kind, Mapping[str, EventRecord]],
    *,
    kinds: Iterable[Kind],
    scheduling: Mapping[str, ScheduledJob],
    observed_at: Mapping[str, int],
    now: int,
    memo: SettledMemo,
) -> Report:
    """Summaries of every observed resource of ``kinds`` at ``now``, with its observation.

    ``memo`` belongs to the caller (one per report assembly), so two services in one process
    never share what they settled."""
    kinds = list(kinds)
    observed = [dict(observations.get(kind, {})) for kind in kinds]
    kind_records = [records.get(kind, {}) for kind in kinds]
    summaries = memo.summaries(zip(observed, kind_records, strict=True), now)
    # The parts are already-validated models; skip re-validating thousands of them.
    parts = {
        kind: KindReport.model_construct(observations=observations, summaries=kind_summaries)
        for kind, observations, kind_summaries in zip(kinds, observed, summaries, strict=True)
    }
    return Report.model_construct(
        generated_at=now,
        kinds=parts,
        scheduling=dict(scheduling),
        observed_at=dict(observed_at),
    )
