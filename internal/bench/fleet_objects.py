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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from internal.fakegke import tpu_node_pool
from internal.fleet import objects
from internal.fleet.nodes import gke_node_name, tpu_node
from internal.fleet.shapes import TpuShape
from megamon.domain import labels

Obj = dict[str, Any]

PROJECT = "megamon-bench"
LOCATION = "us-east5"
ZONE = "us-east5-b"
CLUSTER = "bench"
SINCE = "2026-05-01T00:00:00Z"
NAMESPACES = 20


@dataclass(frozen=True)
class Size:
    name: str
    nodes: int
    pools: int
    jobsets: int


SIZES: dict[str, Size] = {
    "S": Size("S", 4_000, 250, 300),
    "M": Size("M", 16_000, 1_000, 1_200),
    "L": Size("L", 65_000, 4_000, 5_000),
}

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


def pools(size: Size) -> list[Pool]:
    result = []
    for i, n in enumerate(pool_sizes(size)):
        accelerator, machine, topologies = _FAMILIES[i % len(_FAMILIES)]
        shape = TpuShape(accelerator, machine, topologies[n], spot=i % 5 == 4)
        result.append(Pool(pool_name(i), shape, n))
    return result


def gke_pools(size: Size) -> Iterator[Obj]:
    """The node pools as GKE's REST API returns them."""
    for i, pool in enumerate(pools(size)):
        yield tpu_node_pool(
            pool.name,
            machine_type=pool.shape.machine_type,
            topology=pool.shape.topology,
            status="RUNNING",
            spot=pool.shape.spot,
            accelerator=pool.shape.accelerator,
            zone=ZONE,
            labels=_provisioner_labels(i) if i < size.jobsets else None,
        )


def _provisioner_labels(j: int) -> dict[str, str]:
    return {
        labels.PROVISIONER_JOBSET_NAMESPACE: jobset_namespace(j),
        labels.PROVISIONER_JOBSET_NAME: jobset_name(j),
    }


def nodes(size: Size) -> Iterator[Obj]:
    """Every node, pool by pool; the pool of JobSet ``j`` carries its provisioner labels."""
    for i, pool in enumerate(pools(size)):
        owner = (jobset_namespace(i), jobset_name(i)) if i < size.jobsets else None
        for name in pool.node_names():
            yield tpu_node(
                name,
                pool=pool.name,
                shape=pool.shape,
                zone=ZONE,
                ready_since=SINCE,
                project=PROJECT,
                jobset=owner,
                realistic=True,
            )


def workloads(size: Size) -> Iterator[Obj]:
    """Every JobSet and its leader pod (replica 0, completion index 0, bound to a node)."""
    all_pools = pools(size)
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
