"""The one place where megamon is wired together: ``megamon run``.

Everything is built here from the configuration and handed to its consumer through
constructors; nothing deeper reads the config, owns a global, or exits the process.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as kube_config
from kubernetes.config.config_exception import ConfigException
from prometheus_client import CollectorRegistry

from megamon import __version__
from megamon.config import Config
from megamon.domain.kinds import Kind
from megamon.errors import ConfigError
from megamon.loops.aggregator import Aggregator, Intervals
from megamon.loops.leader import LeaseElector, default_identity
from megamon.observing.common import Settings
from megamon.publishing.exporters import build_exporters, export_all
from megamon.publishing.joblabels import JobLabeler
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.publishing.metrics.gating import LeaderOnly
from megamon.recording.eventlog import EventLog
from megamon.recording.latest import LatestObservations
from megamon.serving.auth import KubeGuard
from megamon.serving.http import Check, MetricsServer, ProbeServer
from megamon.serving.tls import serving_tls
from megamon.sources.gke import metadata
from megamon.sources.gke.lister import (
    GkeNodePoolLister,
    NodePoolLister,
    make_client,
)
from megamon.sources.kube.cluster import KubeCluster
from megamon.sources.kube.configmaps import ConfigMapKey
from megamon.sources.kube.ownermap import OWNER_MAP_KEY, OwnerMapStore
from megamon.sources.simulation import SimulatedNodePoolLister
from megamon.stores.factory import open_store
from megamon.telemetry import Instruments

log = logging.getLogger("megamon")

LEASE_NAME = "megamon-leader"
POD_NAMESPACE_ENV = "POD_NAMESPACE"
BUILD_COMMIT_ENV = "MEGAMON_BUILD_COMMIT"
BUILD_DATE_ENV = "MEGAMON_BUILD_DATE"
UNKNOWN = "unknown"


def enabled_kinds(config: Config) -> frozenset[Kind]:
    """Node pools and JobSets always; JobSet nodes when slices are off; the rest by flag."""
    kinds = {Kind.NODEPOOL, Kind.JOBSET}
    kinds.add(Kind.SLICE if config.SliceEnabled else Kind.JOBSET_NODES)
    if config.LeaderWorkerSetSupport:
        kinds.add(Kind.LEADERWORKERSET)
    return frozenset(kinds)


def observer_settings(config: Config) -> Settings:
    return Settings(
        threshold=config.UnknownCountThreshold,
        grace_ns=config.NodeUnknownGracePeriodSeconds * 1_000_000_000,
    )


def build_info() -> BuildInfo:
    """Version from the package; commit and date baked into the image's environment."""
    return BuildInfo(
        version=__version__,
        commit=os.environ.get(BUILD_COMMIT_ENV, UNKNOWN),
        date=os.environ.get(BUILD_DATE_ENV, UNKNOWN),
    )


def kubernetes_client() -> Any:
    """The in-cluster configuration when running in a pod, else ``KUBECONFIG``."""
    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            kube_config.load_incluster_config()  # type: ignore[no-untyped-call]
            return k8s.ApiClient()
        path = os.environ.get("KUBECONFIG")
        return kube_config.new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as err:
        raise ConfigError(f"no Kubernetes API to talk to: {err}") from err


def resolve_cluster(config: Config) -> Config:
    """Fill the GKE project, location and cluster from the metadata server when missing."""
    if config.EnableSimulation:
        return config
    return config.model_copy(update={"GKE": metadata.resolve(config.GKE)})


@dataclass
class Service:
    """A running megamon; ``stop`` takes it down in reverse order."""

    aggregator: Aggregator
    cluster: KubeCluster
    metrics: MetricsServer
    probes: ProbeServer
    elector: LeaseElector | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def stop(self) -> None:
        self.aggregator.stop()
        if self.elector is not None:
            self.elector.stop(release=True)
        self.cluster.stop()
        self.probes.stop()
        self.metrics.stop()


def _node_pools(config: Config, cluster: KubeCluster, instruments: Instruments) -> NodePoolLister:
    if config.EnableSimulation:
        return SimulatedNodePoolLister(lambda: cluster.nodes.snapshot().values())
    return GkeNodePoolLister(
        config.GKE.cluster_ref(), make_client(config.GKE.Endpoint), instruments=instruments
    )


