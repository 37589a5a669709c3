"""The demo's table without the wait: the demo scenario and megamon's loops in lockstep.

Why: ``make demo`` plays its half hour in real time while ``megamon run`` polls and
aggregates on its own, so what it shows can only be checked by watching it. This plays the
same scenario on the same emulators, through the same clients, into the same kind of
history (a local directory) — but megamon's loops are steps called here, once per second of
the demo's real time, on a clock that moves only then. What megamon records, and so the
table, is then a function of the scenario alone: the table README.md shows, every time.

One tick is one real second of the demo (``speed`` simulated seconds): the steps due by then
are played, the cluster is listed (where ``megamon run`` watches), the cycle is aggregated
and persisted, GKE is polled, and the table redrawn — as the demo redraws it, remembering the
resources that left. GKE's answer is read by the next tick's cycle, a whole tick after the
nodes: the order in which a watch in real time and a poll every second meet at their worst
(a pool's nodes gone before the poll says it is deleted), so that is the order played.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from kubernetes import config as kube_config
from prometheus_client import CollectorRegistry

from internal.demo.__main__ import archived_rows, last_reasons
from internal.demo.table import Table
from internal.fakegke import FakeGke
from internal.fakekube import FakeKube
from internal.fleet.__main__ import megamon_config
from internal.fleet.demo import CLUSTER, LOCATION, PROJECT, demo_scenario
from internal.fleet.fleet import Fleet
from internal.fleet.scenario import DEFAULT_SPEED, Step, ordered
from megamon.app import build_info, enabled_kinds, observer_settings, required_kinds
from megamon.codec.report import encode_report
from megamon.config import Config, parse_config
from megamon.loops.aggregator import Aggregator
from megamon.observing.cluster import WorkloadObservers
from megamon.observing.common import Memos
from megamon.publishing.metrics.collector import ReportCollector
from megamon.publishing.metrics.exposition import generate_latest
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.sources.gke.lister import GkeNodePoolLister, make_client
from megamon.sources.kube import resources
from megamon.sources.kube.cache import WatchCache
from megamon.sources.kube.projections import jobset_view, lws_view, node_view, pod_view, slice_view
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.sources.kube.watching import Listing, RawLister, WatchSettings
from megamon.stores.local import LocalEventStore
from megamon.summary.assembly import ReportAssembly

CLUSTER_REF = f"projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER}"
SETTLE_TICKS = 3
"""Ticks after the last step: the last changes are seen, recorded and drawn."""
START_NS = 1_800_000_000 * 10**9
"""Where megamon's clock starts (2027-01-15): any fixed moment makes every run the same."""


class ListedCluster:
    """The cluster as megamon's watch caches hold it, filled by listing on ``refresh``
    instead of by watching, so that a snapshot is exactly the cluster at that step."""

    def __init__(self, api: Any) -> None:
        listers: dict[str, tuple[RawLister, Any]] = {
            "nodes": (resources.node_lister(api), node_view),
            "pods": (resources.leader_pod_lister(api), pod_view),
            "jobsets": (resources.custom_lister(api, resources.JOBSETS), jobset_view),
            "lws": (resources.custom_lister(api, resources.LEADERWORKERSETS), lws_view),
            "slices": (resources.custom_lister(api, resources.SLICES), slice_view),
        }
        self._listers = {name: lister for name, (lister, _) in listers.items()}
        self._caches: dict[str, WatchCache[Any]] = {
            name: WatchCache(name, lister, project) for name, (lister, project) in listers.items()
        }
        self._contact: int | None = None

    def refresh(self, now: int) -> None:
        """List every type now, as a watch would have delivered it by now."""
        for name, cache in self._caches.items():
            cache.replace(Listing(self._listers[name], WatchSettings()))
        self._contact = now

    def snapshot(self) -> ClusterSnapshot:
        caches = self._caches
        return ClusterSnapshot(
            nodes=caches["nodes"].snapshot(),
            leader_pods=caches["pods"].snapshot(),
            jobsets=caches["jobsets"].snapshot(),
            leaderworkersets=caches["lws"].snapshot(),
            slices=caches["slices"].snapshot(),
        )

    def synced(self) -> bool:
        return self._contact is not None

    def last_contact_ns(self) -> int | None:
        return self._contact

    def alive(self) -> bool:
        return True


