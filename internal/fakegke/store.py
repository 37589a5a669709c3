"""Thread-safe in-memory state of the fake: clusters and their node pools.

Why: the HTTP handler threads and the test thread (through the Python API) read and write the
same node pools concurrently, so every access goes through one lock and hands out deep copies;
a test can never mutate served state by accident, and a reply is never half-updated.

Node pools are stored in GKE's REST JSON shape (camelCase, enums as names), exactly as a test
supplied them plus the fields GKE always fills in (``name``, ``selfLink``). A cluster exists as
soon as it is created or a node pool is put into it, and is never removed (GKE clusters outlive
their pools).
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from typing import Any

from internal.fakegke.enums import status_problem
from internal.fakegke.errors import ApiError, invalid_argument, not_found

JsonObject = dict[str, Any]

SELF_LINK_BASE = "https://container.googleapis.com/v1"
COMPUTE_LINK_BASE = "https://www.googleapis.com/compute/v1"


@dataclass(frozen=True)
class ClusterRef:
    """Identifies a cluster; ``location`` is a region or a zone, as in GKE."""

    project: str
    location: str
    cluster: str

    @property
    def resource(self) -> str:
        """The resource name, e.g. ``projects/p/locations/l/clusters/c``."""
        return f"projects/{self.project}/locations/{self.location}/clusters/{self.cluster}"

    def node_pool_resource(self, name: str) -> str:
        """The resource name of node pool ``name`` in this cluster."""
        return f"{self.resource}/nodePools/{name}"


def check_status(status: object) -> str:
    """Return ``status`` if it is a v1 NodePool.Status name, else raise a 400 ``ApiError``."""
    problem = status_problem(status)
    if problem is not None:
        raise invalid_argument(problem)
    return str(status)


class NodePoolStore:
    """Clusters and node pools, in insertion order, guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clusters: dict[ClusterRef, dict[str, JsonObject]] = {}

    def create_cluster(self, ref: ClusterRef) -> None:
        """A cluster with no node pool yet (listing it answers no pools, not 404)."""
        with self._lock:
            self._clusters.setdefault(ref, {})

    def put(self, ref: ClusterRef, name: str, node_pool: JsonObject) -> JsonObject:
        """Create or replace node pool ``name`` (which overrides any name in the body)."""
        stored = _normalised(ref, name, node_pool)
        with self._lock:
            self._clusters.setdefault(ref, {})[name] = stored
            return copy.deepcopy(stored)

    def delete(self, ref: ClusterRef, name: str) -> None:
        """Remove node pool ``name``; 404 if the cluster or the pool is unknown."""
        with self._lock:
            pools = self._pools(ref)
            if name not in pools:
                raise not_found(ref.node_pool_resource(name))
            del pools[name]

    def get(self, ref: ClusterRef, name: str) -> JsonObject:
        """A copy of node pool ``name``; 404 if the cluster or the pool is unknown."""
        with self._lock:
            pool = self._pools(ref).get(name)
            if pool is None:
                raise not_found(ref.node_pool_resource(name))
            return copy.deepcopy(pool)

    def list(self, ref: ClusterRef) -> list[JsonObject]:
        """Copies of the cluster's node pools in creation order; 404 if the cluster is unknown."""
        with self._lock:
            return [copy.deepcopy(pool) for pool in self._pools(ref).values()]

    def set_status(self, ref: ClusterRef, name: str, status: str, message: str) -> JsonObject:
        """Set ``status`` and ``statusMessage`` (omitted when empty, as GKE omits it)."""
        check_status(status)
        with self._lock:
            pool = self._pools(ref).get(name)
            if pool is None:
                raise not_found(ref.node_pool_resource(name))
            pool["status"] = status
            if message:
                pool["statusMessage"] = message
            else:
                pool.pop("statusMessage", None)
            return copy.deepcopy(pool)

    def _pools(self, ref: ClusterRef) -> dict[str, JsonObject]:
        pools = self._clusters.get(ref)
        if pools is None:
            raise not_found(ref.resource)
        return pools


def _normalised(ref: ClusterRef, name: str, node_pool: object) -> JsonObject:
    if not isinstance(node_pool, dict):
        raise invalid_argument("a node pool must be a JSON object")
    if not name or "/" in name:
        raise invalid_argument(f"invalid node pool name {name!r}")
    stored: JsonObject = copy.deepcopy(node_pool)
    stored["name"] = name
    stored.setdefault("selfLink", f"{SELF_LINK_BASE}/{ref.node_pool_resource(name)}")
    if "status" in stored:
        check_status(stored["status"])
    return stored


@dataclass(frozen=True)
class PolicyRef:
    """Identifies a Compute Engine resource policy (regional, as workload policies are)."""

    project: str
    region: str
    name: str

    @property
    def resource(self) -> str:
        """``projects/p/regions/r/resourcePolicies/n``."""
        return f"projects/{self.project}/regions/{self.region}/resourcePolicies/{self.name}"


class ResourcePolicyStore:
    """Compute Engine resource policies (the workload policies TPU7x pools name), one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._policies: dict[PolicyRef, JsonObject] = {}

    def put(self, ref: PolicyRef, policy: JsonObject) -> JsonObject:
        """Create or replace ``ref`` with the fields Compute always fills in."""
        if not isinstance(policy, dict):
            raise invalid_argument("a resource policy must be a JSON object")
        if not ref.name or "/" in ref.name:
            raise invalid_argument(f"invalid resource policy name {ref.name!r}")
        stored: JsonObject = copy.deepcopy(policy)
        stored["name"] = ref.name
        stored.setdefault("kind", "compute#resourcePolicy")
        stored.setdefault(
            "region", f"{COMPUTE_LINK_BASE}/projects/{ref.project}/regions/{ref.region}"
        )
        stored.setdefault("selfLink", f"{COMPUTE_LINK_BASE}/{ref.resource}")
        stored.setdefault("status", "READY")
        with self._lock:
            self._policies[ref] = stored
            return copy.deepcopy(stored)

    def get(self, ref: PolicyRef) -> JsonObject:
        """A copy of the policy; 404 worded as Compute Engine words it."""
        with self._lock:
            policy = self._policies.get(ref)
            if policy is None:
                raise ApiError(404, f"The resource '{ref.resource}' was not found")
            return copy.deepcopy(policy)

    def delete(self, ref: PolicyRef) -> None:
        """Remove the policy; 404 if unknown."""
        with self._lock:
            if self._policies.pop(ref, None) is None:
                raise ApiError(404, f"The resource '{ref.resource}' was not found")
