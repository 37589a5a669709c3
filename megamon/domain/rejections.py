"""Why an object was skipped: the ``reason`` label of ``megamon_observation_errors_total``.

Every stage that refuses one object (a watch cache projecting Kubernetes JSON, the node pool
lister reading GKE's answer, an observer) names one of these, so that a dashboard can tell a
malformed object from a node pool GKE does not list from a bug in megamon, and a hostile
object never takes more than itself down.
"""

from __future__ import annotations

from dataclasses import dataclass

REASON_INVALID = "invalid"
"""A field megamon reads is missing, of the wrong type, or out of range (a topology, a
count, a timestamp beyond the horizon)."""
REASON_MALFORMED = "malformed"
"""Not even an object: a watch event or list item that is not a JSON object."""
REASON_UNKNOWN_NODEPOOL = "unknown_nodepool"
"""TPU nodes naming a node pool that GKE does not list."""
REASON_UNEXPECTED = "unexpected"
"""Reading the object raised an error megamon did not foresee; it is skipped, not fatal."""

REASONS = frozenset({REASON_INVALID, REASON_MALFORMED, REASON_UNKNOWN_NODEPOOL, REASON_UNEXPECTED})


@dataclass(frozen=True, slots=True)
class Rejection:
    """One object a source could not read: ``kind`` is the metric's label (``jobset``,
    ``node``, ``pod``, ...), ``subject`` names the object, ``message`` says what is wrong."""

    kind: str
    subject: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.subject}: {self.message}"
