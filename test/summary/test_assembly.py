"""The report assembly: what a report is built from between cycles (settled summaries,
histogram tally, chip tally) and the archive it reads retired resources from, over history
the real event log writes into the memory store."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from megamon.domain import distributions
from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import Report
from megamon.errors import StoreError
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.stores.memory import MemoryEventStore
from megamon.summary.assembly import ReportAssembly
from megamon.summary.summarizing import SummaryFold

S = 10**9
H = 3600 * S
T0 = 1_780_272_000 * S
POOL = Attrs(tpu_accelerator="tpu-v6e-slice", tpu_topology="4x4", tpu_chip_count=16)
UP = Observation.build(expected=4, ready=4, attrs=POOL)
DOWN = Observation.build(expected=4, ready=3, attrs=POOL)
KINDS = frozenset({Kind.NODEPOOL})


class Archive:
    """The store's archive, counting its reads; ``fail`` makes the next read fail."""

    def __init__(self, store: MemoryEventStore) -> None:
        self.store = store
        self.listed = 0
        self.fail = False

    def archived_keys(self, kind: Kind) -> list[str]:
        self.listed += 1
        if self.fail:
            self.fail = False
            raise StoreError("archive unreachable")
        return self.store.archived_keys(kind)

    def read_archive(self, kind: Kind, key: str) -> list[ArchiveEntry]:
        return self.store.read_archive(kind, key)


class History:
    """A node pool history recorded by the event log, and an assembly reporting on it."""

    Batch = tuple[
        Mapping[Kind, Mapping[str, Observation]], Mapping[Kind, Mapping[str, EventRecord]]
    ]

    def __init__(self, store: MemoryEventStore | None = None, holder: str = "a") -> None:
        self.store = store or MemoryEventStore()
        self.archive = Archive(self.store)
        self.assembly = ReportAssembly(KINDS, self.archive, unobserved_slack_ns=UNOBSERVED_SLACK_NS)
        self.log = EventLog(self.store, KINDS, holder=holder, on_retired=self.assembly.retired)
        self.observations: dict[Kind, Mapping[str, Observation]] = {}

    def record(self, now: int, pools: dict[str, Observation]) -> None:
        self.log.append({Kind.NODEPOOL: pools}, now)
        self.observations = {Kind.NODEPOOL: pools}

    def report(self, now: int, stale: History.Batch | None = None) -> Report:
        """A cycle at ``now``: the latest observations recorded again (megamon is still
        watching), then the report of that batch, or of ``stale``'s."""
        self.record(now, dict(self.observations.get(Kind.NODEPOOL, {})))
        observations, records = stale or (self.observations, self.log.records())
        return self.assembly.build(
            observations,
            records,
            coverage=self.log.coverage(),
            epoch=self.log.epoch,
            scheduling={},
            observed_at={},
            now=now,
        )


def interrupted_and_retired(history: History) -> None:
    """``old`` up 1 h, down 1 h, up 2 h, retired at 4 h; ``np`` up from 4 h."""
    history.record(T0, {"old": UP})
    history.record(T0 + H, {"old": DOWN})
    history.record(T0 + 2 * H, {"old": UP})
    history.record(T0 + 4 * H, {"np": UP})


def recoveries(report: Report) -> int:
    return sum(
        histogram.count
        for key, histogram in report.distributions
        if key.measure == distributions.TIME_TO_RECOVER
    )


def chip_ratio(report: Report) -> dict[tuple[str, str], float]:
    return {(kind, accelerator): ratio for kind, accelerator, ratio in report.chip_availability}


def test_a_report_holds_summaries_histograms_and_chip_figures_of_one_history() -> None:
    history = History()
    interrupted_and_retired(history)
    report = history.report(T0 + 6 * H)
    assert report.kind(Kind.NODEPOOL).summaries["np"].up_time == 2 * H
    assert recoveries(report) == 1
    # old: up 3 h, down 1 h; np: up 2 h; 16 chips each
    assert chip_ratio(report) == {("nodepool", "tpu-v6e-slice"): pytest.approx(5 / 6)}


def test_a_resource_retired_before_start_is_read_from_the_archive_once() -> None:
    """A restart: ``old`` is only in the archive now. It is read at the first report and
    never again, and counts in the histograms and the chip ratio all the same."""
    first = History()
    interrupted_and_retired(first)
    first.log.close()
    history = History(first.store)
    history.record(T0 + 5 * H, {"np": UP})
    reports = [history.report(T0 + 6 * H), history.report(T0 + 7 * H)]
    assert history.archive.listed == 1
    assert [recoveries(r) for r in reports] == [1, 1]
    # the hour megamon was not running (4 h to 5 h) is unobserved: np up 1 h, then 2 h
    assert [chip_ratio(r) for r in reports] == [
        {("nodepool", "tpu-v6e-slice"): pytest.approx(4 / 5)},
        {("nodepool", "tpu-v6e-slice"): pytest.approx(5 / 6)},
    ]


