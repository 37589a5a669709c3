"""A full disk under the local store shows in a metric and, after a minute, in readiness.

The store is megamon's own local directory; only the one function that writes a file is made
to fail with ENOSPC, as a full volume makes it fail. The fleet is quiet (nothing changes), so
all megamon has to write is the writer lease's renewal and heartbeats — a store refusing them
must still count and turn readiness off after ``UNWRITABLE_SECONDS``, and the first write that
lands turns it back on.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from megamon.domain.kinds import Kind
from megamon.loops.aggregator import UNWRITABLE_SECONDS, Aggregator, Intervals
from megamon.observing.common import Settings
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.sources.gke.lister import StaticNodePoolLister
from megamon.sources.kube.cluster import StaticCluster
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.stores import local
from megamon.stores.local import LocalEventStore
from megamon.summary.assembly import ReportAssembly
from megamon.telemetry import Instruments
from test.loops.test_aggregator import POOL, T0, Clock, tpu_node

S = 10**9
KINDS = frozenset({Kind.NODEPOOL})


class Disk:
    """The volume under the store: full or not."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        write = local._atomic_write

        def atomic_write(path: Path, data: bytes) -> None:
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            write(path, data)

        monkeypatch.setattr(local, "_atomic_write", atomic_write)


def test_a_full_disk_is_counted_and_fails_readiness_after_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    disk, clock, registry = Disk(monkeypatch), Clock(), CollectorRegistry()
    monotonic = [0.0]
    instruments = Instruments("megamon", registry, KINDS)
    store = LocalEventStore(tmp_path, instruments=instruments)
    assembly = ReportAssembly(KINDS, store, unobserved_slack_ns=UNOBSERVED_SLACK_NS)
    aggregator = Aggregator(
        event_log=EventLog(
            store,
            KINDS,
            clock=clock,
            instruments=instruments,
            on_retired=assembly.retired,
            monotonic=lambda: int(monotonic[0] * S),  # the lease is timed on it
        ),
        assembly=assembly,
        cluster=StaticCluster(ClusterSnapshot(nodes={"n": tpu_node("n", "np")}), T0),
        pools=StaticNodePoolLister([POOL]),
        kinds=KINDS,
        settings=Settings(),
        export=lambda report: None,
        intervals=Intervals(),
        instruments=instruments,
        clock=clock,
        monotonic=lambda: monotonic[0],
    )

    def step(seconds: int) -> bool:
        """``seconds`` later: one aggregation cycle, then one persist round."""
        clock.now = T0 + seconds * S
        monotonic[0] = float(seconds)
        aggregator.poll_once()
        aggregator.aggregate_once()
        return aggregator.persist_once()

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name)

    assert step(0) and aggregator.ready()
    assert sample("megamon_history_last_write_timestamp_seconds") == T0 / S
    assert sample("megamon_history_write_failures_total") == 0

    disk.full = True
    assert not step(10)  # only the lease's renewal is due: it fails, and says so
    assert sample("megamon_history_write_failures_total") == 1
    assert "No space left on device" in caplog.text
    assert aggregator.ready()  # one failed write is not yet a reason to stop serving
    for seconds in range(20, int(UNWRITABLE_SECONDS) + 20, 10):
        assert not step(seconds)
    assert not aggregator.ready()
    assert "unwritable for 60 s: not ready until a write lands" in caplog.text
    assert sample("megamon_history_last_write_timestamp_seconds") == T0 / S  # none landed
    failures = sample("megamon_history_write_failures_total")
    assert failures is not None and failures >= 7

    disk.full = False
    assert step(80) and aggregator.ready()
    assert sample("megamon_history_last_write_timestamp_seconds") == T0 / S + 80