def _elector(config: Config, api: Any) -> LeaseElector | None:
    if not config.EnableLeaderElection:
        return None
    namespace = os.environ.get(POD_NAMESPACE_ENV) or config.ReportConfigMapRef.Namespace
    return LeaseElector(api, namespace, LEASE_NAME, default_identity())


def _metrics_server(
    config: Config, registry: CollectorRegistry, ready: Check, api: Any
) -> MetricsServer:
    """Plain HTTP, or with ``SecureMetrics`` HTTPS for bearer tokens the API authorises."""
    if not config.SecureMetrics:
        if config.MetricsCertDir:
            log.warning("MetricsCertDir is ignored: SecureMetrics is false")
        return MetricsServer(config.MetricsAddr, registry, ready=ready)
    cert_file, key_file = config.metrics_cert_files or (None, None)
    return MetricsServer(
        config.MetricsAddr,
        registry,
        ready=ready,
        tls=serving_tls(cert_file, key_file).context,
        guard=KubeGuard(api),
    )


GC_THRESHOLDS = (700, 10, 100)
"""Full collections after 100 middle-generation ones instead of 10: at 65,000 nodes a full
collection scans ~500,000 objects (0.28 s), and the defaults pay for one almost every cycle
(docs/performance.md)."""


def _freeze_once_synced(cluster: KubeCluster) -> None:
    """Move everything the initial sync built out of the collector's way for good."""
    while not cluster.wait_synced(60.0):
        continue
    gc.collect()
    gc.freeze()


def start(config: Config) -> Service:
    """Build every part from ``config`` and start them; the caller stops the service."""
    gc.set_threshold(*GC_THRESHOLDS)
    config = resolve_cluster(config)
    registry = CollectorRegistry()
    own = CollectorRegistry()  # megamon's self-observation, published by the leader only
    instruments = Instruments(config.metric_prefix, own)
    kinds = enabled_kinds(config)
    api = kubernetes_client()
    cluster = KubeCluster(
        api,
        leaderworkersets=config.LeaderWorkerSetSupport,
        slices=config.SliceEnabled,
        on_change=lambda: aggregator.changed.set(),  # noqa: PLW0108 - aggregator is bound below
    )
    elector = _elector(config, api)
    is_leader = elector.is_leader if elector is not None else (lambda: True)
    exporters = build_exporters(config, api_client=api, instruments=instruments)
    aggregator = Aggregator(
        event_log=EventLog(
            open_store(config, instruments),
            kinds,
            cluster=config.GKE.ClusterName,
            snapshot_interval_s=config.SnapshotIntervalSeconds,
            instruments=instruments,
        ),
        cluster=cluster,
        latest=LatestObservations(),
        pools=_node_pools(config, cluster, instruments),
        kinds=kinds,
        settings=observer_settings(config),
        export=functools.partial(export_all, exporters),
        intervals=Intervals(
            aggregation=config.AggregationIntervalSeconds,
            polling=config.polling_interval_seconds,
        ),
        owner_maps=OwnerMapStore(
            ConfigMapKey(api, config.SliceOwnerMapConfigMapRef, OWNER_MAP_KEY)
        ),
        job_labeler=None if config.DisableNodePoolJobLabelling else JobLabeler(api),
        is_leader=is_leader,
        instruments=instruments,
    )
    registry.register(
        ReportCollector(
            config.metric_prefix, aggregator.latest_report, is_leader, build=build_info()
        )
    )
    registry.register(LeaderOnly(own, is_leader))

    def serving() -> bool:
        return aggregator.ready() or not is_leader() or aggregator.standing_by()

    metrics = _metrics_server(config, registry, serving, api)
    probes = ProbeServer(config.ProbeAddr, healthy=aggregator.healthy, ready=serving)
    metrics.start()
    probes.start()
    cluster.start()
    threading.Thread(target=_freeze_once_synced, args=(cluster,), daemon=True).start()
    if elector is not None:
        elector.start()
    aggregator.start()
    log.info(
        "megamon %s running: kinds %s, history in %s, metrics on %s",
        __version__,
        ", ".join(sorted(k.value for k in kinds)),
        aggregator.store_description(),
        metrics.url,
    )
    return Service(aggregator, cluster, metrics, probes, elector, registry)
