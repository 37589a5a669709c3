"""What the scale benchmark measures, each run in a fresh child process.

``python -m internal.bench.fleet_probes PROBE --kubeconfig K [--gke E] [...]`` prints one
JSON line of figures. A fresh process per probe makes its peak RSS (``VmHWM``,
``internal.bench.memory``) the probe's own, with nothing left over from another measurement.

- ``sync``: megamon's watch caches (``KubeCluster``: nodes, leader pods, JobSets) from
  start to every cache listed — wall and CPU time, peak RSS, RSS once settled;
- ``list``: the same nodes listed the straightforward way, ``CoreV1Api.list_node()`` into
  the client's model objects — wall and CPU time, peak RSS;
- ``cycles``: megamon as it runs — a ``KubeCluster`` sync, one GKE poll, then aggregation
  cycles on ``StaticCluster`` snapshots of the synced projections in which a different 1% of
  the nodes is not Ready each cycle: ``aggregate_once()`` (observe, append, summarize) and
  ``persist_once()`` of an ``Aggregator`` on a local event store seeded with history, and a
  ``/metrics`` render — CPU time of each part, bytes the event store wrote, the size of
  ``/metrics``, and the process's peak RSS at the end. The workload pass the watch caches
  trigger between cycles (``observe_workloads_once()``) is timed apart. ``--reference``
  renders once more with ``prometheus_client`` and says whether the two agree;
  ``--gc-freeze`` and ``--gc-threshold`` apply garbage-collector settings after the sync.
  A size with huge slices (``L+huge``) then checks, asserting, that one node of each huge
  pool going NotReady is seen in the very next cycle: the pool and its JobSet's nodes down,
  one node short of the count the fleet itself computes (``huge_checked`` in the figures).

The probes also run against a tree without ``megamon.publishing.metrics.exposition`` (rendering with
``prometheus_client`` then), so that a "before" is measured by the same code.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import multiprocessing
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as kube_config
from prometheus_client import CollectorRegistry
from prometheus_client import generate_latest as reference_render

from internal.bench import fleet_objects
from internal.bench.memory import current_rss_mb, peak_rss_mb
from internal.fleet.nodes import gke_node_name
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.reports import Report
from megamon.loops.aggregator import Aggregator
from megamon.observing.common import Settings
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.publishing.metrics.gating import LeaderOnly
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.sources.gke.lister import GkeNodePoolLister, make_client
from megamon.sources.gke.policies import ComputeWorkloadPolicies, make_compute_client
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.cluster import KubeCluster, StaticCluster
from megamon.sources.kube.projections import NodeView
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.stores.local import LocalObjects
from megamon.stores.objects import ObjectEventStore
from megamon.summary.assembly import ReportAssembly
from megamon.telemetry import Instruments

try:
    from megamon.publishing.metrics.exposition import generate_latest as fast_render
except ImportError:  # before the fast encoder existed
    fast_render = None  # type: ignore[assignment]

CYCLE_NS = 10 * 10**9
KINDS = (Kind.NODEPOOL, Kind.JOBSET, Kind.JOBSET_NODES)


def api_client(kubeconfig: str) -> Any:
    return kube_config.new_client_from_config(config_file=kubeconfig)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its wall time and its CPU time (the whole process's, every thread)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def probe_sync(args: argparse.Namespace) -> dict[str, Any]:
    api = api_client(args.kubeconfig)
    cluster = KubeCluster(api)

    def sync() -> bool:
        cluster.start()
        return cluster.wait_synced(args.timeout)

    synced, wall, cpu = _timed(sync)
    snapshot = cluster.snapshot()
    cluster.stop()
    peak = peak_rss_mb()
    gc.collect()
    return {
        "synced": synced,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": peak,
        "settled_rss_mb": current_rss_mb(),
        "nodes": len(snapshot.nodes),
        "leader_pods": len(snapshot.leader_pods),
        "jobsets": len(snapshot.jobsets),
    }


def probe_list(args: argparse.Namespace) -> dict[str, Any]:
    api = api_client(args.kubeconfig)
    core = k8s.CoreV1Api(api)
    listed, wall, cpu = _timed(core.list_node)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": peak_rss_mb(),
        "nodes": len(listed.items),
    }


class _CountingObjects(LocalObjects):
    """The local directory backend, counting the bytes it uploads, and of those the bytes
    of event lines in segments (the encoded size of the new events)."""

    written = 0
    event_bytes = 0

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        self.written += len(data)
        if name.startswith("log/kind="):
            self.event_bytes += sum(
                len(line) + 1 for line in data.splitlines() if line.startswith(b'{"type":"event"')
            )
        return super().upload(name, data, if_generation)


class _FixedPools:
    def __init__(self, pools: list[NodePoolView]) -> None:
        self._pools = pools

    def list_node_pools(self) -> list[NodePoolView]:
        return self._pools


class _Snapshots:
    """A ``ClusterView`` whose snapshot the benchmark replaces before each cycle."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.current = StaticCluster(snapshot)

    def snapshot(self) -> ClusterSnapshot:
        return self.current.snapshot()

    def synced(self) -> bool:
        return True

    def last_contact_ns(self) -> int | None:
        return None


