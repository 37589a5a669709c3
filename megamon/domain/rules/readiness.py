"""Node readiness from the ``Ready`` condition, with a grace period for ``Unknown``.

A node whose kubelet stops reporting turns ``Unknown``. Briefly, that is a blip and the node
still counts (as unknown, see the upness threshold); a node that stays Unknown past the grace
period is lost and counts as not ready.
"""

from __future__ import annotations

from enum import Enum

DEFAULT_UNKNOWN_GRACE_NS = 180 * 1_000_000_000

CONDITION_TRUE = "True"
CONDITION_FALSE = "False"
CONDITION_UNKNOWN = "Unknown"


class Readiness(Enum):
    READY = "ready"
    NOT_READY = "not_ready"
    UNKNOWN = "unknown"


def node_readiness(
    ready_status: str | None,
    last_transition_ns: int | None,
    now_ns: int,
    grace_ns: int = DEFAULT_UNKNOWN_GRACE_NS,
) -> Readiness:
    """Readiness of a node whose ``Ready`` condition has this status and transition time.

    ``ready_status`` is ``None`` when the node has no ``Ready`` condition (a node still
    registering), which counts as unknown. An unrecognised status counts as not ready.
    """
    if ready_status is None:
        return Readiness.UNKNOWN
    if ready_status == CONDITION_TRUE:
        return Readiness.READY
    if ready_status == CONDITION_UNKNOWN:
        if last_transition_ns is None or now_ns - last_transition_ns < grace_ns:
            return Readiness.UNKNOWN
        return Readiness.NOT_READY
    return Readiness.NOT_READY
