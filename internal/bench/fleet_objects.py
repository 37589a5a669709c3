"""The benchmark fleet: N realistic TPU nodes in P node pools, J JobSets with leader pods.

Why: the scale benchmark must measure megamon against what a 65,000-node GKE cluster serves,
and every process of a run (the emulators, the measured children) must agree on one fleet
without shipping it between them. Everything here is derived from the size alone, so two
processes that build the same size build the same objects.

The shape of the fleet:
- node pools of 4, 8, 16, 32 or 64 nodes (v5e, v6e and v5p slices, every fifth one spot),
  mostly 16, sized so that the pools hold exactly N nodes; every pool RUNNING and full;
- nodes are ``realistic=True`` GKE TPU nodes (~9 KB of JSON each), all Ready;
- JobSet ``j`` < P runs on pool ``j`` (one replica of the pool's shape, ready): the pool was
  created for it, so its nodes carry the TPU provisioner's JobSet labels; JobSets beyond P
  have Completed and their leader pods (Succeeded) linger on a node of pool ``j mod P``, as
  finished pods do until they are collected.

The ``L+huge`` case is the L fleet plus two huge slices, each with the JobSet the TPU
provisioner created it for (running, every replica ready): a 1,536-node v5p pool (16x16x24)
and a 2,304-node Ironwood (TPU7x) pool (16x24x24), placed by a workload policy as GKE makes
TPU7x multi-host pools (no ``tpuTopology``; the policy, ``resource_policies``, holds it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from internal.fakegke import tpu7x_node_pool, tpu_node_pool, workload_policy
from internal.fleet import objects
from internal.fleet.nodes import gke_node_name, tpu_node
from internal.fleet.shapes import TpuShape
from megamon.domain import labels

Obj = dict[str, Any]

PROJECT = "megamon-bench"
LOCATION = "us-east5"
REGION = "us-east5"
"""Of the cluster and its workload policies."""
ZONE = "us-east5-b"
CLUSTER = "bench"
SINCE = "2026-05-01T00:00:00Z"
NAMESPACES = 20


@dataclass(frozen=True)
class HugePool:
    """One huge slice beside the regular pools, and the JobSet created for it."""

    name: str
    shape: TpuShape
    policy: str = ""
    """The workload policy that places it (TPU7x); "" for a pool with a ``tpuTopology``."""

    @property
    def jobset(self) -> str:
        return f"train-{self.name}"


HUGE = (
    HugePool("huge-v5p", TpuShape("tpu-v5p-slice", "ct5p-hightpu-4t", "16x16x24")),
    HugePool(
        "huge-tpu7x",
        TpuShape("tpu7x", "tpu7x-standard-4t", "16x24x24"),
        policy="wp-tpu7x-16x24x24",
    ),
)
"""1,536 and 2,304 nodes."""


@dataclass(frozen=True)
class Size:
    name: str
    nodes: int
    """Nodes of the regular pools (the huge ones come on top: ``total_nodes``)."""
    pools: int
    jobsets: int
    huge: tuple[HugePool, ...] = ()

    @property
    def total_nodes(self) -> int:
        return self.nodes + sum(pool.shape.nodes for pool in self.huge)

    @property
    def total_pools(self) -> int:
        return self.pools + len(self.huge)

    @property
    def total_jobsets(self) -> int:
        return self.jobsets + len(self.huge)


SIZES: dict[str, Size] = {
    "S": Size("S", 4_000, 250, 300),
    "M": Size("M", 16_000, 1_000, 1_200),
    "L": Size("L", 65_000, 4_000, 5_000),
    "L+huge": Size("L+huge", 65_000, 4_000, 5_000, HUGE),
    "S+huge": Size("S+huge", 4_000, 250, 300, HUGE),
}
"""``S+huge`` is for the benchmark's own test: the huge pools' check at a size it can run."""

# Topology of a slice of n nodes (4 chips a VM) per accelerator family.
_2D = {4: "4x4", 8: "4x8", 16: "8x8", 32: "8x16", 64: "16x16"}
_3D = {4: "2x2x4", 8: "2x4x4", 16: "4x4x4", 32: "4x4x8", 64: "4x8x8"}
_FAMILIES = (
    ("tpu-v5-lite-podslice", "ct5lp-hightpu-4t", _2D),
    ("tpu-v6e-slice", "ct6e-standard-4t", _2D),
    ("tpu-v5p-slice", "ct5p-hightpu-4t", _3D),
)
_PATTERN = (16, 16, 4, 16, 8, 16, 64, 16, 16, 4, 8, 16)
_STEPS = ((16, 64), (16, 32), (4, 16), (8, 16), (4, 8), (16, 4), (16, 8), (8, 4))
"""Pool resizes (from, to) that bring the node total to N, tried largest change first."""


def pool_sizes(size: Size) -> list[int]:
    """Nodes of each pool: the pattern, then resized until they add up to ``size.nodes``."""
    if size.nodes % 4 or not 4 * size.pools <= size.nodes <= 64 * size.pools:
        raise ValueError(f"{size.nodes} nodes cannot fill {size.pools} pools of 4 to 64")
    sizes = [_PATTERN[i % len(_PATTERN)] for i in range(size.pools)]
    diff = size.nodes - sum(sizes)
    while diff:
        for old, new in sorted(_STEPS, key=lambda s: -abs(s[1] - s[0])):
            change = new - old
            if change * diff > 0 and abs(change) <= abs(diff) and old in sizes:
                sizes[sizes.index(old)] = new
                diff -= change
                break
        else:
            raise ValueError(f"cannot size {size.pools} pools to {size.nodes} nodes")
    return sizes


def pool_name(i: int) -> str:
    return f"tpu-pool-{i:05d}"


def jobset_name(j: int) -> str:
    return f"train-{j:05d}"


def jobset_namespace(j: int) -> str:
    return f"team-{j % NAMESPACES:02d}"


@dataclass(frozen=True)
class Pool:
    name: str
    shape: TpuShape
    nodes: int

    def node_names(self) -> list[str]:
        return [gke_node_name(CLUSTER, self.name, k) for k in range(self.nodes)]


def regular_pools(size: Size) -> list[Pool]:
    result = []
    for i, n in enumerate(pool_sizes(size)):
        accelerator, machine, topologies = _FAMILIES[i % len(_FAMILIES)]
        shape = TpuShape(accelerator, machine, topologies[n], spot=i % 5 == 4)
        result.append(Pool(pool_name(i), shape, n))
    return result


def pools(size: Size) -> list[Pool]:
    """The regular pools, then the huge ones."""
    huge = [Pool(pool.name, pool.shape, pool.shape.nodes) for pool in size.huge]
    return [*regular_pools(size), *huge]


def owner(size: Size, i: int) -> tuple[str, str] | None:
    """(namespace, name) of the JobSet pool ``i`` was created for, if any."""
    if i >= size.pools:
        return jobset_namespace(i), size.huge[i - size.pools].jobset
    return (jobset_namespace(i), jobset_name(i)) if i < size.jobsets else None


def gke_pools(size: Size) -> Iterator[Obj]:
    """The node pools as GKE's REST API returns them."""
    for i, pool in enumerate(pools(size)):
        created_for = owner(size, i)
        common: dict[str, Any] = {
            "spot": pool.shape.spot,
            "zone": ZONE,
            "labels": _provisioner_labels(*created_for) if created_for else None,
        }
        policy = size.huge[i - size.pools].policy if i >= size.pools else ""
        if policy:
            yield tpu7x_node_pool(pool.name, policy, pool.shape.topology, "RUNNING", **common)
            continue
        yield tpu_node_pool(
            pool.name,
            machine_type=pool.shape.machine_type,
            topology=pool.shape.topology,
            status="RUNNING",
            accelerator=pool.shape.accelerator,
            **common,
        )


