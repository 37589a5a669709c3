"""The one place where megamon is wired together: ``megamon run``.

Everything is built here from the configuration and handed to its consumer through
constructors; nothing deeper reads the config, owns a global, or exits the process.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from google.auth import exceptions as google_auth_errors
from kubernetes import client as k8s
from kubernetes import config as kube_config
from kubernetes.config.config_exception import ConfigException
from prometheus_client import CollectorRegistry

from megamon import __version__
from megamon.build import BuildIdentity, build_identity
from megamon.config import UNKNOWN_STAYS_UNKNOWN, Config
from megamon.domain.kinds import Kind
from megamon.errors import ConfigError
from megamon.gcpolicy import GcPolicy
from megamon.loops.aggregator import Aggregator, Intervals
from megamon.loops.leader import LeaseElector, default_identity
from megamon.observing.cluster import WorkloadObservers
from megamon.observing.common import Memos, Settings
from megamon.observing.deletions import confirm_within_ns
from megamon.observing.owners import SliceOwners
from megamon.publishing.exporters import build_exporters, export_all
from megamon.publishing.joblabels import JobLabeler
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.publishing.metrics.gating import LeaderOnly
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.recording.latest import LatestObservations
from megamon.serving.auth import KubeGuard
from megamon.serving.http import MetricsServer, ProbeServer, parse_addr
from megamon.serving.tls import serving_tls
from megamon.sources.gke import metadata
from megamon.sources.gke.lister import (
    GkeNodePoolLister,
    NodePoolLister,
    make_client,
)
from megamon.sources.gke.policies import (
    ComputeWorkloadPolicies,
    make_compute_client,
    region_of,
)
from megamon.sources.kube.cluster import KubeCluster
from megamon.sources.kube.configmaps import ConfigMapKey
from megamon.sources.kube.ownermap import OWNER_MAP_KEY, ConfigMapOwnerMap
from megamon.sources.kube.watching import WatchSettings
from megamon.sources.simulation import SimulatedNodePoolLister
from megamon.stores.factory import open_store
from megamon.summary.assembly import ReportAssembly
from megamon.telemetry import Instruments

log = logging.getLogger("megamon")

LEASE_NAME = "megamon-leader"
POD_NAMESPACE_ENV = "POD_NAMESPACE"


def enabled_kinds(config: Config) -> frozenset[Kind]:
    """Node pools and JobSets always; JobSet nodes when slices are off; the rest by flag;
    every described kind of ``WorkloadKinds``."""
    kinds = {Kind.NODEPOOL, Kind.JOBSET}
    kinds.add(Kind.SLICE if config.SliceEnabled else Kind.JOBSET_NODES)
    if config.LeaderWorkerSetSupport:
        kinds.add(Kind.LEADERWORKERSET)
    kinds.update(description.kind for description in config.WorkloadKinds)
    return frozenset(kinds)


UNKNOWN_FOREVER_NS = (1 << 63) - 1
"""A grace period no node outlasts: ``NodeUnknownGracePeriodSeconds`` 0."""


def required_kinds(kinds: frozenset[Kind]) -> frozenset[Kind]:
    """The kinds the first report waits for: the built-in ones. A described kind's resource
    may not be served (its CRD not installed yet); it joins the reports when it is."""
    return frozenset(kind for kind in kinds if kind.builtin)


def observer_settings(config: Config) -> Settings:
    """``NodeUnknownGracePeriodSeconds`` 0 keeps an Unknown node Unknown, as the Go megamon
    does (docs/migrating.md); any other value is the grace before it counts as not ready."""
    grace = config.NodeUnknownGracePeriodSeconds
    return Settings(
        threshold=config.UnknownCountThreshold,
        grace_ns=UNKNOWN_FOREVER_NS if grace == UNKNOWN_STAYS_UNKNOWN else grace * 1_000_000_000,
        single_host_pools=config.TrackSingleHostNodePools,
        failed_provisioning=config.RecordFailedProvisioning,
        confirm_within_ns=confirm_within_ns(config.polling_interval_seconds),
        exact_count=config.RequireExactCount,
    )


def build_info(identity: BuildIdentity | None = None) -> BuildInfo:
    """Version from the package; commit and date baked into the image's environment, or
    the checkout's own (``megamon.build``)."""
    identity = identity or build_identity()
    return BuildInfo(version=identity.version, commit=identity.commit, date=identity.date)


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
    gke = config.GKE
    try:
        client = make_client(gke.Endpoint)
    except google_auth_errors.DefaultCredentialsError as err:
        raise ConfigError(
            f"GKE {config.GKE.cluster_ref()}: no Google Cloud credentials to list its node pools "
            f"with ({err}); run with a service account (Workload Identity), set "
            "GOOGLE_APPLICATION_CREDENTIALS, or set EnableSimulation for a cluster without GKE"
        ) from None
    compute = partial(make_compute_client, gke.ComputeEndpoint)
    policies = ComputeWorkloadPolicies(
        gke.ProjectID, region_of(gke.ClusterLocation), compute, instruments=instruments
    )
    return GkeNodePoolLister(gke.cluster_ref(), client, instruments=instruments, policies=policies)


LISTEN_KEYS = ("MetricsAddr", "ProbeAddr")


def check_addresses(config: Config) -> None:
    """Refuse a malformed ``MetricsAddr`` / ``ProbeAddr`` before anything is started."""
    for key in LISTEN_KEYS:
        try:
            parse_addr(getattr(config, key))
        except ValueError as err:
            raise ConfigError(f"{key}: {err}") from None