def test_an_unreadable_archive_is_read_again_at_the_next_report_and_counted_once() -> None:
    first = History()
    interrupted_and_retired(first)
    first.log.close()
    history = History(first.store)
    history.record(T0 + 5 * H, {"np": UP})
    history.archive.fail = True
    without = history.report(T0 + 6 * H)
    assert recoveries(without) == 0
    assert chip_ratio(without) == {("nodepool", "tpu-v6e-slice"): 1.0}  # np alone
    again = [history.report(T0 + 6 * H), history.report(T0 + 6 * H)]
    assert history.archive.listed == 2
    assert [recoveries(r) for r in again] == [1, 1]
    assert [chip_ratio(r) for r in again] == [
        {("nodepool", "tpu-v6e-slice"): pytest.approx(4 / 5)}
    ] * 2


def test_a_retirement_before_the_first_report_that_the_archive_holds_too_counts_once() -> None:
    """The event log hands a retirement over as it records it; it is archived at the same
    flush, before the first report reads the archive."""
    history = History()
    interrupted_and_retired(history)
    assert history.store.archived_keys(Kind.NODEPOOL) == ["old"]
    report = history.report(T0 + 6 * H)
    assert chip_ratio(report) == {("nodepool", "tpu-v6e-slice"): pytest.approx(5 / 6)}


def test_a_retirement_the_records_still_hold_live_waits_for_the_next_report() -> None:
    """Records taken just before a retirement was recorded still hold the resource live:
    it counts once (live), then once (retired) at the next report."""
    history = History()
    history.record(T0, {"old": UP, "np": UP})
    history.record(T0 + H, {"old": DOWN, "np": UP})
    history.report(T0 + H)  # the archive (empty) is read
    before = (history.observations, history.log.records())
    history.record(T0 + 2 * H, {"np": UP})  # old retired, handed over now
    stale = history.report(T0 + 3 * H, stale=before)
    # old live: up 1 h, down 2 h; np up 3 h (counted twice, old would make it 5/8)
    assert chip_ratio(stale) == {("nodepool", "tpu-v6e-slice"): pytest.approx(4 / 6)}
    fresh = history.report(T0 + 3 * H)
    # old retired: up 1 h, down 1 h; np up 3 h
    assert chip_ratio(fresh) == {("nodepool", "tpu-v6e-slice"): pytest.approx(4 / 5)}


def test_an_unchanged_report_settles_no_summary_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unchanged record is not folded again; a record that gained events folds only
    those."""
    folded: list[int] = []
    real = SummaryFold.fold

    def counting(self: SummaryFold, record: EventRecord) -> SummaryFold:
        folded.append(len(record) - self.count)
        return real(self, record)

    monkeypatch.setattr(SummaryFold, "fold", counting)
    history = History()
    interrupted_and_retired(history)
    first = history.report(T0 + 5 * H)
    count = len(folded)
    second = history.report(T0 + 6 * H)
    assert count == 1 and len(folded) == count
    np = second.kind(Kind.NODEPOOL).summaries["np"]
    assert np.up_time == first.kind(Kind.NODEPOOL).summaries["np"].up_time + H
    history.record(T0 + 7 * H, {"np": DOWN})
    third = history.report(T0 + 8 * H)
    assert folded[count:] == [1]
    assert third.kind(Kind.NODEPOOL).summaries["np"].interruption_count == 1


def test_a_resource_another_leader_retired_is_counted_once_this_one_leads_again() -> None:
    """Leadership moves to another replica and back: what it recorded meanwhile (``old``
    interrupted and retired) is in the history this replica reads again, and both tallies
    count it once, as at start."""
    history = History()
    history.record(T0, {"old": UP, "np": UP})
    history.report(T0 + H)
    history.log.hand_over()
    other = History(history.store, holder="b")
    other.record(T0 + 2 * H, {"old": DOWN, "np": UP})
    other.record(T0 + 3 * H, {"old": UP, "np": UP})
    other.record(T0 + 4 * H, {"np": UP})
    other.log.hand_over()
    report = history.report(T0 + 5 * H)
    assert recoveries(report) == 1
    # 1 h to 2 h and 4 h to 5 h nobody watched (unobserved): old up 2 h, down 1 h; np up 3 h
    assert chip_ratio(report) == {("nodepool", "tpu-v6e-slice"): pytest.approx(5 / 6)}
