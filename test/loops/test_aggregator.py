"""The aggregation cycle over in-memory parts: a static cluster, static node pools, the
memory event store."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from megamon.domain import labels
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.rejections import REASON_INVALID, REASON_MALFORMED, Rejection
from megamon.domain.reports import Report
from megamon.domain.summaries import ProvisioningState
from megamon.errors import SourceError, StoreError
from megamon.loops.aggregator import Aggregator, Intervals
from megamon.observing.common import Settings
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.recording.loading import load_kind
from megamon.sources.gke.lister import StaticNodePoolLister
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.cluster import StaticCluster
from megamon.sources.kube.projections import jobset_view, node_view
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.stores.memory import MemoryEventStore, MemoryObjects
from megamon.summary.assembly import ReportAssembly
from megamon.summary.chiptally import AvailabilityFold
from megamon.summary.summarizing import SummaryFold
from megamon.telemetry import Instruments

S = 10**9
T0 = 1_780_272_000 * S
KINDS = frozenset({Kind.NODEPOOL, Kind.JOBSET, Kind.JOBSET_NODES})


def tpu_node(name: str, pool: str) -> Any:
    return node_view(
        {
            "metadata": {
                "name": name,
                "labels": {
                    labels.NODEPOOL: pool,
                    labels.TPU_TOPOLOGY: "2x4",
                    labels.ACCELERATOR_COUNT: "8",
                },
            },
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )


POOL = NodePoolView("np", "RUNNING", "ct5lp-hightpu-8t", "2x4", "tpu-v5-lite-podslice", False)
JOBSET = jobset_view(
    {
        "metadata": {"name": "js", "namespace": "team", "uid": "uid-js"},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1}]},
        "status": {"replicatedJobsStatus": [{"ready": 1}]},
    }
)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def make(**overrides: Any) -> tuple[Aggregator, dict[str, Any]]:
    parts: dict[str, Any] = {
        "store": MemoryEventStore(),
        "cluster": StaticCluster(
            ClusterSnapshot(nodes={"n": tpu_node("n", "np")}, jobsets={"team/js": JOBSET}), T0
        ),
        "pools": StaticNodePoolLister([POOL]),
        "exported": [],
        "clock": Clock(),
        "registry": CollectorRegistry(),
    }
    parts.update(overrides)
    instruments = Instruments("megamon", parts["registry"])
    assembly = ReportAssembly(KINDS, parts["store"], unobserved_slack_ns=UNOBSERVED_SLACK_NS)
    aggregator = Aggregator(
        event_log=EventLog(
            parts["store"], KINDS, instruments=instruments, on_retired=assembly.retired
        ),
        assembly=assembly,
        cluster=parts["cluster"],
        pools=parts["pools"],
        kinds=KINDS,
        settings=Settings(),
        export=parts["exported"].append,
        intervals=Intervals(aggregation=0.05, polling=0.05, coalesce=0.01),
        instruments=instruments,
        clock=parts["clock"],
    )
    return aggregator, parts


def test_no_report_before_node_pools_were_listed() -> None:
    aggregator, parts = make()
    assert aggregator.aggregate_once() is None
    assert not aggregator.ready() and parts["exported"] == []


def test_a_cycle_records_summarizes_and_exports_at_one_now() -> None:
    aggregator, parts = make()
    assert aggregator.poll_once()
    report = aggregator.aggregate_once()
    assert isinstance(report, Report) and aggregator.latest_report() is report
    assert parts["exported"] == [report]
    assert report.generated_at == T0
    pool = report.kind(Kind.NODEPOOL)
    assert pool.observations["np"].up
    assert pool.summaries["np"].provisioning_state is ProvisioningState.SUCCESS
    assert report.kind(Kind.JOBSET).observations["uid-js"].up
    assert report.observed_at == {"gke": T0, "kubernetes": T0}
    parts["clock"].now = T0 + 60 * S
    later = aggregator.aggregate_once()
    assert later is not None and later.kind(Kind.NODEPOOL).summaries["np"].up_time == 60 * S


def test_a_failed_node_pool_listing_keeps_the_previous_pools() -> None:
    aggregator, parts = make()
    aggregator.poll_once()
    parts["pools"].fail = SourceError("GKE ListNodePools: 403 Forbidden")
    assert not aggregator.poll_once()
    parts["clock"].now = T0 + 30 * S
    report = aggregator.aggregate_once()
    assert report is not None and "np" in report.kind(Kind.NODEPOOL).observations
    assert report.observed_at["gke"] == T0  # its age shows in the freshness gauge


class _FlakyObjects(MemoryObjects):
    broken = False

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        if self.broken:
            raise StoreError("bucket unreachable")
        return super().upload(name, data, if_generation)


class _FlakyStore(MemoryEventStore):
    def __init__(self) -> None:
        super().__init__(objects=_FlakyObjects())

    @property
    def broken(self) -> bool:
        return isinstance(self.objects, _FlakyObjects) and self.objects.broken

    @broken.setter
    def broken(self, value: bool) -> None:
        assert isinstance(self.objects, _FlakyObjects)
        self.objects.broken = value


def _live(store: MemoryEventStore) -> set[str]:
    return set(load_kind(store, Kind.NODEPOOL).history.records)


def test_a_failing_store_delays_writing_not_the_report_nor_its_timestamps() -> None:
    store = _FlakyStore()
    aggregator, parts = make(store=store)
    aggregator.poll_once()
    aggregator.aggregate_once()
    aggregator.persist_once()
    store.broken = True
    parts["pools"].pools = []  # the pool is deleted: changes that must be written
    aggregator.poll_once()
    parts["clock"].now = T0 + 10 * S
    report = aggregator.aggregate_once()  # its last observation: expected down
    assert report is not None and report.kind(Kind.NODEPOOL).observations["np"].expected_down
    parts["clock"].now = T0 + 20 * S
    report = aggregator.aggregate_once()  # then retired
    assert report is not None and "np" not in report.kind(Kind.NODEPOOL).observations
    assert not aggregator.persist_once()
    assert "np" in _live(store)
    store.broken = False
    parts["clock"].now = T0 + 30 * S
    aggregator.aggregate_once()
    assert aggregator.persist_once()
    assert "np" not in _live(store)
    [entry] = store.read_archive(Kind.NODEPOOL, "np")
    assert entry.retired_at == T0 + 20 * S
    assert (entry.record.timestamps[-1], entry.record.events[-1].expected_down) == (
        T0 + 10 * S,
        True,
    )


class _Exploding(StaticCluster):
    def snapshot(self) -> ClusterSnapshot:
        raise RuntimeError("a bug in an observer")


def test_a_failing_cycle_keeps_the_last_good_report() -> None:
    aggregator, _ = make()
    aggregator.poll_once()
    good = aggregator.aggregate_once()
    aggregator._cluster = _Exploding(ClusterSnapshot())
    aggregator.start()
    time.sleep(0.2)
    aggregator.stop()
    assert aggregator.latest_report() is good


def test_each_distinct_problem_is_logged_and_counted_once() -> None:
    bad = NodePoolView("bad", "RUNNING", "ct5lp-hightpu-4t", "0x4", "", False)
    aggregator, parts = make(pools=StaticNodePoolLister([POOL, bad]))
    aggregator.poll_once()
    aggregator.aggregate_once()
    aggregator.aggregate_once()
    assert (
        parts["registry"].get_sample_value(
            "megamon_observation_errors_total", {"kind": "nodepool", "reason": "invalid"}
        )
        == 1.0
    )


def test_objects_a_source_rejected_are_counted_by_kind_and_reason() -> None:
    aggregator, parts = make()
    aggregator.rejected(Rejection("jobset", "team/bad", REASON_INVALID, "bad"))
    aggregator.rejected(Rejection("node", "n", REASON_MALFORMED, "not an object"))
    registry = parts["registry"]
    sample = registry.get_sample_value
    assert sample("megamon_observation_errors_total", {"kind": "jobset", "reason": "invalid"}) == 1
    assert sample("megamon_observation_errors_total", {"kind": "node", "reason": "malformed"}) == 1


class _DeadWatch(StaticCluster):
    def alive(self) -> bool:
        return False


def test_a_dead_watch_thread_fails_health() -> None:
    aggregator, _ = make(cluster=_DeadWatch(ClusterSnapshot(), T0))
    assert not aggregator.healthy()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_loop_thread_that_died_fails_health() -> None:
    aggregator, _ = make()

    def fatal() -> bool:
        raise SystemExit("a loop thread dies of something no boundary catches")

    aggregator._is_leader = fatal
    aggregator.start()
    for thread in aggregator._threads:
        thread.join(10)
    assert not aggregator.healthy()
    aggregator._is_leader = lambda: False
    aggregator.stop()


def test_the_loops_run_report_and_stay_healthy_until_stopped() -> None:
    aggregator, parts = make()
    aggregator.start()
    try:
        for _ in range(200):
            if aggregator.ready():
                break
            time.sleep(0.01)
        assert aggregator.ready() and aggregator.healthy()
        aggregator.changed.set()
    finally:
        aggregator.stop()
    assert parts["exported"]


def test_a_standby_does_nothing() -> None:
    store = MemoryEventStore()
    aggregator, _ = make(store=store)
    aggregator._is_leader = lambda: False
    aggregator.start()
    time.sleep(0.2)
    aggregator.stop()
    assert not aggregator.ready()
    assert store.read(Kind.NODEPOOL).version is None


def test_a_loop_that_stops_making_progress_fails_health() -> None:
    aggregator, _ = make()
    aggregator._progress = {"aggregate": time.monotonic()}
    assert aggregator.healthy()
    aggregator._progress = {"aggregate": time.monotonic() - 3600}
    assert not aggregator.healthy()


def test_an_unchanged_cycle_builds_no_new_observation_record_or_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The identity contract of the memos: the watch caches hand out the same projections
    while nothing changes, so the next cycle reuses every observation, appends nothing and
    settles no summary or chip figure again (it only adds the running time)."""
    settled: list[EventRecord] = []
    real_settle = SummaryFold.fold

    def counting(self: SummaryFold, record: EventRecord) -> Any:
        settled.append(record)
        return real_settle(self, record)

    monkeypatch.setattr(SummaryFold, "fold", counting)
    figured: list[object] = []
    real_figures = AvailabilityFold.fold

    def figuring(self: AvailabilityFold, record: EventRecord, gaps: Any) -> Any:
        figured.append(record)
        return real_figures(self, record, gaps)

    monkeypatch.setattr(AvailabilityFold, "fold", figuring)
    aggregator, parts = make()
    assert aggregator.poll_once()
    first = aggregator.aggregate_once()
    records = dict(aggregator._log.records())
    settled_first, figured_first = len(settled), len(figured)
    parts["clock"].now += 10 * S
    second = aggregator.aggregate_once()
    assert first is not None and second is not None
    for kind in (Kind.NODEPOOL, Kind.JOBSET):
        for key, observation in first.kind(kind).observations.items():
            assert second.kind(kind).observations[key] is observation, (kind, key)
        for key, record in records[kind].items():
            assert aggregator._log.records()[kind][key] is record, (kind, key)
    assert settled_first > 0 and len(settled) == settled_first
    assert figured_first > 0 and len(figured) == figured_first  # the chip figures too
    pool = second.kind(Kind.NODEPOOL).summaries["np"]
    assert pool.up_time == first.kind(Kind.NODEPOOL).summaries["np"].up_time + 10 * S


