"""The report stage: one immutable snapshot from the latest observations and records,
summarized at one ``now``.

Pure, but for a memo the caller owns: summarizing every resource's whole history every
cycle would cost O(events in the fleet) per cycle, though only a few records change from
one cycle to the next. Records are immutable, so what a record's summary owes to its events
alone (``summarizing.settle``) is kept as a fold per resource (``SummaryFold``): a record
that gained events is folded on by those events only, and each cycle adds the running time
(``Settled.at(now)``) — the same figures, to the nanosecond, as summarizing from scratch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from megamon.domain.events import EMPTY_RECORD, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import Summary
from megamon.summary.summarizing import Extends, Settled, SummaryFold, extends, summary_at


class SettledMemo:
    """The summary fold of each resource of the last report, by kind and key.

    A record that gained events since the last report is folded on from where its fold
    stopped (``SummaryFold``), so a cycle costs the new events, not the histories; a record
    that is not an extension of the one folded (a history rebuilt or merged) is folded
    afresh. Each report keeps the entries it used and drops the rest, so the memo never
    holds more than one report's resources. ``seed`` hands in folds made elsewhere (the
    persisted summary state read at start-up).
    """

    def __init__(self) -> None:
        self._entries: dict[Kind, dict[str, _Entry]] = {}
        self._lock = threading.Lock()

    def seed(self, kind: Kind, key: str, record: EventRecord, fold: SummaryFold) -> None:
        """Use ``fold`` (of ``record``, or of a record it extends) for ``key``."""
        with self._lock:
            self._entries.setdefault(kind, {})[key] = _Entry(record, fold, None)

    def folds(self) -> dict[tuple[Kind, str], tuple[EventRecord, SummaryFold]]:
        """Every resource's record and fold, as of the last report."""
        with self._lock:
            return {
                (kind, key): (e.record, e.fold)
                for kind, entries in self._entries.items()
                for key, e in entries.items()
            }

    def summaries(
        self,
        parts: Iterable[tuple[Kind, Mapping[str, Observation], Mapping[str, EventRecord]]],
        now: int,
        extended: Extends = extends,
    ) -> list[SummariesAt]:
        """For each (kind, observations, records) part: every observed key's summary at
        ``now`` (made when first read)."""
        with self._lock:  # held throughout: the folds are updated in place
            previous = self._entries
            self._entries = {}
            result = []
            for kind, observations, records in parts:
                found = previous.get(kind, {}).get
                kept = self._entries[kind] = {}
                settled: dict[str, Settled] = {}
                ahead: dict[str, EventRecord] = {}
                for key in observations:
                    record = records.get(key, EMPTY_RECORD)
                    entry = found(key)
                    if entry is None or entry.record is not record or entry.settled is None:
                        entry = _folded(entry, record, extended)
                    kept[key] = entry
                    assert entry.settled is not None
                    settled[key] = entry.settled
                    if not entry.settled.holds_at(now):
                        ahead[key] = record
                result.append(SummariesAt(settled, ahead, now))
        return result


class SummariesAt(Mapping[str, Summary]):
    """The summaries of one kind's resources at ``now``, each made when first read.

    A report holds every resource's summary, but between two cycles of a large fleet only
    the running figures of most of them changed (``Settled.running``), and the metrics
    read just those: they ask for ``settled(key)`` and keep what they wrote from the same
    ``Settled`` object. Anything else (the JSON report, an exporter) reads summaries as
    from a dict, the same figures to the nanosecond (``summary_at``).
    """

    __slots__ = ("_ahead", "_made", "_settled", "now")

    def __init__(
        self, settled: dict[str, Settled], ahead: dict[str, EventRecord], now: int
    ) -> None:
        self._settled = settled
        self._ahead = ahead
        """The records with events later than ``now`` (``Settled.holds_at``), summarized
        from their events up to ``now``."""
        self._made: dict[str, Summary] = {}
        self.now = now

    def __getitem__(self, key: str) -> Summary:
        found = self._made.get(key)
        if found is None:
            settled = self._settled[key]
            record = self._ahead.get(key)
            made = settled.at(self.now) if record is None else summary_at(record, settled, self.now)
            found = self._made[key] = made
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._settled)

    def __len__(self) -> int:
        return len(self._settled)

    def __contains__(self, key: object) -> bool:
        return key in self._settled

    def settled(self, key: str) -> Settled | None:
        """What ``key``'s summary owes to its events alone (``None``: no such key): kept,
        as the same object, for as long as its record is unchanged."""
        return self._settled.get(key)


@dataclass(slots=True)
class _Entry:
    record: EventRecord
    fold: SummaryFold
    settled: Settled | None
    """``fold.settled()``; ``None`` until first asked for."""


def _folded(entry: _Entry | None, record: EventRecord, extended: Extends = extends) -> _Entry:
    """``entry``'s fold taken on to ``record`` when ``record`` extends what it folded, else
    a fold of ``record`` from its first event."""
    if (
        entry is not None
        and extended(record, entry.record)
        and entry.fold.count == len(entry.record)
    ):
        fold = entry.fold
    else:
        fold = SummaryFold()
    fold.fold(record)
    return _Entry(record, fold, fold.settled())


def build_report(
    observations: Mapping[Kind, Mapping[str, Observation]],
    records: Mapping[Kind, Mapping[str, EventRecord]],
    *,
    kinds: Iterable[Kind],
    scheduling: Mapping[str, ScheduledJob],
    observed_at: Mapping[str, int],
    now: int,
    memo: SettledMemo,
    extended: Extends = extends,
) -> Report:
    """Summaries of every observed resource of ``kinds`` at ``now``, with its observation.

    ``memo`` belongs to the caller (one per report assembly), so two services in one process
    never share what they settled."""
    kinds = list(kinds)
    observed = [dict(observations.get(kind, {})) for kind in kinds]
    kind_records = [records.get(kind, {}) for kind in kinds]
    summaries = memo.summaries(zip(kinds, observed, kind_records, strict=True), now, extended)
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
