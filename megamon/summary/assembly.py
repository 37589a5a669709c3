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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.reports import Report, ScheduledJob
from megamon.errors import MegamonError
from megamon.summary.availability import unobserved_gaps
from megamon.summary.chiptally import ChipTally, Span
from megamon.summary.distributions import Counted, DistributionTally
from megamon.summary.foldstate import (
    KindState,
    Periods,
    ResourceState,
    StateError,
    bounds,
    decode_state,
    encode_state,
)
from megamon.summary.report import SettledMemo, build_report
from megamon.summary.summarizing import Extensions, extends

log = logging.getLogger(__name__)

MISSING, STALE, CORRUPT, UNREADABLE = "missing", "stale", "corrupt", "unreadable"
"""Why a kind's summaries were folded from the history, not the persisted state."""

Coverage = Mapping[Kind, Sequence[Span]]
"""Per kind, the spans its history records as observed (sorted, disjoint)."""


class SummaryStateStore(Protocol):
    """Where the summary state lives beside each snapshot (``stores.segments.SegmentLog``)."""

    def read_summary_state(self, kind: Kind) -> bytes | None: ...

    def write_summary_state(self, kind: Kind, data: bytes) -> None: ...


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

    def __init__(
        self,
        kinds: Iterable[Kind],
        archive: Archive,
        *,
        unobserved_slack_ns: int,
        state_store: SummaryStateStore | None = None,
        on_rebuilt: Callable[[Kind, str], object] | None = None,
    ):
        """``state_store``: where the summary state is written beside each snapshot
        (``snapshotted``) and read at the first report (``None``: neither). ``on_rebuilt``:
        told of each kind whose summaries were folded from the history instead, with why
        (``missing``, ``stale``, ``corrupt``, ``unreadable``)."""
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
        self._state_store = state_store
        self._on_rebuilt = on_rebuilt
        self._restored = False
        self._folding = threading.Lock()
        """Held while the folds change (``build``) or are written (``snapshotted``)."""

    def _start_over(self, epoch: int) -> None:
        """Forget the tallies and read the archive again at this report: another writer may
        have retired resources meanwhile, and would be counted twice with what was kept. The
        retirements handed over and not counted yet stay: the archive read counts each once."""
        self._distributions = DistributionTally()
        with self._lock:
            self._chips = ChipTally()
            self._archive_read = False
        self._epoch = epoch
        self._restored = False

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
        snapshots: Mapping[Kind, str | None] | None = None,
    ) -> Report:
        """The report at ``now``: every observed resource's summary, the histograms, the
        chip-seconds down and the chip availability, all from the same history.

        ``epoch``: the event log's (``EventLog.epoch``). When it changes, the history was
        dropped and read again (this process stood by while another wrote it), so both
        tallies start over from the archive and these records, as at start.

        ``snapshots``: the event log's (``EventLog.snapshot_digests``). The first report
        takes each kind's folds from the summary state written beside that snapshot, when
        there is one and it holds."""
        with self._folding:
            return self._build(
                observations,
                records,
                coverage=coverage,
                scheduling=scheduling,
                observed_at=observed_at,
                now=now,
                epoch=epoch,
                snapshots=snapshots or {},
            )

    def _build(
        self,
        observations: Mapping[Kind, Mapping[str, Observation]],
        records: Mapping[Kind, Mapping[str, EventRecord]],
        *,
        coverage: Coverage,
        scheduling: Mapping[str, ScheduledJob],
        observed_at: Mapping[str, int],
        now: int,
        epoch: int,
        snapshots: Mapping[Kind, str | None],
    ) -> Report:
        if epoch != self._epoch:
            self._start_over(epoch)
        if not self._restored:
            self._restore(records, snapshots)
            self._restored = True
        if not self._archive_read:
            self._read_archive()
        extended = Extensions()  # the three folds of a changed record compare it once
        for kind in self._kinds:
            kind_records = records.get(kind, {})
            attrs = {key: obs.attrs for key, obs in observations.get(kind, {}).items()}
            self._distributions.update(kind.value, kind_records, attrs, extended)
            self._distributions.count_queueing(kind.value, observations.get(kind, {}))
            gaps = unobserved_gaps(coverage.get(kind, ()), now, self._slack)
            with self._lock:
                self._chips.update(kind, kind_records, attrs, gaps, extended)
        report = build_report(
            observations,
            records,
            kinds=self._kinds,
            scheduling=scheduling,
            observed_at=observed_at,
            now=now,
            memo=self._memo,
            extended=extended,
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

    # -- the persisted summary state ---------------------------------------------------------

    def snapshotted(self, kind: Kind, records: Mapping[str, EventRecord], digest: str) -> None:
        """The event log wrote ``records`` as ``kind``'s snapshot (file digest ``digest``):
        write the summary state beside it. A failure is logged; the next start-up then
        folds that kind from its history."""
        if self._state_store is None or kind not in self._by_value.values():
            return
        with self._folding:
            data = encode_state(self._state_of(kind, records, digest))
        try:
            self._state_store.write_summary_state(kind, data)
        except MegamonError as err:
            log.warning(
                "%s: cannot write the summary state (the next start folds it): %s", kind, err
            )

    def _state_of(self, kind: Kind, records: Mapping[str, EventRecord], digest: str) -> KindState:
        """Every fold held for the keys of ``records`` that folded a prefix of the record
        written (the state describes that snapshot: a fold of anything else is left out, and
        its resource folded from the history at the next start), each part with the record
        it folded."""
        summaries = self._memo.folds()
        counted = self._distributions.counted(kind.value)
        chips = self._chips.folds(kind)
        state = KindState(kind.value, digest, self._chips.gaps(kind))
        for key, written in records.items():
            found = summaries.get((kind, key))
            periods = counted.get(key)
            availability = chips.get(key)
            reference = (
                found[0]
                if found is not None
                else periods.record
                if periods is not None
                else availability[0]
                if availability is not None
                else None
            )
            if reference is None or not (reference is written or extends(written, reference)):
                continue
            count = len(reference)

            def same(record: EventRecord, folded: int, ref: EventRecord = reference) -> bool:
                return folded == len(ref) and (record is ref or record == ref)

            resource = ResourceState(count, bounds(reference, count))
            if found is not None and same(found[0], found[1].count):
                resource.summary = found[1]
            if periods is not None and same(periods.record, periods.fold.count):
                resource.periods = Periods(
                    periods.fold, periods.shape, periods.chips, periods.contribution
                )
            if availability is not None and same(availability[0], availability[1].count):
                resource.availability = availability[1]
            state.resources[key] = resource
        return state

    def _restore(
        self,
        records: Mapping[Kind, Mapping[str, EventRecord]],
        snapshots: Mapping[Kind, str | None],
    ) -> None:
        """Take each kind's folds from its summary state; what is missing, stale or corrupt
        is folded from the history by this report, logged and counted."""
        if self._state_store is None:
            return
        for kind in self._kinds:
            kind_records = records.get(kind, {})
            why = self._restore_kind(kind, kind_records, snapshots.get(kind))
            if why is None:
                continue
            reason, detail = why
            if kind_records:
                log.info("%s: summaries folded from the history (%s)", kind, detail)
            if self._on_rebuilt is not None:
                self._on_rebuilt(kind, reason)

    def _restore_kind(
        self, kind: Kind, records: Mapping[str, EventRecord], snapshot: str | None
    ) -> tuple[str, str] | None:
        """Seed the folds of ``kind`` from its state; why not, when not."""
        assert self._state_store is not None
        try:
            data = self._state_store.read_summary_state(kind)
        except MegamonError as err:
            return UNREADABLE, f"the summary state cannot be read: {err}"
        if data is None:
            return MISSING, "no summary state"
        try:
            state = decode_state(data)
        except StateError as err:
            return CORRUPT, f"the summary state is corrupt: {err}"
        if state.kind != kind.value:
            return CORRUPT, f"the summary state is {state.kind!r}'s"
        if snapshot is None or state.snapshot != snapshot:
            return STALE, "the summary state was written beside another snapshot"
        used = 0
        for key, record in records.items():
            resource = state.resources.get(key)
            if resource is None or not self._seed(kind, key, record, resource, state):
                continue
            used += 1
        if used < len(records):
            log.info(
                "%s: %d of %d resources' summaries from the summary state, the others from "
                "their history",
                kind,
                used,
                len(records),
            )
        return None

    def _seed(
        self, kind: Kind, key: str, record: EventRecord, resource: ResourceState, state: KindState
    ) -> bool:
        """Seed ``key``'s folds, when its history extends what they folded."""
        count = resource.count
        if not resource.folded(record):
            return False
        prefix = (
            record
            if count == len(record)
            else EventRecord.trusted(record.timestamps[:count], record.flags[:count])
        )
        if resource.summary is not None and resource.summary.count == count:
            self._memo.seed(kind, key, prefix, resource.summary)
        periods = resource.periods
        if periods is not None and periods.fold.count == count:
            counted = Counted(
                prefix,
                None,
                periods.shape,
                periods.fold,
                periods.chips,
                None,
                periods.contribution,
                seeded=True,
            )
            self._distributions.seed(kind.value, key, counted)
        if resource.availability is not None and resource.availability.count == count:
            with self._lock:
                self._chips.seed(kind, key, prefix, resource.availability, state.gaps)
        return True

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