def test_a_loop_failing_every_cycle_fails_health_like_a_stuck_one() -> None:
    now = [0.0]
    aggregator, _ = make()
    aggregator._monotonic = lambda: now[0]

    def broken() -> None:
        raise RuntimeError("a bug met on every cycle")

    aggregator.iterate("aggregate", broken)
    assert aggregator.healthy()  # one failed cycle is not a stall
    now[0] = 3600.0
    aggregator.iterate("aggregate", broken)
    assert not aggregator.healthy()  # an hour of failed cycles: the data is frozen
    aggregator.iterate("aggregate", lambda: None)
    assert aggregator.healthy()


def test_a_store_that_refuses_every_write_fails_readiness_until_one_lands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """History held only in memory is lost at the next restart: after a minute of refused
    writes megamon says so and stops being ready; the first write that lands restores it."""
    now = [0.0]
    store = _FlakyStore()
    aggregator, parts = make(store=store)
    aggregator._monotonic = lambda: now[0]
    aggregator.poll_once()
    aggregator.aggregate_once()
    assert aggregator.persist_once() and aggregator.ready()
    store.broken = True
    parts["pools"].pools = []  # a change to write
    aggregator.poll_once()
    parts["clock"].now = T0 + 10 * S
    aggregator.aggregate_once()
    assert not aggregator.persist_once()
    assert aggregator.ready()  # a blip is not a failure
    now[0] = 61.0
    assert not aggregator.persist_once()
    assert not aggregator.ready()
    assert "unwritable for 61 s: not ready until a write lands" in caplog.text
    assert "bucket unreachable" in caplog.text
    store.broken = False
    assert aggregator.persist_once() and aggregator.ready()
