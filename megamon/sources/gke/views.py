"""What megamon keeps of a GKE node pool, and the GKE status names it reasons about."""

from __future__ import annotations

from dataclasses import dataclass

STATUS_PROVISIONING = "PROVISIONING"
STATUS_RUNNING = "RUNNING"
STATUS_RUNNING_WITH_ERROR = "RUNNING_WITH_ERROR"
STATUS_RECONCILING = "RECONCILING"
STATUS_STOPPING = "STOPPING"
STATUS_DELETING = "DELETING"
STATUS_ERROR = "ERROR"
STATUS_DELETED = "DELETED"
"""megamon's, not GKE's: the status of the last observation of a pool GKE no longer lists
(it was deleted), recorded expected down before the pool is retired."""

EXPECTED_DOWN_STATUSES = frozenset({STATUS_STOPPING, STATUS_DELETING, STATUS_DELETED})
"""A pool being stopped or deleted is down on purpose: not an interruption."""
FAILED_STATUSES = frozenset({STATUS_ERROR, STATUS_RUNNING_WITH_ERROR})
"""GKE says the pool failed (to provision, or partly)."""


@dataclass(frozen=True, slots=True)
class NodePoolView:
    name: str
    status: str
    machine_type: str
    tpu_topology: str
    accelerator: str
    spot: bool
    status_message: str = ""
    placement_policy: str = ""
    """The resource policy GKE placed the pool with (``placementPolicy.policyName``): a
    workload policy, which holds the topology of an Ironwood (TPU7x) multi-host pool."""
    topology_problem: str = ""
    """Why the pool has no topology though it names a policy (the policy could not be read)."""
