"""A TPU cluster for the observer tests, driven only through the official clients.

Everything Kubernetes is created, changed and deleted with the kubernetes client, so these
tests run unchanged against the emulator or, with ``MEGAMON_TEST_KUBECONFIG``, a real
cluster; node pools go to the GKE emulator (there is no real GKE here).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from internal.fakegke import FakeGke, tpu7x_node_pool, tpu_node_pool, workload_policy
from megamon.app import required_kinds
from megamon.config import ConfigMapRef
from megamon.domain import labels, timestamps
from megamon.domain.descriptions import KindDescription
from megamon.domain.kinds import Kind
from megamon.domain.rejections import Rejection
from megamon.domain.reports import Report
from megamon.loops.aggregator import Aggregator, Intervals
from megamon.observing.cluster import WorkloadObservers
from megamon.observing.common import Settings
from megamon.observing.owners import SliceOwners
from megamon.publishing.joblabels import JobLabeler
from megamon.publishing.metrics import exposition
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.sources.gke.lister import GkeNodePoolLister, make_client
from megamon.sources.gke.policies import ComputeWorkloadPolicies, make_compute_client, region_of
from megamon.sources.kube.cluster import KubeCluster
from megamon.sources.kube.configmaps import ConfigMapKey
from megamon.sources.kube.ownermap import OWNER_MAP_KEY, ConfigMapOwnerMap
from megamon.sources.kube.resources import JOBSETS, LEADERWORKERSETS, SLICES
from megamon.sources.kube.watching import WatchSettings
from megamon.stores.base import EventStore
from megamon.stores.memory import MemoryEventStore
from megamon.summary.assembly import ReportAssembly
from megamon.telemetry import Instruments

PROJECT, LOCATION, CLUSTER = "proj", "us-central2", "tpu-cluster"
REF = f"projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER}"
FAST = WatchSettings(watch_seconds=5, inactivity_timeout=5.0, backoff_initial=0.05)


HOLDER = "scenario-megamon"
"""The writer lease's holder name of every ``Megamon`` here."""


@dataclass(frozen=True)
class Written:
    """A history a megamon wrote, as it stood when that megamon stopped: its store, the
    ``/metrics`` text of its last report and that report's ``now``."""

    store: EventStore
    metrics: str | None
    now: int
    cycle_ns: int
    described: tuple[KindDescription, ...]


