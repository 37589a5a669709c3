"""The report assembly: what a report is built from that lives from one cycle to the next.

A report is the latest observations and records summarized at one ``now`` (``report``), the
histograms of the durable history (``distributions``) and the chip availability ``megamon
report`` prints (``chiptally``). Each keeps what it settled from one cycle to the next, so a
cycle costs what changed, and the histograms and chip figures count retired resources from
the archive. ``ReportAssembly`` holds all of it, one per service, built in ``megamon.app``
and handed to the aggregator, whose loop then holds no figures of its own.

The archive is read through the ``Archive`` protocol (the event store is one): once, at the
first report whose archive can be read; a resource retired later is counted from the archive
entry the event log hands over as it retires it (``retired``), so no cycle reads the archive
again, unless the event log dropped the history meanwhile (its ``epoch``: another replica
wrote it while this one stood by); then both tallies start over, as at start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.reports import Report, ScheduledJob
from megamon.errors import MegamonError
from megamon.summary.availability import unobserved_gaps
from megamon.summary.chiptally import ChipTally, Span
from megamon.summary.distributions import DistributionTally
from megamon.summary.report import SettledMemo, build_report

log = logging.getLogger(__name__)

Coverage = Mapping[Kind, Sequence[Span]]
"""Per kind, the spans its history records as observed (sorted, disjoint)."""


class Archive(Protocol):
    """Where retired resources' histories are read from (``stores.base.EventStore``)."""

    def archived_keys(self, kind: Kind) -> list[str]: ...

    def read_archive(self, kind: Kind, key: str) -> list[ArchiveEntry]:
        """Every retirement of ``key``, oldest first."""
        ...


def _identity(entry: ArchiveEntry) -> tuple[str, str, int]:
    return entry.kind, entry.key, entry.retired_at


class ReportAssembly:
    """Builds each report from the records, observations and coverage of one cycle.

    ``unobserved_slack_ns``: how old a running megamon's last heartbeat may be before its
    absence counts as unobserved time (``recording.eventlog.UNOBSERVED_SLACK_NS``, the rule
    ``megamon report`` reads the same history with).
    """

    def __init__(self, kinds: Iterable[Kind], archive: Archive, *, unobserved_slack_ns: int):
        self._kinds = sorted(frozenset(kinds), key=str)
        self._by_value = {kind.value: kind for kind in self._kinds}
        self._archive = archive
        self._slack = unobserved_slack_ns
        self._memo = SettledMemo()
        self._distributions = DistributionTally()
        self._chips = ChipTally()
        self._lock = threading.Lock()
        self._archive_read = False
        self._retirements: list[ArchiveEntry] = []
        """Retirements handed over and not counted yet."""
        self._epoch = 0

    def _start_over(self, epoch: int) -> None:
        """Forget the tallies and read the archive again at this report: another writer may
        have retired resources meanwhile, and would be counted twice with what was kept. The
        retirements handed over and not counted yet stay: the archive read counts each once."""
        self._distributions = DistributionTally()
        with self._lock:
            self._chips = ChipTally()
            self._archive_read = False
        self._epoch = epoch

    def retired(self, entry: ArchiveEntry) -> None:
        """A resource the event log just retired: the chip figures go on counting it, from
        the next report whose records no longer hold it live. Called from whichever loop
        records."""
        if entry.kind in self._by_value:
            with self._lock:
                self._retirements.append(entry)

    def build(
        self,
        observations: Mapping[Kind, Mapping[str, Observation]],
        records: Mapping[Kind, Mapping[str, EventRecord]],
        *,
        coverage: Coverage,
        scheduling: Mapping[str, ScheduledJob],
        observed_at: Mapping[str, int],
        now: int,
        epoch: int = 0,
    ) -> Report:
        """The report at ``now``: every observed resource's summary, the histograms, the
        chip-seconds down and the chip availability, all from the same history.

        ``epoch``: the event log's (``EventLog.epoch``). When it changes, the history was
        dropped and read again (this process stood by while another wrote it), so both
        tallies start over from the archive and these records, as at start."""
        if epoch != self._epoch:
            self._start_over(epoch)
        if not self._archive_read:
            self._read_archive()
        for kind in self._kinds:
            kind_records = records.get(kind, {})
            attrs = {key: obs.attrs for key, obs in observations.get(kind, {}).items()}
            self._distributions.update(kind.value, kind_records, attrs)
            self._distributions.count_queueing(kind.value, observations.get(kind, {}))
            gaps = unobserved_gaps(coverage.get(kind, ()), now, self._slack)
            with self._lock:
                self._chips.update(kind, kind_records, attrs, gaps)
        report = build_report(
            observations,
            records,
            kinds=self._kinds,
            scheduling=scheduling,
            observed_at=observed_at,
            now=now,
            memo=self._memo,
        )
        covered = {
            kind: max((end for _, end in spans), default=None) for kind, spans in coverage.items()
        }
        with self._lock:
            if self._archive_read:
                self._count_retirements(records)
            chip_availability = self._chips.rows(now, covered)
        tally = self._distributions
        update = {
            "distributions": tally.frozen(),
            "chips_down": tally.chips_down_rows(now),
            "chip_availability": chip_availability,
        }
        return report.model_copy(update=update)

    def _count_retirements(self, records: Mapping[Kind, Mapping[str, EventRecord]]) -> None:
        """Count the retirements whose resource these records no longer hold live; one they
        still hold (records taken just before it retired) waits for the next report."""
        waiting = []
        for entry in self._retirements:
            kind = self._by_value[entry.kind]
            if records.get(kind, {}).get(entry.key) == entry.record:
                waiting.append(entry)
            else:
                self._chips.add_archived(kind, entry)
        self._retirements = waiting

    def _read_archive(self) -> None:
        """Every archived resource, once; a failure leaves nothing counted and is retried at
        the next report. A retirement handed over already and found in the archive too is
        counted once."""
        read: set[tuple[str, str, int]] = set()
        try:
            for kind in self._kinds:
                for key in self._archive.archived_keys(kind):
                    for entry in self._archive.read_archive(kind, key):
                        self._distributions.add_archived(kind.value, entry.record, entry.attrs)
                        with self._lock:
                            self._chips.add_archived(kind, entry)
                        read.add(_identity(entry))
        except MegamonError as err:
            log.warning("histograms, chip figures: cannot read the archive yet (retried): %s", err)
            self._distributions = DistributionTally()
            with self._lock:
                self._chips.drop_archived()
            return
        with self._lock:
            self._retirements = [e for e in self._retirements if _identity(e) not in read]
            self._archive_read = True
