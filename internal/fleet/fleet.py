"""A simulated TPU fleet: one call changes GKE and Kubernetes together, as a real cluster would.

Why: megamon joins two sources — GKE says which node pools exist and their status, the
Kubernetes API says which nodes are ready and which workloads run. A demo or an end-to-end test
that seeds the two emulators by hand soon contradicts itself (nodes of a pool GKE no longer
lists, a pool RUNNING with half its nodes). ``Fleet`` is the one place that knows how the two
move together: a pool is PROVISIONING until its last node registers, then RUNNING; deleting
a pool sets STOPPING, removes its nodes and the pods bound to them, then the pool; a JobSet
owns one Job per replica and a leader pod bound to a node of its pool once ready.

Timestamps (``lastTransitionTime`` and friends) come from ``clock`` — wall time by default,
because megamon compares them with its own clock. The fleet is not thread-safe: one thread
(a test, or the scenario runner) drives it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from internal.fakegke import FakeGke, tpu_node_pool
from internal.fakekube import FakeKube
from internal.fleet import objects
from internal.fleet.nodes import gke_node_name
from internal.fleet.objects import Owner
from internal.fleet.shapes import TpuShape
from internal.fleet.times import rfc3339
from megamon.domain import labels

PoolOrShape = str | Sequence[str] | TpuShape
"""Where a workload runs: a node pool, one pool per replica, or just a shape (no pool)."""

STOCKOUT = (
    "GCE_STOCKOUT: There are not enough resources available to fulfill the request. "
    "Try a different zone, or try again later."
)
SLICE_FAILURE = "TPU slice creation failed: not enough capacity for the requested topology"
SLICE_DEGRADED = "TPU host of the slice unhealthy: ICI link down"
KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
"""The label naming the Kueue LocalQueue a JobSet is submitted to."""


class FleetError(Exception):
    """An operation names an unknown resource or would make the fleet inconsistent."""


@dataclass
class _Pool:
    shape: TpuShape
    jobset: tuple[str, str] | None
    tpu_slice: str | None
    nodes: list[str] = field(default_factory=list)
    created: int = 0  # nodes ever created, so a replacement node gets a fresh name


@dataclass
class _Workload:
    shape: TpuShape
    replicas: int
    pools: tuple[str, ...]
    parallelism: int | None = None
    uid: str = ""
    job_uids: list[str] = field(default_factory=list)
    leaders: dict[int, str] = field(default_factory=dict)  # replica index -> leader pod
    restarts: int = 0


class Fleet:
    """TPU node pools, nodes and workloads of one cluster, kept consistent in both emulators."""

    def __init__(
        self,
        gke: FakeGke,
        kube: FakeKube,
        project: str,
        location: str,
        cluster: str,
        *,
        realistic_nodes: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.gke = gke
        self.kube = kube
        self.project = project
        self.location = location
        self.cluster = cluster
        self.zone = location if location.count("-") >= 2 else f"{location}-a"
        self.realistic_nodes = realistic_nodes
        self._clock = clock
        self._pools: dict[str, _Pool] = {}
        self._jobsets: dict[tuple[str, str], _Workload] = {}
        self._lwss: dict[tuple[str, str], _Workload] = {}
        self._slices: set[str] = set()

    # -- reading --------------------------------------------------------------------------

    @property
    def pools(self) -> tuple[str, ...]:
        """Names of the pools GKE lists, in creation order."""
        return tuple(self._pools)

    def nodes(self, pool: str) -> tuple[str, ...]:
        """Names of the pool's nodes, in creation order."""
        return tuple(self._pool(pool).nodes)

    def shape(self, pool: str) -> TpuShape:
        return self._pool(pool).shape

    def pool_status(self, pool: str) -> str:
        """The pool's GKE status, as the emulator holds it."""
        self._pool(pool)
        status = self.gke.get_node_pool(self.project, self.location, self.cluster, pool)["status"]
        return str(status)

    def now(self) -> str:
        """The clock's current time, RFC 3339."""
        return rfc3339(self._clock())

    # -- node pools -----------------------------------------------------------------------

    def create_pool(
        self,
        name: str,
        accelerator: str,
        machine_type: str,
        topology: str,
        spot: bool = False,
        *,
        jobset: tuple[str, str] | None = None,
        tpu_slice: str | None = None,
    ) -> TpuShape:
        """A PROVISIONING pool with no nodes yet.

        ``jobset`` is the (namespace, name) the TPU provisioner created it for: its nodes carry
        the provisioner labels. ``tpu_slice`` names the slice its nodes belong to.
        """
        if name in self._pools:
            raise FleetError(f"node pool {name} already exists")
        shape = TpuShape(accelerator, machine_type, topology, spot)
        owner_labels = {}
        if jobset is not None:
            owner_labels = {
                labels.PROVISIONER_JOBSET_NAMESPACE: jobset[0],
                labels.PROVISIONER_JOBSET_NAME: jobset[1],
            }
        pool = tpu_node_pool(
            name,
            machine_type=machine_type,
            topology=topology,
            status="PROVISIONING",
            spot=spot,
            accelerator=accelerator,
            zone=self.zone,
            labels=owner_labels,
        )
        self.gke.put_node_pool(self.project, self.location, self.cluster, pool)
        self._pools[name] = _Pool(shape, jobset, tpu_slice)
        return shape

    def add_nodes(self, pool: str, n: int = 1, ready: bool = True) -> list[str]:
        """Register ``n`` more nodes; the pool turns RUNNING when its last node registers."""
        state = self._pool(pool)
        if n < 1:
            raise FleetError(f"cannot add {n} nodes")
        if len(state.nodes) + n > state.shape.nodes:
            raise FleetError(
                f"node pool {pool} has {len(state.nodes)} of {state.shape.nodes} nodes; "
                f"cannot add {n}"
            )
        now = self.now()
        first = state.created
        state.created += n
        names = [gke_node_name(self.cluster, pool, i) for i in range(first, state.created)]
        self.kube.create_many(
            (self._node(pool, state, node, "True" if ready else "False", now) for node in names),
            copy=False,
        )
        state.nodes += names
        if len(state.nodes) == state.shape.nodes and self.pool_status(pool) == "PROVISIONING":
            self.set_pool_status(pool, "RUNNING")
        return names

    def set_node_ready(self, node: str, status: str) -> None:
        """Set a node's ``Ready`` condition to "True", "False" or "Unknown"."""
        current = self.kube.get("Node", node)
        conditions = objects.with_ready(current["status"].get("conditions", []), status, self.now())
        self.kube.patch_status("Node", node, {"conditions": conditions})

    def set_pool_status(self, pool: str, status: str, message: str = "") -> None:
        """Set the pool's GKE status (a ``NodePool.Status`` name) and status message."""
        self._pool(pool)
        self.gke.set_status(self.project, self.location, self.cluster, pool, status, message)

    def fail_pool(self, pool: str, message: str = STOCKOUT) -> None:
        """GKE gives up on the pool: status ERROR; its nodes stay as they are."""
        self.set_pool_status(pool, "ERROR", message)

    def interrupt_pool(self, pool: str, nodes: int = 1, status: str = "False") -> list[str]:
        """The first ``nodes`` ready nodes of the pool stop being ready; returns their names.

        GKE keeps reporting the pool RUNNING, as it does while it repairs a host.
        """
        ready = [n for n in self._pool(pool).nodes if self._ready_status(n) == labels.TRUE]
        if len(ready) < nodes:
            raise FleetError(f"node pool {pool} has only {len(ready)} ready nodes")
        for node in ready[:nodes]:
            self.set_node_ready(node, status)
        return ready[:nodes]

    def maintain_pool(self, pool: str, nodes: int = 1) -> list[str]:
        """GKE host maintenance: ``cloud.google.com/active-node-maintenance=ONGOING`` on the
        first ``nodes`` ready nodes, which then stop being ready (megamon: ``maintenance``)."""
        chosen = self._ready_nodes(pool, nodes)
        for node in chosen:
            active = {labels.ACTIVE_NODE_MAINTENANCE: labels.MAINTENANCE_ONGOING}
            self.kube.patch("Node", node, {"metadata": {"labels": active}})
            self.set_node_ready(node, "False")
        return chosen

    def upgrade_pool(self, pool: str, nodes: int = 1) -> list[str]:
        """A node upgrade: the pool RECONCILING, nodes cordoned and drained (``upgrade``)."""
        chosen = self._ready_nodes(pool, nodes)
        self.set_pool_status(pool, "RECONCILING")
        for node in chosen:
            self.kube.patch("Node", node, {"spec": {"unschedulable": True}})
            self.set_node_ready(node, "False")
        return chosen

    def preempt_pool(self, pool: str, nodes: int = 1) -> list[str]:
        """Spot preemption: the first ``nodes`` nodes tainted for termination, then gone
        (``preemption`` on a spot pool, ``node-lost`` on another)."""
        state = self._pool(pool)
        chosen = state.nodes[:nodes]
        taint = {"key": labels.TAINT_IMPENDING_NODE_TERMINATION, "effect": "NoSchedule"}
        for node in chosen:
            self.kube.patch("Node", node, {"spec": {"taints": [taint]}})
        self._delete_pods_on(set(chosen))
        for node in chosen:
            self.kube.delete("Node", node)
        state.nodes = state.nodes[nodes:]
        return chosen

    def restart_jobset(self, name: str, namespace: str) -> None:
        """The JobSet controller restarts it: ``status.restarts`` + 1, nothing ready."""
        self._jobset(name, namespace).restarts += 1
        self.set_jobset_ready(name, namespace, 0)

    def _ready_nodes(self, pool: str, nodes: int) -> list[str]:
        ready = [n for n in self._pool(pool).nodes if self._ready_status(n) == labels.TRUE]
        if len(ready) < nodes:
            raise FleetError(f"node pool {pool} has only {len(ready)} ready nodes")
        return ready[:nodes]

    def recover_pool(self, pool: str) -> None:
        """Make the pool whole: missing nodes registered, every node ready and schedulable
        with no maintenance label, status RUNNING."""
        state = self._pool(pool)
        for node in state.nodes:
            cleared = {"metadata": {"labels": {labels.ACTIVE_NODE_MAINTENANCE: None}},
                       "spec": {"unschedulable": None, "taints": None}}  # fmt: skip
            self.kube.patch("Node", node, cleared)
            if self._ready_status(node) != labels.TRUE:
                self.set_node_ready(node, labels.TRUE)
        missing = state.shape.nodes - len(state.nodes)
        if missing:
            self.add_nodes(pool, missing)
        self.set_pool_status(pool, "RUNNING")

    def stop_pool(self, pool: str) -> None:
        """Start deleting the pool: GKE STOPPING, its nodes and the pods on them removed."""
        state = self._pool(pool)
        self.set_pool_status(pool, "STOPPING")
        self._delete_pods_on(set(state.nodes))
        for node in state.nodes:
            self.kube.delete("Node", node)
        state.nodes.clear()

    def remove_pool(self, pool: str) -> None:
        """Finish deleting the pool: GKE no longer lists it."""
        self._pool(pool)
        self.gke.delete_node_pool(self.project, self.location, self.cluster, pool)
        del self._pools[pool]

    def delete_pool(self, pool: str) -> None:
        """Delete the pool at once: STOPPING, nodes removed, pool removed."""
        self.stop_pool(pool)
        self.remove_pool(pool)

    # -- JobSets ------------------------------------------------------------------------------

    def create_jobset(
        self,
        name: str,
        namespace: str,
        pool_or_shape: PoolOrShape,
        replicas: int = 1,
        *,
        parallelism: int | None = None,
    ) -> str:
        """A running JobSet (no replica ready yet) and one Job per replica; returns its UID."""
        key = (namespace, name)
        if key in self._jobsets:
            raise FleetError(f"JobSet {namespace}/{name} already exists")
        shape, pools = self._placement(pool_or_shape)
        spec = objects.jobset(
            name,
            namespace,
            shape=shape,
            replicas=replicas,
            parallelism=parallelism,
            since=self.now(),
        )
        uid = str(self.kube.create(spec)["metadata"]["uid"])
        workload = _Workload(shape, replicas, pools, parallelism, uid)
        for index in range(replicas):
            child = objects.job(
                name, namespace, index=index, shape=shape, parallelism=parallelism, jobset_uid=uid
            )
            workload.job_uids.append(str(self.kube.create(child)["metadata"]["uid"]))
        self._jobsets[key] = workload
        return uid

    def set_jobset_ready(self, name: str, namespace: str, ready: int | None = None) -> None:
        """``ready`` replicas (default: all) ready; their leader pods bound to their pools."""
        workload = self._jobset(name, namespace)
        count = workload.replicas if ready is None else ready
        if not 0 <= count <= workload.replicas:
            raise FleetError(f"JobSet {namespace}/{name} has {workload.replicas} replicas")
        status = objects.jobset_status(
            replicas=workload.replicas, ready=count, since=self.now(), restarts=workload.restarts
        )
        self.kube.patch_status("JobSet", name, status, namespace)
        pods = workload.parallelism or workload.shape.nodes
        for index in range(workload.replicas):
            is_ready = index < count
            job_status = objects.job_status(pods=pods, ready=pods if is_ready else 0)
            self.kube.patch_status("Job", objects.job_name(name, index), job_status, namespace)
            if is_ready:
                self._ensure_leader(name, namespace, workload, index)
            else:
                self._drop_leader(namespace, workload, index)

    def complete_jobset(self, name: str, namespace: str) -> None:
        """Every Job succeeded: ``Completed``, a planned end."""
        self._end_jobset(name, namespace, labels.JOBSET_COMPLETED, objects.JOB_COMPLETE)

    def fail_jobset(self, name: str, namespace: str) -> None:
        """A Job failed past its restart budget: ``Failed``."""
        self._end_jobset(name, namespace, labels.JOBSET_FAILED, objects.JOB_FAILED)

    def suspend_jobset(self, name: str, namespace: str) -> None:
        """``spec.suspend`` set: the Jobs are suspended, the leader pods deleted."""
        workload = self._jobset(name, namespace)
        self.kube.patch("JobSet", name, {"spec": {"suspend": True}}, namespace)
        for index in range(workload.replicas):
            self.kube.patch(
                "Job", objects.job_name(name, index), {"spec": {"suspend": True}}, namespace
            )
            self._drop_leader(namespace, workload, index)
        self._end_jobset(name, namespace, labels.JOBSET_SUSPENDED, objects.JOB_SUSPENDED)

    def preempt_jobset(self, name: str, namespace: str, queue: str = "tpu-queue") -> None:
        """Kueue preempts the JobSet: it is in a queue (``kueue.x-k8s.io/queue-name``) and
        Kueue sets ``spec.suspend``, which the JobSet controller reports as for any
        suspension (``Suspended``, ``SuspendedJobs``, "jobset is suspended"); only Kueue's
        Workload says preemption (megamon: ``suspended``)."""
        self._jobset(name, namespace)
        queued = {"metadata": {"labels": {KUEUE_QUEUE_NAME: queue}}}
        self.kube.patch("JobSet", name, queued, namespace)
        self.suspend_jobset(name, namespace)

    def delete_jobset(self, name: str, namespace: str) -> None:
        """The JobSet is deleted, and with it its Jobs and their pods."""
        workload = self._jobset(name, namespace)
        for index in range(workload.replicas):
            self._drop_leader(namespace, workload, index)
            self.kube.delete("Job", objects.job_name(name, index), namespace)
        self.kube.delete("JobSet", name, namespace)
        del self._jobsets[(namespace, name)]

    def _end_jobset(self, name: str, namespace: str, terminal: str, job_outcome: str) -> None:
        workload = self._jobset(name, namespace)
        now = self.now()
        status = objects.jobset_status(
            replicas=workload.replicas,
            ready=0,
            since=now,
            terminal=terminal,
            restarts=workload.restarts,
        )
        self.kube.patch_status("JobSet", name, status, namespace)
        pods = workload.parallelism or workload.shape.nodes
        job_status = objects.job_status(pods=pods, ready=0, since=now, outcome=job_outcome)
        phase = "Succeeded" if terminal == labels.JOBSET_COMPLETED else "Failed"
        for index in range(workload.replicas):
            self.kube.patch_status("Job", objects.job_name(name, index), job_status, namespace)
            if index in workload.leaders:
                self.kube.patch_status("Pod", workload.leaders[index], {"phase": phase}, namespace)

    def _ensure_leader(self, name: str, namespace: str, workload: _Workload, index: int) -> None:
        if index in workload.leaders or not workload.pools:
            return
        nodes = self._pool(workload.pools[index % len(workload.pools)]).nodes
        if not nodes:
            return  # nothing to bind to yet
        pod = objects.leader_pod(
            name,
            namespace,
            index=index,
            node_name=nodes[0],
            shape=workload.shape,
            job_uid=workload.job_uids[index],
        )
        workload.leaders[index] = str(self.kube.create(pod)["metadata"]["name"])

    def _drop_leader(self, namespace: str, workload: _Workload, index: int) -> None:
        pod = workload.leaders.pop(index, None)
        if pod is not None:
            self.kube.delete("Pod", pod, namespace)

    # -- LeaderWorkerSets ---------------------------------------------------------------------

    def create_lws(
        self, name: str, namespace: str, pool_or_shape: PoolOrShape, replicas: int = 1
    ) -> str:
        """A LeaderWorkerSet of ``replicas`` groups, none ready yet; returns its UID."""
        key = (namespace, name)
        if key in self._lwss:
            raise FleetError(f"LeaderWorkerSet {namespace}/{name} already exists")
        shape, pools = self._placement(pool_or_shape)
        spec = objects.leader_worker_set(
            name, namespace, shape=shape, replicas=replicas, since=self.now()
        )
        uid = str(self.kube.create(spec)["metadata"]["uid"])
        self._lwss[key] = _Workload(shape, replicas, pools, uid=uid)
        return uid

    def set_lws_ready(self, name: str, namespace: str, ready: int | None = None) -> None:
        """``ready`` groups (default: all) ready."""
        workload = self._lws(name, namespace)
        count = workload.replicas if ready is None else ready
        if not 0 <= count <= workload.replicas:
            raise FleetError(f"LeaderWorkerSet {namespace}/{name} has {workload.replicas} replicas")
        status = objects.lws_status(replicas=workload.replicas, ready=count, since=self.now())
        self.kube.patch_status("LeaderWorkerSet", name, status, namespace)

    def delete_lws(self, name: str, namespace: str) -> None:
        self._lws(name, namespace)
        self.kube.delete("LeaderWorkerSet", name, namespace)
        del self._lwss[(namespace, name)]

    # -- Slices -------------------------------------------------------------------------------

    def create_slice(self, name: str, pool_or_shape: PoolOrShape, owner: Owner) -> None:
        """A Slice for ``owner`` (a JobSet or LWS), not ready yet."""
        if name in self._slices:
            raise FleetError(f"Slice {name} already exists")
        shape, _ = self._placement(pool_or_shape)
        self.kube.create(objects.tpu_slice(name, shape=shape, owner=owner, since=self.now()))
        self._slices.add(name)

    def set_slice_ready(self, name: str, status: str = labels.TRUE) -> None:
        """Set the Slice's ``Ready`` condition ("True", "False" or "Unknown")."""
        self._slice(name)
        self.kube.patch_status("Slice", name, objects.slice_status(ready=status, since=self.now()))

    def fail_slice(self, name: str, message: str = SLICE_FAILURE) -> None:
        """The slice could not be created: ``SliceCreationFailed=True``, not ready."""
        self._slice(name)
        status = objects.slice_status(ready="False", since=self.now(), failure=message)
        self.kube.patch_status("Slice", name, status)

    def degrade_slice(self, name: str, message: str = SLICE_DEGRADED) -> None:
        """The slice's hardware fails under it: ``Ready=False`` with ``message`` (``error``)."""
        self._slice(name)
        status = objects.slice_status(ready="False", since=self.now(), degraded=message)
        self.kube.patch_status("Slice", name, status)

    def delete_slice(self, name: str) -> None:
        """The slice is gone (``node-lost`` while its owner runs)."""
        self._slice(name)
        self.kube.delete("Slice", name)
        self._slices.discard(name)

    # -- everything -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Delete every workload, slice and pool this fleet created (e.g. before a replay)."""
        for namespace, name in list(self._jobsets):
            self.delete_jobset(name, namespace)
        for namespace, name in list(self._lwss):
            self.delete_lws(name, namespace)
        for name in list(self._slices):
            self.delete_slice(name)
        for pool in list(self._pools):
            self.delete_pool(pool)

    # -- helpers --------------------------------------------------------------------------------

    def _pool(self, pool: str) -> _Pool:
        try:
            return self._pools[pool]
        except KeyError:
            raise FleetError(f"no node pool {pool}") from None

    def _jobset(self, name: str, namespace: str) -> _Workload:
        return _lookup(self._jobsets, "JobSet", name, namespace)

    def _lws(self, name: str, namespace: str) -> _Workload:
        return _lookup(self._lwss, "LeaderWorkerSet", name, namespace)

    def _slice(self, name: str) -> None:
        if name not in self._slices:
            raise FleetError(f"no Slice {name}")

    def _placement(self, pool_or_shape: PoolOrShape) -> tuple[TpuShape, tuple[str, ...]]:
        if isinstance(pool_or_shape, TpuShape):
            return pool_or_shape, ()
        pools = (pool_or_shape,) if isinstance(pool_or_shape, str) else tuple(pool_or_shape)
        if not pools:
            raise FleetError("a workload needs a shape or at least one node pool")
        shapes = {self._pool(pool).shape for pool in pools}
        if len(shapes) != 1:
            raise FleetError(f"node pools {', '.join(pools)} have different TPU shapes")
        return shapes.pop(), pools

    def _delete_pods_on(self, nodes: set[str]) -> None:
        """Delete the pods bound to ``nodes`` (the pod garbage collector's job for lost nodes)."""
        deleted: set[tuple[str, str]] = set()
        for pod in self.kube.list("Pod"):
            if pod["spec"].get("nodeName") in nodes:
                namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
                self.kube.delete("Pod", name, namespace)
                deleted.add((namespace, name))
        for (namespace, _), workload in self._jobsets.items():
            workload.leaders = {
                index: pod
                for index, pod in workload.leaders.items()
                if (namespace, pod) not in deleted
            }

    def _ready_status(self, node: str) -> str | None:
        conditions = self.kube.get("Node", node)["status"].get("conditions", [])
        ready = [c for c in conditions if c.get("type") == labels.CONDITION_READY]
        return str(ready[0]["status"]) if ready else None

    def _node(self, pool: str, state: _Pool, name: str, ready: str, now: str) -> objects.Obj:
        return objects.tpu_node(
            name,
            pool=pool,
            shape=state.shape,
            zone=self.zone,
            ready=ready,
            ready_since=now,
            project=self.project,
            jobset=state.jobset,
            tpu_slice=state.tpu_slice,
            realistic=self.realistic_nodes,
        )


def _lookup(
    table: dict[tuple[str, str], _Workload], kind: str, name: str, namespace: str
) -> _Workload:
    try:
        return table[(namespace, name)]
    except KeyError:
        raise FleetError(f"no {kind} {namespace}/{name}") from None