class Clock:
    """megamon's clock (and the fleet's): it moves one tick at a time."""

    def __init__(self) -> None:
        self.ns = START_NS

    def __call__(self) -> int:
        return self.ns

    def seconds(self) -> float:
        return self.ns / 1e9


@dataclass(frozen=True)
class Replayed:
    """The table at the end, where the history was written, and the last ``/metrics``."""

    table: str
    history: Path
    scrape: str = ""


def _config(gke: FakeGke, history: Path) -> Config:
    """The demo's megamon configuration (``internal.demo``), history in ``history``."""
    fleet = argparse.Namespace(project=PROJECT, location=LOCATION, cluster=CLUSTER)
    config = megamon_config(fleet, gke.endpoint) | {"EventsLocalDir": str(history)}
    return parse_config(json.dumps(config).encode(), "the demo's configuration")


@contextmanager
def _emulators(workdir: Path) -> Iterator[tuple[FakeGke, FakeKube, Any]]:
    """Both emulators, and a kubernetes client of the Kubernetes one."""
    with FakeGke() as gke, FakeKube() as kube:
        path = str(kube.write_kubeconfig(workdir / "kubeconfig"))
        api = kube_config.new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
        try:
            yield gke, kube, api
        finally:
            api.close()


def replay(
    history: Path, steps: list[Step] | None = None, *, speed: float = DEFAULT_SPEED
) -> Replayed:
    """Play ``steps`` (the demo scenario) against megamon, one tick per real second of the
    demo at ``speed``; the table the demo shows at the end."""
    steps = ordered(demo_scenario() if steps is None else steps)
    clock = Clock()
    history.mkdir(parents=True, exist_ok=True)
    with _emulators(history.parent) as (gke, kube, api):
        config = _config(gke, history)
        kinds = enabled_kinds(config)
        store = LocalEventStore(history)
        cluster = ListedCluster(api)
        assembly = ReportAssembly(
            kinds, store, unobserved_slack_ns=UNOBSERVED_SLACK_NS, state_store=store.log
        )
        aggregator = Aggregator(
            event_log=EventLog(
                store,
                required_kinds(kinds),
                clock=clock,
                on_retired=assembly.retired,
                on_snapshot=assembly.snapshotted,
            ),
            assembly=assembly,
            cluster=cluster,
            pools=GkeNodePoolLister(CLUSTER_REF, make_client(gke.endpoint)),
            kinds=kinds,
            settings=observer_settings(config),
            export=lambda _report: None,
            observers=WorkloadObservers(),
            memos=Memos(),
            clock=clock,
        )
        registry = CollectorRegistry()
        registry.register(
            ReportCollector(config.metric_prefix, aggregator.latest_report, build=build_info())
        )
        fleet = Fleet(gke, kube, PROJECT, LOCATION, CLUSTER, clock=clock.seconds)
        table = Table()
        drawn = text = ""
        last = max((step.at.total_seconds() for step in steps), default=0.0)
        ticks = int(last / speed) + 1 + SETTLE_TICKS
        pending = list(steps)
        for tick in range(ticks + 1):
            clock.ns = START_NS + tick * 10**9
            while pending and pending[0].at.total_seconds() <= tick * speed:
                pending.pop(0).action(fleet)
            cluster.refresh(clock.ns)
            report = aggregator.aggregate_once()
            aggregator.persist_once()
            aggregator.poll_once()  # GKE's answer is seen from the next cycle on
            if report is not None:
                text = generate_latest(registry).decode()
                document = orjson.loads(encode_report(report))
                reasons = last_reasons(history, clock.ns)
                drawn = table.render(text, document, archived_rows(history), reasons)
        aggregator.stop()
    return Replayed(drawn, history, text)
