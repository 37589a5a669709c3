"""``megamon_<kind>_chip_availability_ratio`` is ``megamon report``'s chip availability: the
aggregation cycle over a scripted cluster, its history written by the real event log into a
directory, the gauge scraped from the collector, and the report read back from that directory
by ``megamon report`` at the same ``now``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from megamon.cli.main import main
from megamon.domain import labels, timestamps
from megamon.domain.kinds import Kind
from megamon.fleet.resources import read_resources
from megamon.loops.aggregator import Aggregator, Intervals
from megamon.observing.common import Settings
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.sources.gke.lister import StaticNodePoolLister
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.projections import jobset_view, node_view
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.stores.local import LocalEventStore
from megamon.summary.assembly import ReportAssembly
from test.summary.foldcheck import report_ratios

S = 10**9
H = 3600 * S
T0 = 1_780_272_000 * S
KINDS = frozenset({Kind.NODEPOOL, Kind.JOBSET, Kind.JOBSET_NODES})
V6E, V5P = "tpu-v6e-slice", "tpu-v5p-slice"
GOOD = NodePoolView("np-v6e", "RUNNING", "ct6e-standard-4t", "4x4", V6E, False)
STUCK = NodePoolView("np-v5p", "ERROR", "ct5p-hightpu-4t", "2x2x1", V5P, False)


class Cluster:
    """A cluster whose snapshot the test replaces between cycles."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.current = snapshot

    def snapshot(self) -> ClusterSnapshot:
        return self.current

    def synced(self) -> bool:
        return True

    def last_contact_ns(self) -> int | None:
        return None

    def alive(self) -> bool:
        return True


def tpu_node(name: str, pool: str, ready: bool = True) -> Any:
    return node_view(
        {
            "metadata": {
                "name": name,
                "labels": {
                    labels.NODEPOOL: pool,
                    labels.TPU_ACCELERATOR: V6E,
                    labels.TPU_TOPOLOGY: "4x4",
                    labels.ACCELERATOR_COUNT: "4",
                },
            },
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
        }
    )


def jobset(name: str, ready: int, ended: str = "") -> Any:
    selector = {labels.TPU_ACCELERATOR: V6E, labels.TPU_TOPOLOGY: "4x4"}
    conditions = [{"type": ended, "status": "True"}] if ended else []
    return jobset_view(
        {
            "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "w",
                        "replicas": 1,
                        "template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}},
                    }
                ]
            },
            "status": {"replicatedJobsStatus": [{"ready": ready}], "conditions": conditions},
        }
    )


class Megamon:
    """megamon's cycle on a directory, wired as ``megamon run`` wires it, one cycle a call."""

    def __init__(self, directory: Path, pools: list[NodePoolView]) -> None:
        self.directory = directory
        self.now = T0
        self.cluster = Cluster(ClusterSnapshot())
        store = LocalEventStore(directory)
        assembly = ReportAssembly(KINDS, store, unobserved_slack_ns=UNOBSERVED_SLACK_NS)
        self.aggregator = Aggregator(
            event_log=EventLog(store, KINDS, on_retired=assembly.retired, clock=self.clock),
            assembly=assembly,
            cluster=self.cluster,
            pools=StaticNodePoolLister(pools),
            kinds=KINDS,
            settings=Settings(),
            export=lambda _report: None,
            intervals=Intervals(aggregation=60.0),
            clock=self.clock,
        )
        self.registry = CollectorRegistry()
        collector = ReportCollector(
            "megamon", self.aggregator.latest_report, build=BuildInfo("0", "c", "d")
        )
        self.registry.register(collector)

    def clock(self) -> int:
        return self.now

    def cycle(self, at: int, nodes: dict[str, Any], jobsets: dict[str, Any]) -> None:
        """One aggregation cycle at ``at`` over this cluster; its history written out."""
        self.now = at
        self.cluster.current = ClusterSnapshot(nodes=nodes, jobsets=jobsets)
        assert self.aggregator.poll_once()
        assert self.aggregator.aggregate_once() is not None
        assert self.aggregator.persist_once()

    def ratio(self, kind: Kind, accelerator: str) -> float | None:
        name = f"megamon_{kind.value}_chip_availability_ratio"
        return self.registry.get_sample_value(name, {"tpu_accelerator": accelerator})

    def ratios(self) -> dict[tuple[str, str], float]:
        found = {}
        for family in self.registry.collect():
            if family.name.endswith("_chip_availability_ratio"):
                kind = family.name.removeprefix("megamon_").removesuffix("_chip_availability_ratio")
                for sample in family.samples:
                    found[kind, sample.labels.get("tpu_accelerator", "")] = sample.value
        return found


