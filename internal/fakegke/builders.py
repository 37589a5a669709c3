"""Builders of realistic GKE TPU node pools in REST JSON form.

Why: tests should describe a node pool in one line ("a v5e 16x16 spot slice that is
provisioning") and still hand the fake exactly what GKE would return for it, so that megamon's
parsing is exercised on the real field names and value shapes.
"""

from __future__ import annotations

import math
import re
from typing import Any

from internal.fakegke.enums import status_problem

DEFAULT_GKE_VERSION = "1.31.5-gke.1169000"

# TPU machine types end in the number of chips per VM: ct5lp-hightpu-4t, ct6e-standard-8t.
_CHIPS_PER_VM = re.compile(r"-(\d+)t$")


def tpu_node_pool(  # noqa: PLR0917 - positional defaults are the documented call style
    name: str,
    machine_type: str = "ct5lp-hightpu-4t",
    topology: str = "16x16",
    status: str = "RUNNING",
    spot: bool = False,
    accelerator: str = "tpu-v5-lite-podslice",
    node_count: int | None = None,
    *,
    status_message: str = "",
    zone: str | None = None,
    version: str = DEFAULT_GKE_VERSION,
    labels: dict[str, str] | None = None,
    policy: str = "",
) -> dict[str, Any]:
    """A TPU slice node pool as GKE's REST API returns it.

    ``node_count`` defaults to the number of VMs the slice needs: the chips of ``topology``
    divided by the chips per VM of ``machine_type`` (16x16 on ct5lp-hightpu-4t: 64 nodes).
    Fields that proto3 JSON omits when empty (``spot`` false, no ``statusMessage``) are omitted.
    With ``policy`` the pool is placed by that workload policy, as Ironwood (TPU7x) multi-host
    pools are: ``placementPolicy`` names it and carries no ``tpuTopology`` (``topology`` only
    sizes the pool; the policy, ``workload_policy``, holds it).
    """
    problem = status_problem(status)
    if problem is not None:
        raise ValueError(problem)
    config: dict[str, Any] = {
        "machineType": machine_type,
        "resourceLabels": {"goog-gke-accelerator-type": accelerator},
    }
    if spot:
        config["spot"] = True
    if labels:
        config["labels"] = dict(labels)
    pool: dict[str, Any] = {
        "name": name,
        "config": config,
        "initialNodeCount": nodes_for(machine_type, topology) if node_count is None else node_count,
        "placementPolicy": (
            {"policyName": policy} if policy else {"type": "COMPACT", "tpuTopology": topology}
        ),
        "management": {"autoRepair": True, "autoUpgrade": True},
        "version": version,
        "status": status,
    }
    if status_message:
        pool["statusMessage"] = status_message
    if zone:
        pool["locations"] = [zone]
    return pool


def tpu7x_node_pool(
    name: str, policy: str, topology: str = "2x2x2", status: str = "PROVISIONING", **kw: Any
) -> dict[str, Any]:
    """An Ironwood (TPU7x) multi-host pool placed by workload policy ``policy`` (of
    ``topology``), on tpu7x-standard-4t VMs, as ``gcloud container node-pools create
    --machine-type=tpu7x-standard-4t --placement-policy=POLICY`` makes it."""
    return tpu_node_pool(
        name,
        "tpu7x-standard-4t",
        topology,
        status,
        accelerator="tpu7x",
        policy=policy,
        **kw,
    )


def workload_policy(name: str, topology: str, kind: str = "HIGH_THROUGHPUT") -> dict[str, Any]:
    """A Compute Engine workload policy as ResourcePolicies.Get returns it (``gcloud compute
    resource-policies create workload-policy NAME --type=HIGH_THROUGHPUT
    --accelerator-topology=TOPOLOGY``); the store adds ``kind``, ``region``, ``selfLink``."""
    _topology_dims(topology)
    return {"name": name, "workloadPolicy": {"type": kind, "acceleratorTopology": topology}}


def nodes_for(machine_type: str, topology: str) -> int:
    """VMs in a slice of ``topology`` (e.g. ``2x2x4``) built from ``machine_type`` VMs."""
    match = _CHIPS_PER_VM.search(machine_type)
    if match is None:
        raise ValueError(f"cannot tell chips per VM of {machine_type!r}; pass node_count")
    chips = math.prod(_topology_dims(topology))
    return max(1, chips // int(match.group(1)))


def _topology_dims(topology: str) -> list[int]:
    try:
        dims = [int(part) for part in topology.split("x")]
    except ValueError:
        dims = []
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"invalid TPU topology {topology!r}; expected e.g. '16x16' or '2x2x4'")
    return dims