def _history(events: int, start: int, *, ends_expected_down: bool) -> EventRecord:
    """Alternating down/up periods of an hour, oldest first, ending up (or expected down)."""
    ts = tuple(start + i * 3600 * 10**9 for i in range(events))
    flags = bytes(0 if i % 2 == 0 else FLAG_UP for i in range(events))
    if ends_expected_down:
        flags = flags[:-1] + bytes((FLAG_EXPECTED_DOWN,))
    return EventRecord.trusted(ts, flags)


def _seed(
    store: ObjectEventStore,
    pools: list[NodePoolView],
    snapshot: ClusterSnapshot,
    events: int,
    now: int,
) -> None:
    """Every resource's history as if megamon had watched it for ``events`` hours."""
    if events <= 0:
        return
    start = now - events * 3600 * 10**9
    records = {p.name: _history(events, start, ends_expected_down=False) for p in pools}
    jobsets = {
        js.uid: _history(events, start, ends_expected_down=bool(js.terminal))
        for js in snapshot.jobsets.values()
    }
    store.write(Kind.NODEPOOL, records, None)
    store.write(Kind.JOBSET, jobsets, None)
    store.write(Kind.JOBSET_NODES, jobsets, None)


def _seed_directory(
    directory: Path,
    pools: list[NodePoolView],
    snapshot: ClusterSnapshot,
    events: int,
    now: int,
) -> None:
    """``_seed`` into a local directory, then one cycle of an earlier megamon over it, shut
    down cleanly (its snapshot and the summary state beside it), with a store of its own
    (run in a child)."""
    instruments = Instruments.unregistered()
    store = ObjectEventStore(LocalObjects(directory), "", instruments=instruments)
    _seed(store, pools, snapshot, events, now)
    assembly = ReportAssembly(
        KINDS, store, unobserved_slack_ns=UNOBSERVED_SLACK_NS, state_store=store.log
    )
    event_log = EventLog(
        store,
        KINDS,
        instruments=instruments,
        on_retired=assembly.retired,
        on_snapshot=assembly.snapshotted,
    )
    aggregator = Aggregator(
        event_log=event_log,
        assembly=assembly,
        cluster=_Snapshots(snapshot),
        pools=_FixedPools(pools),
        kinds=KINDS,
        settings=Settings(),
        export=lambda _report: None,
        instruments=instruments,
        clock=lambda: now,
    )
    aggregator.poll_once()
    aggregator.aggregate_once()
    event_log.close()


def _flip(base: ClusterSnapshot, orders: list[list[str]], cycle: int, now: int) -> ClusterSnapshot:
    nodes: dict[str, NodeView] = dict(base.nodes)
    for order in orders:
        for name in fleet_objects.flipped(order, cycle):
            nodes[name] = replace(nodes[name], ready_status="False", ready_since_ns=now)
    return replace(base, nodes=MappingProxyType(nodes))


