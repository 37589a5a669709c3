"""Request routing of the fake: which path does what, free of any HTTP plumbing.

Why: keeping the API surface (what GKE answers) and the admin surface (how tests steer the
fake) as plain functions of (method, path, query, body) makes both easy to read side by side
with the REST reference and keeps the socket handler in ``server`` tiny.

API surface, as google-cloud-container's REST transport calls it:

* ``GET /v1/projects/{p}/locations/{l}/clusters/{c}/nodePools``        ListNodePools
* ``GET /v1/projects/{p}/locations/{l}/clusters/{c}/nodePools/{np}``   GetNodePool

The deprecated ``/v1/projects/{p}/zones/{z}/...`` forms are served the same way. Any other
``/v1/`` request gets 501 UNIMPLEMENTED, so a client using an RPC the fake lacks fails loudly.

And of Compute Engine, as google-cloud-compute's ``ResourcePoliciesClient`` (REST) calls it,
for the workload policies that hold an Ironwood (TPU7x) pool's topology:

* ``GET /compute/v1/projects/{p}/regions/{r}/resourcePolicies/{name}``   ResourcePolicies.Get

Set up with ``PUT``/``DELETE /admin/compute/v1/projects/{p}/regions/{r}/resourcePolicies/{name}``.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from internal.fakegke.enums import wants_int_enums, with_int_enums
from internal.fakegke.errors import ApiError, invalid_argument
from internal.fakegke.faults import Fault, FaultPlan, make_fault
from internal.fakegke.store import (
    ClusterRef,
    JsonObject,
    NodePoolStore,
    PolicyRef,
    ResourcePolicyStore,
)

Reply = tuple[int, JsonObject]

API_PREFIX = "/v1/"
COMPUTE_PREFIX = "/compute/v1/"
API_PREFIXES = (API_PREFIX, COMPUTE_PREFIX)
ADMIN_PREFIX = "/admin/"
FAULTS_PATH = "/admin/v1/faults"

_CLUSTER = r"projects/(?P<project>[^/]+)/{kind}/(?P<location>[^/]+)/clusters/(?P<cluster>[^/]+)"
_POOLS = r"/nodePools(?:/(?P<name>[^/]+))?$"
_API_POOLS = re.compile("^/v1/" + _CLUSTER.format(kind="(?:locations|zones)") + _POOLS)
_ADMIN_POOLS = re.compile("^/admin/v1/" + _CLUSTER.format(kind="locations") + _POOLS)

_POLICY = r"projects/(?P<project>[^/]+)/regions/(?P<region>[^/]+)/resourcePolicies/(?P<name>[^/]+)$"
_API_POLICY = re.compile("^/compute/v1/" + _POLICY)
_ADMIN_POLICY = re.compile("^/admin/compute/v1/" + _POLICY)

_FAULT_KEYS = {"status", "count", "latency_seconds", "path_prefix"}


def api_reply(
    method: str,
    path: str,
    query: dict[str, list[str]],
    store: NodePoolStore,
    policies: ResourcePolicyStore,
) -> Reply:
    """Answer one GKE (or Compute Engine resource policy) API request the way Google would."""
    if path.startswith(COMPUTE_PREFIX):
        return _policy_reply(method, path, policies)
    match = _API_POOLS.match(path)
    if method != "GET" or match is None:
        message = f"fakegke serves only ListNodePools and GetNodePool, not {method} {path}"
        raise ApiError(501, message)
    ref, name = _cluster_ref(match), _pool_name(match)
    int_enums = wants_int_enums(query.get("$alt", [None])[0])
    if name is None:
        pools = [with_int_enums(p) if int_enums else p for p in store.list(ref)]
        # proto3 JSON omits empty repeated fields: GKE sends {} for a cluster without pools.
        return 200, {"nodePools": pools} if pools else {}
    pool = store.get(ref, name)
    return 200, with_int_enums(pool) if int_enums else pool


def _policy_reply(method: str, path: str, policies: ResourcePolicyStore) -> Reply:
    match = _API_POLICY.match(path)
    if method != "GET" or match is None:
        message = f"fakegke serves only ResourcePolicies.Get of Compute, not {method} {path}"
        raise ApiError(501, message)
    return 200, policies.get(_policy_ref(match))


def admin_reply(
    method: str,
    path: str,
    body: bytes,
    store: NodePoolStore,
    faults: FaultPlan,
    *,
    policies: ResourcePolicyStore,
) -> Reply:
    """Answer one admin request (test set-up); admin requests are never subject to faults."""
    if path == FAULTS_PATH:
        return _faults_reply(method, body, faults)
    policy = _ADMIN_POLICY.match(path)
    if policy is not None:
        _require(method, {"GET", "PUT", "DELETE"}, path)
        ref = _policy_ref(policy)
        if method == "PUT":
            return 200, policies.put(ref, _json(body))
        if method == "DELETE":
            policies.delete(ref)
            return 200, {}
        return 200, policies.get(ref)
    match = _ADMIN_POOLS.match(path)
    if match is None:
        raise ApiError(404, f"no such admin resource: {path}")
    ref, name = _cluster_ref(match), _pool_name(match)
    if name is None:
        _require(method, {"GET"}, path)
        return 200, {"nodePools": store.list(ref)}
    _require(method, {"GET", "PUT", "DELETE"}, path)
    if method == "PUT":
        return 200, store.put(ref, name, _json(body))
    if method == "DELETE":
        store.delete(ref, name)
        return 200, {}
    return 200, store.get(ref, name)


def fault_message(status: int) -> str:
    """The message of an injected error; says it is injected so logs are not misleading."""
    return f"fakegke injected fault: HTTP {status}"


def _faults_reply(method: str, body: bytes, faults: FaultPlan) -> Reply:
    _require(method, {"GET", "POST", "DELETE"}, FAULTS_PATH)
    if method == "POST":
        spec = _json(body)
        unknown = set(spec) - _FAULT_KEYS
        if unknown:
            known = sorted(_FAULT_KEYS)
            raise invalid_argument(f"unknown fault fields {sorted(unknown)}; known: {known}")
        faults.add(
            make_fault(
                status=spec.get("status"),
                count=spec.get("count", 1),
                latency_seconds=spec.get("latency_seconds", 0.0),
                path_prefix=spec.get("path_prefix"),
            )
        )
    elif method == "DELETE":
        faults.clear()
    return 200, {"faults": [_fault_json(f) for f in faults.pending()]}


def _fault_json(fault: Fault) -> JsonObject:
    return {
        "status": fault.status,
        "count": fault.remaining,
        "latency_seconds": fault.latency_seconds,
        "path_prefix": fault.path_prefix,
    }


def _cluster_ref(match: re.Match[str]) -> ClusterRef:
    parts = (unquote(match.group(key)) for key in ("project", "location", "cluster"))
    return ClusterRef(*parts)


def _policy_ref(match: re.Match[str]) -> PolicyRef:
    parts = (unquote(match.group(key)) for key in ("project", "region", "name"))
    return PolicyRef(*parts)


def _pool_name(match: re.Match[str]) -> str | None:
    name = match.group("name")
    return None if name is None else unquote(name)


def _require(method: str, allowed: set[str], path: str) -> None:
    if method not in allowed:
        raise invalid_argument(f"{method} is not supported on {path}; use {sorted(allowed)}")


def _json(body: bytes) -> JsonObject:
    try:
        value = json.loads(body or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid_argument(f"request body is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise invalid_argument("request body must be a JSON object")
    return value