NODES = {f"n{i}": tpu_node(f"n{i}", GOOD.name) for i in range(4)}  # 4x4: 4 hosts of 4 chips
DOWN_NODES = {**NODES, "n0": tpu_node("n0", GOOD.name, ready=False)}


def run_interrupted_then_completed(megamon: Megamon) -> None:
    """A JobSet up 1 h, interrupted for 30 min (its pool's node not ready), up 30 min more,
    then completed; its pool follows the node."""
    megamon.cycle(T0, NODES, {"team/train": jobset("train", 1)})
    megamon.cycle(T0 + H, DOWN_NODES, {"team/train": jobset("train", 0)})
    megamon.cycle(T0 + 90 * 60 * S, NODES, {"team/train": jobset("train", 1)})
    megamon.cycle(T0 + 2 * H, NODES, {"team/train": jobset("train", 0, labels.JOBSET_COMPLETED)})


def test_a_completed_jobset_does_not_lower_the_ratio(tmp_path: Path) -> None:
    """Up 1.5 h of 2 h up or down: 0.75, and still 0.75 hours after it completed (the time
    since is expected down, out of the ratio); counted as down it would read 0.3 at 5 h."""
    megamon = Megamon(tmp_path, [GOOD])
    run_interrupted_then_completed(megamon)
    assert megamon.ratio(Kind.JOBSET, V6E) == pytest.approx(0.75)
    megamon.cycle(T0 + 5 * H, NODES, {"team/train": jobset("train", 0, labels.JOBSET_COMPLETED)})
    assert megamon.ratio(Kind.JOBSET, V6E) == pytest.approx(0.75)


def test_a_pool_stuck_in_error_gives_no_sample(tmp_path: Path) -> None:
    """A pool that never came up has only provisioning time: no ratio (the report's ``-``),
    not 0.0, beside a pool that has one."""
    megamon = Megamon(tmp_path, [GOOD, STUCK])
    megamon.cycle(T0, NODES, {})
    megamon.cycle(T0 + H, NODES, {})
    assert megamon.ratio(Kind.NODEPOOL, V6E) == 1.0
    assert megamon.ratio(Kind.NODEPOOL, V5P) is None
    assert (Kind.NODEPOOL.value, V5P) not in megamon.ratios()


def report_chips(directory: Path, now: int, capsys: pytest.CaptureFixture[str]) -> dict[Any, Any]:
    """``megamon report --format json`` on the directory: chip availability by kind and
    accelerator (one topology each here), as a ratio."""
    argv = ["report", "--events-dir", str(directory), "--format", "json"]
    status = main([*argv, "--now", timestamps.format_ns(now)])
    out, err = capsys.readouterr()
    assert status == 0, err
    rows = orjson.loads(out)["chips"]
    return {
        (row["kind"], row["accelerator"]): row["chipAvailabilityPercent"] / 100
        for row in rows
        if row["chipAvailabilityPercent"] is not None
    }


def recounted_chips(directory: Path, now: int) -> dict[tuple[str, str], float]:
    """The report's chip figures recounted from the directory, as ``megamon report`` reads
    it: the ratio of the integer sums is the gauge's exactly (the JSON's percentage is a
    rounded figure of it)."""
    return report_ratios(
        list(read_resources(LocalEventStore(directory), sorted(KINDS), {}, now)), now
    )


def test_the_gauge_is_the_reports_chip_availability_for_the_same_history_and_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Live and retired resources, an interruption, a completion, a pool stuck in ERROR and
    a restart of megamon (the hour it was not running is unobserved in both)."""
    megamon = Megamon(tmp_path, [GOOD, STUCK])
    run_interrupted_then_completed(megamon)
    megamon.cycle(T0 + 3 * H, NODES, {"team/short": jobset("short", 1)})  # train retired
    megamon.cycle(T0 + 4 * H, DOWN_NODES, {"team/short": jobset("short", 0)})
    megamon.aggregator.stop()
    restarted = Megamon(tmp_path, [GOOD, STUCK])
    restarted.cycle(T0 + 5 * H, NODES, {"team/short": jobset("short", 1)})
    restarted.cycle(T0 + 6 * H, NODES, {})  # short retired
    gauges = restarted.ratios()
    assert set(gauges) == {("nodepool", V6E), ("jobset", V6E)}  # JobSet nodes: never up
    assert gauges == recounted_chips(tmp_path, T0 + 6 * H)
    assert gauges == pytest.approx(report_chips(tmp_path, T0 + 6 * H, capsys), rel=1e-12)
    later = T0 + 9 * H
    restarted.cycle(later, NODES, {})
    assert restarted.ratios() == recounted_chips(tmp_path, later)
    assert restarted.ratios() == pytest.approx(report_chips(tmp_path, later, capsys), rel=1e-12)