class _CollectionTimes:
    """Full (oldest-generation) collections of the cyclic garbage collector, and their time."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._started

    def take(self) -> tuple[int, float]:
        taken = self.count, self.seconds
        self.count, self.seconds = 0, 0.0
        return taken


def _synced_snapshot(args: argparse.Namespace) -> ClusterSnapshot:
    cluster = KubeCluster(api_client(args.kubeconfig))
    cluster.start()
    try:
        if not cluster.wait_synced(args.timeout):
            raise SystemExit("the watch caches did not sync in time")
        return cluster.snapshot()
    finally:
        cluster.stop()


def _tune_collector(args: argparse.Namespace) -> None:
    if args.gc_freeze:
        gc.collect()
        gc.freeze()
    if args.gc_threshold:
        gc.set_threshold(*(int(part) for part in args.gc_threshold.split(",")))


def probe_cycles(args: argparse.Namespace) -> dict[str, Any]:
    base = _synced_snapshot(args)
    _tune_collector(args)
    size = fleet_objects.SIZES[args.size]
    orders = fleet_objects.flip_orders(size)
    assert sum(map(len, orders)) == len(base.nodes), "the fleet and the snapshot differ"
    lister = GkeNodePoolLister(
        f"projects/{fleet_objects.PROJECT}/locations/{fleet_objects.LOCATION}"
        f"/clusters/{fleet_objects.CLUSTER}",
        make_client(args.gke),
        policies=ComputeWorkloadPolicies(
            fleet_objects.PROJECT, fleet_objects.REGION, partial(make_compute_client, args.gke)
        ),
    )
    pools, poll_wall, poll_cpu = _timed(lister.list_node_pools)

    directory = Path(tempfile.mkdtemp(prefix="megamon-bench-"))
    own = CollectorRegistry()
    instruments = Instruments("megamon", own)
    clock = {"now": time.time_ns()}
    # Seeded by a forked child: the history is what an earlier megamon left, and building it
    # is not this process's memory. Start-up below then reads and parses the files.
    seeder = multiprocessing.get_context("fork").Process(
        target=_seed_directory,
        args=(directory, pools, base, args.history, clock["now"]),
    )
    seeder.start()
    seeder.join()
    assert seeder.exitcode == 0, f"seeding the history failed ({seeder.exitcode})"
    backend = _CountingObjects(directory)
    store = ObjectEventStore(backend, "", instruments=instruments)
    view = _Snapshots(base)
    assembly = ReportAssembly(
        KINDS, store, unobserved_slack_ns=UNOBSERVED_SLACK_NS, state_store=store.log
    )
    event_log = EventLog(
        store,
        KINDS,
        instruments=instruments,
        on_retired=assembly.retired,
        on_snapshot=assembly.snapshotted,
    )
    profiler = _profiler(args.profile)
    if profiler is not None:
        profiler.start()
    _, startup_wall, startup_cpu = _timed(lambda: event_log.load(KINDS))
    _write_profile(profiler, args.profile, "startup")
    startup_rss = peak_rss_mb()
    aggregator = Aggregator(
        event_log=event_log,
        assembly=assembly,
        cluster=view,
        pools=_FixedPools(pools),
        kinds=KINDS,
        settings=Settings(),
        export=lambda _report: None,
        instruments=instruments,
        clock=lambda: clock["now"],
    )
    aggregator.poll_once()
    registry = CollectorRegistry()
    registry.register(
        ReportCollector(
            "megamon",
            aggregator.latest_report,
            build=BuildInfo("bench", "bench", "bench"),
            per_resource=[] if args.fleet_only else None,
        )
    )
    registry.register(LeaderOnly(own, lambda: True))

    collections = _CollectionTimes()
    cycles: list[dict[str, Any]] = []
    for cycle in range(args.cycles + 1):
        clock["now"] += CYCLE_NS
        view.current = StaticCluster(_flip(base, orders, cycle, clock["now"]))
        collections.take()
        profiled = cycle in (0, args.cycles)
        profiler = _profiler(args.profile) if profiled else None
        if profiler is not None:
            profiler.start()
        figures = _cycle(aggregator, registry, backend)
        _write_profile(profiler, args.profile, "first" if cycle == 0 else "last")
        figures["full_collections"], figures["full_collection_s"] = collections.take()
        cycles.append(figures)
    peak = peak_rss_mb()  # before prometheus_client's own render, which is not megamon's
    checked = _check_huge(size, base, view, aggregator, clock) if size.huge else []
    reference = _compare_with_reference(registry) if args.reference else {}
    return {
        **reference,
        "startup_wall_s": startup_wall,
        "startup_cpu_s": startup_cpu,
        "startup_peak_rss_mb": startup_rss,
        "poll_wall_s": poll_wall,
        "poll_cpu_s": poll_cpu,
        "pools": len(pools),
        "peak_rss_mb": peak,
        "fast_render": fast_render is not None,
        "gc": {"freeze": args.gc_freeze, "threshold": gc.get_threshold()},
        "first_cycle": cycles[0],
        "first_cycle_cpu_s": cycles[0]["cycle_cpu_s"],
        "startup_first_cycle_wall_s": startup_wall + cycles[0]["aggregate_wall_s"],
        **_steady(cycles[1:]),
        "huge_checked": checked,
    }


def _check_huge(
    size: fleet_objects.Size,
    base: ClusterSnapshot,
    view: _Snapshots,
    aggregator: Aggregator,
    clock: dict[str, int],
) -> list[str]:
    """One cycle with every node Ready, then one with node 1 of each huge pool NotReady:
    each huge pool and its JobSet's nodes must be up, then down one node short, in that
    very cycle. The pools checked, or AssertionError (the probe fails)."""
    uids = {js.name: js.uid for js in base.jobsets.values()}

    def cycle(snapshot: ClusterSnapshot) -> Report:
        clock["now"] += CYCLE_NS
        view.current = StaticCluster(snapshot)
        report = aggregator.aggregate_once()
        assert report is not None
        assert aggregator.persist_once()
        return report

    def check(report: Report, pool: fleet_objects.HugePool, ready: int) -> None:
        nodes = pool.shape.nodes
        observed = report.kind(Kind.NODEPOOL).observations[pool.name]
        got = (observed.expected, observed.ready, observed.up)
        assert got == (nodes, ready, ready == nodes), (pool.name, got)
        assert observed.attrs.tpu_topology == pool.shape.topology, observed.attrs
        workload = report.kind(Kind.JOBSET_NODES).observations[uids[pool.jobset]]
        got = (workload.expected, workload.ready, workload.up)
        assert got == (nodes, ready, ready == nodes), (pool.jobset, got)

    report = cycle(base)
    for pool in size.huge:
        check(report, pool, pool.shape.nodes)
    nodes: dict[str, NodeView] = dict(base.nodes)
    for pool in size.huge:
        name = gke_node_name(fleet_objects.CLUSTER, pool.name, 1)
        nodes[name] = replace(nodes[name], ready_status="False", ready_since_ns=clock["now"])
    report = cycle(replace(base, nodes=MappingProxyType(nodes)))
    for pool in size.huge:
        check(report, pool, pool.shape.nodes - 1)
    return [pool.name for pool in size.huge]


def _cycle(
    aggregator: Aggregator, registry: CollectorRegistry, backend: _CountingObjects
) -> dict[str, Any]:
    """One cycle as the service runs it: aggregate, persist, a scrape; then a workload pass."""
    written, events = backend.written, backend.event_bytes
    report, aggregate_wall, aggregate_cpu = _timed(aggregator.aggregate_once)
    assert report is not None
    persisted, _, persist_cpu = _timed(aggregator.persist_once)
    assert persisted
    body, _, render_cpu = _timed(lambda: (fast_render or reference_render)(registry))
    zipped, _, gzip_cpu = _timed(lambda: gzip.compress(body, compresslevel=6))
    fast_zipped, _, fast_gzip_cpu = _timed(lambda: gzip.compress(body, compresslevel=1))
    _, _, workloads_cpu = _timed(aggregator.observe_workloads_once)
    figures: dict[str, Any] = {
        "cycle_cpu_s": aggregate_cpu + persist_cpu + render_cpu,
        "aggregate_cpu_s": aggregate_cpu,
        "aggregate_wall_s": aggregate_wall,
        "persist_cpu_s": persist_cpu,
        "render_cpu_s": render_cpu,
        "gzip_cpu_s": gzip_cpu,
        "workloads_cpu_s": workloads_cpu,
        "metrics_bytes": len(body),
        "metrics_gzip_bytes": len(zipped),
        "gzip1_cpu_s": fast_gzip_cpu,
        "metrics_gzip1_bytes": len(fast_zipped),
        "samples": sum(1 for line in body.splitlines() if line and not line.startswith(b"#")),
        "store_bytes": backend.written - written,
        "event_bytes": backend.event_bytes - events,
    }
    return figures


def _compare_with_reference(registry: CollectorRegistry) -> dict[str, Any]:
    """One scrape by each encoder: whether they agree, and what prometheus_client costs."""
    ours = (fast_render or reference_render)(registry)
    reference, _, reference_cpu = _timed(lambda: reference_render(registry))
    # /metrics leaves out prometheus_client's ``_created`` series (docs/metrics.md)
    reference = _CREATED_LINE.sub(b"", reference)
    return {"reference_render_cpu_s": reference_cpu, "identical": reference == ours}


_CREATED_LINE = re.compile(rb"^(?:# (?:HELP|TYPE) )?[a-zA-Z_:][a-zA-Z0-9_:]*_created[ {].*\n", re.M)


def _steady(cycles: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the steady cycles; the cycle's CPU also as mean and max."""
    result: dict[str, Any] = {}
    for key, first in cycles[0].items():
        values = [c[key] for c in cycles]
        result[key] = all(values) if isinstance(first, bool) else statistics.median(values)
    totals = [c["cycle_cpu_s"] for c in cycles]
    result["cycle_cpu_mean_s"] = statistics.fmean(totals)
    result["cycle_cpu_max_s"] = max(totals)
    result["cycles"] = len(cycles)
    return result