def check_local_history(config: Config) -> None:
    """The local history directory must exist (it is created) and be writable, at start:
    otherwise every cycle would fail to record and the history would silently stop."""
    if config.EnableSimulation or config.EventsBucketName:
        return
    directory = Path(config.EventsLocalDir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        reason = err.strerror or str(err)
        raise ConfigError(
            f"EventsLocalDir {str(directory)!r}: cannot create it: {reason}"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"EventsLocalDir {str(directory)!r}: not writable by this user")


def listen(server: MetricsServer | ProbeServer, key: str, addr: str) -> None:
    """Bind ``server``; a port in use or refused is the user's ``ConfigError``, naming the key."""
    try:
        server.start()
    except OSError as err:
        reason = err.strerror or str(err)
        raise ConfigError(f"{key} {addr!r}: cannot listen there: {reason}") from None


def _elector(config: Config, api: Any) -> LeaseElector | None:
    if not config.EnableLeaderElection:
        return None
    namespace = os.environ.get(POD_NAMESPACE_ENV) or config.ReportConfigMapRef.Namespace
    return LeaseElector(api, namespace, LEASE_NAME, default_identity())


def _metrics_server(config: Config, registry: CollectorRegistry, api: Any) -> MetricsServer:
    """Plain HTTP, or with ``MetricsTLS`` HTTPS for bearer tokens the API authorises.

    ``SecureMetrics`` is the Go megamon's key: there it configured a controller-runtime
    metrics server that was never started, and ``/metrics`` on ``MetricsAddr`` stayed plain
    HTTP. A Go config switched over (where it is true by default) keeps that scrape working.
    """
    if not config.MetricsTLS:
        if config.MetricsCertDir:
            log.warning("MetricsCertDir is ignored: MetricsTLS is false")
        return MetricsServer(config.MetricsAddr, registry)
    cert_file, key_file = config.metrics_cert_files or (None, None)
    return MetricsServer(
        config.MetricsAddr,
        registry,
        tls=serving_tls(cert_file, key_file).context,
        guard=KubeGuard(api),
    )


def start(config: Config) -> Service:
    """Build every part from ``config`` and start them; the caller stops the service."""
    gc_policy = GcPolicy()
    gc_policy.apply()
    check_addresses(config)
    check_local_history(config)
    config = resolve_cluster(config)
    registry = CollectorRegistry()
    own = CollectorRegistry()  # megamon's self-observation, published by the leader only
    kinds = enabled_kinds(config)
    instruments = Instruments(config.metric_prefix, own, kinds)
    api = kubernetes_client()
    cluster = KubeCluster(
        api,
        leaderworkersets=config.LeaderWorkerSetSupport,
        slices=config.SliceEnabled,
        settings=WatchSettings(pause=gc_policy.collector_paused),
        described=config.WorkloadKinds,
        on_change=lambda: aggregator.changed.set(),  # noqa: PLW0108 - aggregator is bound below
        on_problem=lambda rejection: aggregator.rejected(rejection),  # noqa: PLW0108 - as above
    )
    elector = _elector(config, api)
    is_leader = elector.is_leader if elector is not None else (lambda: True)
    exporters = build_exporters(
        config,
        api_client=api,
        instruments=instruments,
        collect=registry.collect,
        version=__version__,
    )
    if not config.DisableNodePoolJobLabelling:
        exporters.append(JobLabeler(api))
    store = open_store(config, instruments)
    assembly = ReportAssembly(
        kinds,
        store,
        unobserved_slack_ns=UNOBSERVED_SLACK_NS,
        state_store=store.log,
        on_rebuilt=lambda kind, reason: instruments.summary_state_rebuilds.labels(
            kind=kind.value, reason=reason
        ).inc(),
    )
    memos = Memos()  # the node pool and JobSet-nodes observers share its node index
    aggregator = Aggregator(
        event_log=EventLog(
            store,
            required_kinds(kinds),
            cluster=config.GKE.ClusterName,
            snapshot_interval_s=config.SnapshotIntervalSeconds,
            instruments=instruments,
            on_retired=assembly.retired,
            on_snapshot=assembly.snapshotted,
        ),
        assembly=assembly,
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
        slice_owners=SliceOwners(
            ConfigMapOwnerMap(ConfigMapKey(api, config.SliceOwnerMapConfigMapRef, OWNER_MAP_KEY))
        ),
        observers=WorkloadObservers(config.WorkloadKinds, nodes=memos.nodes),
        is_leader=is_leader,
        instruments=instruments,
        memos=memos,
    )
    identity = build_identity()  # git may answer slowly: asked once, before any thread starts
    registry.register(
        ReportCollector(
            config.metric_prefix,
            aggregator.latest_report,
            is_leader,
            build=build_info(identity),
            described=[description.kind for description in config.WorkloadKinds],
            per_resource=config.PerResourceSeries,
        )
    )
    registry.register(LeaderOnly(own, is_leader))

    def serving() -> bool:
        return aggregator.ready() or not is_leader() or aggregator.standing_by()

    metrics = _metrics_server(config, registry, api)
    probes = ProbeServer(config.ProbeAddr, healthy=aggregator.healthy, ready=serving)
    listen(metrics, "MetricsAddr", config.MetricsAddr)
    try:
        listen(probes, "ProbeAddr", config.ProbeAddr)
    except ConfigError:
        metrics.stop()
        raise
    cluster.start()
    gc_policy.freeze_when_synced(cluster.wait_synced)
    if elector is not None:
        elector.start()
    aggregator.start()
    log.info(
        "megamon %s running: kinds %s, history in %s, metrics on %s",
        identity.describe(),
        ", ".join(sorted(k.value for k in kinds)),
        aggregator.store_description(),
        metrics.url,
    )
    return Service(aggregator, cluster, metrics, probes, elector, registry)