def resource_policies(size: Size) -> Iterator[Obj]:
    """The workload policies of the huge TPU7x pools, as Compute Engine returns them."""
    for pool in size.huge:
        if pool.policy:
            yield workload_policy(pool.policy, pool.shape.topology)


def _provisioner_labels(namespace: str, name: str) -> dict[str, str]:
    return {
        labels.PROVISIONER_JOBSET_NAMESPACE: namespace,
        labels.PROVISIONER_JOBSET_NAME: name,
    }


def nodes(size: Size) -> Iterator[Obj]:
    """Every node, pool by pool; the pool of a JobSet carries its provisioner labels."""
    for i, pool in enumerate(pools(size)):
        created_for = owner(size, i)
        for name in pool.node_names():
            yield tpu_node(
                name,
                pool=pool.name,
                shape=pool.shape,
                zone=ZONE,
                ready_since=SINCE,
                project=PROJECT,
                jobset=created_for,
                realistic=True,
            )


def workloads(size: Size) -> Iterator[Obj]:
    """Every JobSet and its leader pod (replica 0, completion index 0, bound to a node)."""
    all_pools = regular_pools(size)
    for j in range(size.jobsets):
        pool = all_pools[j % len(all_pools)]
        running = j < len(all_pools)
        name, namespace = jobset_name(j), jobset_namespace(j)
        jobset = objects.jobset(name, namespace, shape=pool.shape, since=SINCE)
        if running:
            jobset["status"] = objects.jobset_status(replicas=1, ready=1, since=SINCE)
        else:
            jobset["status"] = objects.jobset_status(
                replicas=1, ready=0, since=SINCE, terminal=labels.JOBSET_COMPLETED
            )
        yield jobset
        node = gke_node_name(CLUSTER, pool.name, (j // len(all_pools)) % pool.nodes)
        yield objects.leader_pod(
            name,
            namespace,
            index=0,
            node_name=node,
            shape=pool.shape,
            phase="Running" if running else "Succeeded",
        )
    for i, pool in enumerate(size.huge, start=size.pools):
        namespace = jobset_namespace(i)
        jobset = objects.jobset(pool.jobset, namespace, shape=pool.shape, since=SINCE)
        jobset["status"] = objects.jobset_status(replicas=1, ready=1, since=SINCE)
        yield jobset
        yield objects.leader_pod(
            pool.jobset,
            namespace,
            index=0,
            node_name=gke_node_name(CLUSTER, pool.name, 0),
            shape=pool.shape,
            phase="Running",
        )


def flip_orders(size: Size) -> list[list[str]]:
    """The node names ``flipped`` picks from, one list per part of the fleet: the regular
    pools' nodes, then (``L+huge``) the huge pools'. Taken apart, the regular pools see the
    very churn of the size without huge slices (the stride pattern depends on the length of
    the list) and the huge pools ``share`` of their own nodes."""
    regular = sorted(name for pool in regular_pools(size) for name in pool.node_names())
    huge = sorted(name for pool in pools(size)[size.pools :] for name in pool.node_names())
    return [regular, huge] if huge else [regular]


def flipped(node_names: list[str], cycle: int, share: float = 0.01) -> list[str]:
    """The nodes that are not Ready in ``cycle``: a different ``share`` of them each cycle.

    So each cycle ``share`` of the nodes go down and those of the cycle before come back;
    cycle 0 has every node Ready. The nodes are spread over the pools (a stride, not a block).
    """
    if cycle <= 0:
        return []
    count = max(1, int(len(node_names) * share))
    stride = 97  # prime, so consecutive picks land in different pools
    start = (cycle - 1) * count
    return [node_names[((start + k) * stride) % len(node_names)] for k in range(count)]