def _profiler(path: str | None) -> Any:
    if not path:
        return None
    from pyinstrument import Profiler  # noqa: PLC0415 - only when asked for

    return Profiler(interval=0.001)


def _write_profile(profiler: Any, prefix: str | None, phase: str) -> None:
    """Stop ``profiler`` and write what it saw to ``<prefix>.<phase>.txt``."""
    if profiler is None or prefix is None:
        return
    profiler.stop()
    Path(f"{prefix}.{phase}.txt").write_text(profiler.output_text(unicode=False, color=False))


PROBES: Mapping[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "sync": probe_sync,
    "list": probe_list,
    "cycles": probe_cycles,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m internal.bench.fleet_probes")
    parser.add_argument("probe", choices=sorted(PROBES))
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--gke", help="GKE emulator endpoint (cycles)")
    parser.add_argument(
        "--size", choices=sorted(fleet_objects.SIZES), default="S", help="the fleet (cycles)"
    )
    parser.add_argument("--cycles", type=int, default=5, help="steady cycles measured")
    parser.add_argument("--history", type=int, default=20, help="seeded events per resource")
    parser.add_argument("--timeout", type=float, default=600.0, help="sync timeout, seconds")
    parser.add_argument(
        "--reference", action="store_true", help="also render with prometheus_client"
    )
    parser.add_argument(
        "--profile",
        help="write pyinstrument profiles of the start-up, the first and the last cycle to "
        "PROFILE.startup.txt, PROFILE.first.txt and PROFILE.last.txt",
    )
    parser.add_argument(
        "--gc-threshold", help="gc.set_threshold(...) after the sync, e.g. 700,10,100"
    )
    parser.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after the sync")
    parser.add_argument(
        "--fleet-only", action="store_true", help='render with "PerResourceSeries": []'
    )
    args = parser.parse_args(argv)
    result = PROBES[args.probe](args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
