"""Enum names and numbers of the GKE v1 NodePool message, for the integer enum encoding.

Why: the google-cloud-container REST transport asks for ``$alt=json;enum-encoding=int``, and
Google then sends enums as numbers (``"status": 2``) instead of names. Stored node pools keep
GKE's documented name form; this module rewrites the common enum fields to numbers on the way
out so the wire format matches what the real service sends to this client. Enum fields not
listed here stay as names, which the client's JSON parser accepts as well.

The numbers come from google/container/v1/cluster_service.proto; a test compares them with the
installed client's descriptors.
"""

from __future__ import annotations

import copy
from typing import Any

NODE_POOL_STATUS: dict[str, int] = {
    "STATUS_UNSPECIFIED": 0,
    "PROVISIONING": 1,
    "RUNNING": 2,
    "RUNNING_WITH_ERROR": 3,
    "RECONCILING": 4,
    "STOPPING": 5,
    "ERROR": 6,
}

_PLACEMENT_TYPE = {"TYPE_UNSPECIFIED": 0, "COMPACT": 1}
_LOCATION_POLICY = {"LOCATION_POLICY_UNSPECIFIED": 0, "BALANCED": 1, "ANY": 2}
_UPDATE_STRATEGY = {
    "NODE_POOL_UPDATE_STRATEGY_UNSPECIFIED": 0,
    "BLUE_GREEN": 2,
    "SURGE": 3,
    "SHORT_LIVED": 5,
}
_TAINT_EFFECT = {
    "EFFECT_UNSPECIFIED": 0,
    "NO_SCHEDULE": 1,
    "PREFER_NO_SCHEDULE": 2,
    "NO_EXECUTE": 3,
}
_RESERVATION_TYPE = {
    "UNSPECIFIED": 0,
    "NO_RESERVATION": 1,
    "ANY_RESERVATION": 2,
    "SPECIFIC_RESERVATION": 3,
    "ANY_RESERVATION_THEN_FAIL": 4,
}
_CONDITION_CODE = {
    "UNKNOWN": 0,
    "GCE_STOCKOUT": 1,
    "GKE_SERVICE_ACCOUNT_DELETED": 2,
    "GCE_QUOTA_EXCEEDED": 3,
    "SET_BY_OPERATOR": 4,
    "CLOUD_KMS_KEY_ERROR": 7,
    "CA_EXPIRING": 9,
    "NODE_SERVICE_ACCOUNT_MISSING_PERMISSIONS": 10,
    "CLOUD_KMS_KEY_DESTROYED": 11,
}
_RPC_CODE = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}

# JSON path (lists are walked transparently) -> enum name/number table.
ENUM_FIELDS: dict[tuple[str, ...], dict[str, int]] = {
    ("status",): NODE_POOL_STATUS,
    ("placementPolicy", "type"): _PLACEMENT_TYPE,
    ("autoscaling", "locationPolicy"): _LOCATION_POLICY,
    ("upgradeSettings", "strategy"): _UPDATE_STRATEGY,
    ("config", "taints", "effect"): _TAINT_EFFECT,
    ("config", "reservationAffinity", "consumeReservationType"): _RESERVATION_TYPE,
    ("conditions", "code"): _CONDITION_CODE,
    ("conditions", "canonicalCode"): _RPC_CODE,
}


def wants_int_enums(alt: str | None) -> bool:
    """Whether a ``$alt`` query value (e.g. ``json;enum-encoding=int``) asks for numbers."""
    if not alt:
        return False
    options = [part.strip() for part in alt.split(";")[1:]]
    return "enum-encoding=int" in options


def with_int_enums(node_pool: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``node_pool`` with every known enum name replaced by its number."""
    encoded = copy.deepcopy(node_pool)
    for path, table in ENUM_FIELDS.items():
        _encode_at(encoded, path, table)
    return encoded


def _encode_at(node: Any, path: tuple[str, ...], table: dict[str, int]) -> None:
    if isinstance(node, list):
        for item in node:
            _encode_at(item, path, table)
        return
    if not isinstance(node, dict) or path[0] not in node:
        return
    key, rest = path[0], path[1:]
    if rest:
        _encode_at(node[key], rest, table)
    elif isinstance(node[key], str) and node[key] in table:
        node[key] = table[node[key]]


def status_problem(status: object) -> str | None:
    """Why ``status`` is not a v1 NodePool.Status name, or ``None`` when it is one.

    A number that is not one of the table's (``"status": 99``) is accepted and sent as it
    is: it is what GKE sends for a status added after the client was built, which a client
    must survive."""
    if isinstance(status, str) and status in NODE_POOL_STATUS:
        return None
    if type(status) is int and status not in NODE_POOL_STATUS.values():
        return None
    hint = " (GKE reports a node pool being deleted as STOPPING)" if status == "DELETING" else ""
    return f"invalid node pool status {status!r}{hint}; expected one of {sorted(NODE_POOL_STATUS)}"