@dataclass
class World:
    api: Any
    gke: FakeGke
    namespace: str
    created_nodes: list[str] = field(default_factory=list)
    histories: list[Written] = field(default_factory=list)
    """What each megamon left when it stopped, for the cross-surface check (conftest)."""

    def __post_init__(self) -> None:
        # Every GKE cluster has a CPU pool; megamon must list it and ignore it.
        self.gke.put_node_pool(
            PROJECT,
            LOCATION,
            CLUSTER,
            {
                "name": "default-pool",
                "status": "RUNNING",
                "initialNodeCount": 3,
                "config": {"machineType": "e2-standard-8"},
            },
        )

    # GKE ---------------------------------------------------------------------------------

    def pool(self, name: str, status: str = "PROVISIONING", **kw: Any) -> None:
        self.gke.put_node_pool(PROJECT, LOCATION, CLUSTER, tpu_node_pool(name, status=status, **kw))

    def workload_policy(self, name: str, topology: str) -> None:
        """``gcloud compute resource-policies create workload-policy NAME
        --type=HIGH_THROUGHPUT --accelerator-topology=TOPOLOGY`` in the cluster's region."""
        self.gke.put_resource_policy(PROJECT, region_of(LOCATION), workload_policy(name, topology))

    def tpu7x_pool(self, name: str, policy: str, topology: str, status: str) -> None:
        """An Ironwood (TPU7x) multi-host pool placed by ``policy`` (no ``tpuTopology``)."""
        pool = tpu7x_node_pool(name, policy, topology, status)
        self.gke.put_node_pool(PROJECT, LOCATION, CLUSTER, pool)

    def pool_status(self, name: str, status: str) -> None:
        self.gke.set_status(PROJECT, LOCATION, CLUSTER, name, status)

    # Nodes -------------------------------------------------------------------------------

    def node(
        self,
        name: str,
        pool: str,
        topology: str = "16x16",
        ready: str = "True",
        since_s: float = 3600.0,
        extra: dict[str, str] | None = None,
        accelerator: str = "tpu-v5-lite-podslice",
    ) -> None:
        node_labels = {
            labels.NODEPOOL: pool,
            labels.TPU_TOPOLOGY: topology,
            labels.TPU_ACCELERATOR: accelerator,
            labels.ACCELERATOR_COUNT: "4",
            **(extra or {}),
        }
        core = k8s.CoreV1Api(self.api)
        core.create_node({"metadata": {"name": name, "labels": node_labels}})
        self.created_nodes.append(name)
        self.ready(name, ready, since_s)

    def ready(self, name: str, status: str, since_s: float = 0.0) -> None:
        moment = timestamps.format_ns(time.time_ns() - int(since_s * 1e9))
        condition = {
            "type": "Ready",
            "status": status,
            "lastTransitionTime": moment,
            "lastHeartbeatTime": moment,
            "reason": "Test",
            "message": "set by test",
        }
        k8s.CoreV1Api(self.api).patch_node_status(name, {"status": {"conditions": [condition]}})

    def allocatable(self, name: str, tpu_chips: str) -> None:
        """``status.allocatable["google.com/tpu"]``, as the TPU device plugin reports it."""
        body = {"status": {"allocatable": {labels.RESOURCE_TPU: tpu_chips}}}
        k8s.CoreV1Api(self.api).patch_node_status(name, body)

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        """Labels, taints or ``spec.unschedulable``, as GKE's maintenance and upgrades set them."""
        k8s.CoreV1Api(self.api).patch_node(name, body)

    def delete_node(self, name: str) -> None:
        k8s.CoreV1Api(self.api).delete_node(name)
        self.created_nodes.remove(name)

    # Workloads ---------------------------------------------------------------------------

    def _custom(self) -> Any:
        return k8s.CustomObjectsApi(self.api)

    def jobset(self, name: str, replicas: int = 2, topology: str = "4x4") -> str:
        selector = {labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice", labels.TPU_TOPOLOGY: topology}
        body = {
            "apiVersion": f"{JOBSETS.group}/{JOBSETS.version}",
            "kind": "JobSet",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "slice",
                        "replicas": replicas,
                        "template": {
                            "spec": {
                                "parallelism": 4,
                                "template": {
                                    "spec": {
                                        "nodeSelector": selector,
                                        "restartPolicy": "Never",
                                        "containers": [{"name": "main", "image": "busybox"}],
                                    }
                                },
                            }
                        },
                    }
                ]
            },
        }
        created = self._custom().create_namespaced_custom_object(
            JOBSETS.group, JOBSETS.version, self.namespace, JOBSETS.plural, body
        )
        return str(created["metadata"]["uid"])

    def jobset_status(
        self,
        name: str,
        ready: int,
        condition: str = "",
        restarts: int | None = None,
        *,
        reason: str = "Test",
        message: str = "set by test",
        job_restarts: list[int] | None = None,
        in_place: tuple[int | None, int | None] | None = None,
        restarting: tuple[str, str, int] | None = None,
    ) -> None:
        """Write a JobSet's status as its controller does (one status PUT's worth, merged).

        ``job_restarts``: ``jobRestarts`` of the replicated Job (single-Job restarts,
        JobSet v0.12.0); ``in_place``: ``(previousInPlaceRestartAttempt,
        currentInPlaceRestartAttempt)`` (KEP-467); ``restarting``: the ``RestartingJobSet``
        condition as ``(status, reason, lastTransitionTime ns)``, beside ``condition``."""
        replicated: dict[str, Any] = {"name": "slice", "ready": ready}
        if job_restarts is not None:
            replicated["jobRestarts"] = job_restarts
        status: dict[str, Any] = {"replicatedJobsStatus": [replicated]}
        if restarts is not None:
            status["restarts"] = restarts
        if in_place is not None:
            previous, current = in_place
            status["previousInPlaceRestartAttempt"] = previous
            status["currentInPlaceRestartAttempt"] = current
        conditions: list[dict[str, Any]] = []
        if condition:
            conditions.append(
                {
                    "type": condition,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": timestamps.format_ns(time.time_ns()),
                }
            )
        if restarting is not None:
            state, why, at = restarting
            conditions.append(
                {
                    "type": "RestartingJobSet",
                    "status": state,
                    "reason": why,
                    "message": message,
                    "lastTransitionTime": timestamps.format_ns(at),
                }
            )
        if conditions:
            status["conditions"] = conditions
        self._custom().patch_namespaced_custom_object_status(
            JOBSETS.group,
            JOBSETS.version,
            self.namespace,
            JOBSETS.plural,
            name,
            {"status": status},
        )

    def leaderworkerset(self, name: str, replicas: int, ready: int) -> str:
        body = {
            "apiVersion": f"{LEADERWORKERSETS.group}/{LEADERWORKERSETS.version}",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "replicas": replicas,
                "leaderWorkerTemplate": {
                    "workerTemplate": {
                        "spec": {
                            "nodeSelector": {
                                labels.TPU_TOPOLOGY: "2x4",
                                labels.TPU_ACCELERATOR: "tpu-v6e-slice",
                            },
                            "containers": [{"name": "w", "image": "busybox"}],
                        }
                    }
                },
            },
        }
        api = self._custom()
        created = api.create_namespaced_custom_object(
            LEADERWORKERSETS.group,
            LEADERWORKERSETS.version,
            self.namespace,
            LEADERWORKERSETS.plural,
            body,
        )
        api.patch_namespaced_custom_object_status(
            LEADERWORKERSETS.group,
            LEADERWORKERSETS.version,
            self.namespace,
            LEADERWORKERSETS.plural,
            name,
            {"status": {"readyReplicas": ready}},
        )
        return str(created["metadata"]["uid"])

    def described(
        self, description: KindDescription, body: dict[str, Any], version: str | None = None
    ) -> str:
        """Create an object of a described kind (``body`` without apiVersion/metadata), at
        ``version`` (its description's first when ``None``)."""
        api = self._custom()
        version = version or description.Version[0]
        created = api.create_namespaced_custom_object(
            description.Group,
            version,
            self.namespace,
            description.Resource,
            {
                "apiVersion": f"{description.Group}/{version}",
                "metadata": {"name": body.pop("name"), "namespace": self.namespace},
                **body,
            },
        )
        return str(created["metadata"]["uid"])

    def described_status(
        self,
        description: KindDescription,
        name: str,
        status: dict[str, Any],
        version: str | None = None,
    ) -> None:
        """Replace the status of an object of a described kind, as its controller would."""
        self._custom().patch_namespaced_custom_object_status(
            description.Group,
            version or description.Version[0],
            self.namespace,
            description.Resource,
            name,
            {"status": status},
        )

    def slice(self, name: str, owner: str, ready: str = "True") -> None:
        body = {
            "apiVersion": f"{SLICES.group}/{SLICES.version}",
            "kind": "Slice",
            "metadata": {
                "name": name,
                "labels": {
                    labels.SLICE_OWNER_KIND: "JobSet",
                    labels.SLICE_OWNER_NAME: owner,
                    labels.SLICE_OWNER_NAMESPACE: self.namespace,
                },
            },
            "spec": {"type": "tpu7x", "topology": "4x4x4", "partitionIds": ["p0"]},
        }
        api = self._custom()
        api.create_cluster_custom_object(SLICES.group, SLICES.version, SLICES.plural, body)
        condition = {
            "type": "Ready",
            "status": ready,
            "reason": "Test",
            "message": "test",
            "lastTransitionTime": timestamps.format_ns(time.time_ns()),
        }
        api.patch_cluster_custom_object_status(
            SLICES.group,
            SLICES.version,
            SLICES.plural,
            name,
            {"status": {"conditions": [condition]}},
        )

    def slice_conditions(self, name: str, *conditions: tuple[str, str, str, str]) -> None:
        """Replace a Slice's conditions, each (type, status, reason, message), as its
        controller writes them."""
        moment = timestamps.format_ns(time.time_ns())
        body = [
            {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": moment}
            for t, s, r, m in conditions
        ]
        self._custom().patch_cluster_custom_object_status(
            SLICES.group, SLICES.version, SLICES.plural, name, {"status": {"conditions": body}}
        )

    def patch_jobset_status(self, name: str, status: dict[str, Any]) -> None:
        """Any status, well-formed or not, as a buggy controller may write it."""
        self._custom().patch_namespaced_custom_object_status(
            JOBSETS.group,
            JOBSETS.version,
            self.namespace,
            JOBSETS.plural,
            name,
            {"status": status},
        )

    def patch_jobset(self, name: str, body: dict[str, Any]) -> None:
        """Labels or ``spec.suspend``, as a user or Kueue changes them."""
        self._custom().patch_namespaced_custom_object(
            JOBSETS.group, JOBSETS.version, self.namespace, JOBSETS.plural, name, body
        )

    def delete_slice(self, name: str) -> None:
        self._custom().delete_cluster_custom_object(
            SLICES.group, SLICES.version, SLICES.plural, name
        )

    def leader(self, jobset: str, node_name: str) -> str:
        job_name = f"{jobset}-slice-0"
        batch = k8s.BatchV1Api(self.api)
        batch.create_namespaced_job(
            self.namespace,
            {
                "metadata": {"name": job_name, "labels": {labels.JOBSET_NAME: jobset}},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "m", "image": "busybox"}],
                        }
                    }
                },
            },
        )
        k8s.CoreV1Api(self.api).create_namespaced_pod(
            self.namespace,
            {
                "metadata": {
                    "name": f"{job_name}-0",
                    "labels": {
                        labels.JOBSET_NAME: jobset,
                        labels.JOB_NAME: job_name,
                        labels.JOB_COMPLETION_INDEX: "0",
                    },
                },
                "spec": {
                    "nodeName": node_name,
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            },
        )
        return job_name


class Megamon:
    """megamon's observing side, wired as ``megamon run`` wires it, on an in-memory store."""

    def __init__(
        self,
        world: World,
        *,
        threshold: float = 1.0,
        grace_s: int = 180,
        slices: bool = False,
        store: EventStore | None = None,
        aggregation_s: float = 0.1,
        described: Sequence[KindDescription] = (),
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.problems: list[Rejection] = []
        self.instruments = Instruments("megamon", CollectorRegistry())
        """megamon's own instruments (the GKE and Compute calls' latencies among them)."""
        """What the watch caches could not read (``on_problem``), in the order they met it."""
        kinds = {Kind.NODEPOOL, Kind.JOBSET, Kind.LEADERWORKERSET}
        kinds.add(Kind.SLICE if slices else Kind.JOBSET_NODES)
        kinds.update(description.kind for description in described)
        self.cluster = KubeCluster(
            world.api,
            leaderworkersets=True,
            slices=slices,
            described=described,
            settings=FAST,
            on_change=lambda: self.aggregator.changed.set(),  # noqa: PLW0108 - set below
            on_problem=self.problems.append,
        )
        owner_key = ConfigMapKey(
            world.api,
            ConfigMapRef(Namespace=world.namespace, Name="megamon-slice-owner-map"),
            OWNER_MAP_KEY,
        )
        self.world = world
        self.described = tuple(described)
        self.cycle_ns = int(aggregation_s * 10**9)
        self.store = store or MemoryEventStore()
        # The summary state written beside each snapshot and read at start, as ``megamon run``
        # keeps it (the end-of-scenario check compares it with a replay).
        assembly = ReportAssembly(
            kinds, self.store, unobserved_slack_ns=UNOBSERVED_SLACK_NS, state_store=self.store.log
        )
        self.aggregator = Aggregator(
            # One lease holder for every Megamon of a test: a restarted one takes its
            # predecessor's lease at once, as a restarted process does (``holder_gone``).
            event_log=EventLog(
                self.store,
                required_kinds(frozenset(kinds)),
                holder=HOLDER,
                on_retired=assembly.retired,
                on_snapshot=assembly.snapshotted,
            ),
            assembly=assembly,
            cluster=self.cluster,
            pools=GkeNodePoolLister(
                REF,
                make_client(world.gke.endpoint),
                instruments=self.instruments,
                policies=ComputeWorkloadPolicies(
                    PROJECT,
                    region_of(LOCATION),
                    partial(make_compute_client, world.gke.endpoint),
                    instruments=self.instruments,
                    deadline=5.0,
                    initial_backoff=0.05,
                ),
                deadline=5.0,
                initial_backoff=0.05,
            ),
            kinds=kinds,
            settings=Settings(threshold=threshold, grace_ns=grace_s * 10**9),
            export=JobLabeler(world.api).export,
            intervals=Intervals(aggregation=aggregation_s, polling=0.1),
            slice_owners=SliceOwners(ConfigMapOwnerMap(owner_key)),
            observers=WorkloadObservers(described),
            clock=clock,
            instruments=self.instruments,
        )
        self.cluster.start()
        assert self.cluster.wait_synced(10)

    def settle(self, check: Callable[[Report], bool], timeout: float = 10.0) -> Report:
        """Cycle until the report satisfies ``check`` (watches take a moment to deliver)."""
        deadline = time.monotonic() + timeout
        report = None
        while time.monotonic() < deadline:
            self.aggregator.poll_once()
            report = self.aggregator.aggregate_once()
            self.aggregator.persist_once()
            if report is not None and check(report):
                return report
            time.sleep(0.05)
        raise AssertionError(f"report never satisfied the check; last: {report}")

    def stop(self) -> None:
        """Stop as ``megamon run`` stops (the history flushed and snapshotted, the writer
        lease released), and leave the history and the last scrape to the world."""
        self.cluster.stop()
        self.aggregator.stop()
        report = self.aggregator.latest_report()
        self.world.histories.append(
            Written(
                self.store,
                scrape(report, self.described) if report is not None else None,
                report.generated_at if report is not None else time.time_ns(),
                self.cycle_ns,
                self.described,
            )
        )


def scrape(report: Report, described: Sequence[KindDescription] = ()) -> str:
    """What ``/metrics`` serves for ``report``: the collector ``megamon run`` registers."""
    registry = CollectorRegistry(auto_describe=False)
    collector = ReportCollector(
        "megamon",
        lambda: report,
        build=BuildInfo("test", "test", "test"),
        described=[description.kind for description in described],
    )
    registry.register(collector)
    return exposition.generate_latest(registry).decode()
