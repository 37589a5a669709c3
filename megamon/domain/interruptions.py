"""Why a resource went down: the fixed set of reasons, and the pure rules that pick one.

A reason is decided from what megamon sees at the moment of the down transition — the node
pool's GKE status, the labels and taints GKE puts on the pool's nodes, the nodes' readiness,
a workload's ending condition and restart count, the node pools a JobSet or Slice runs on, a
Slice's conditions — and kept on the down event of the history (docs/metrics.md, "Reasons").
One rule per family of kinds: node pools, workloads (JobSets, LWS, described kinds), the
nodes of a JobSet, Slices. The set is small and fixed:
it becomes the ``reason`` label of the interruption histograms, so it must stay bounded.

GKE's interruption types ("Manage GKE node disruption for GPUs and TPUs") map onto it so:
host maintenance and node updates are ``maintenance`` (the ``active-node-maintenance`` label,
the ``maintenance-window-started`` and ``impending-node-termination`` taints), or ``upgrade``
when the pool reconciles with cordoned nodes; termination (auto-repair, host error) shows as
``node-lost`` / ``node-not-ready`` or, when GKE says so, ``error``; preemption (defragmentation
included) is ``preemption`` on spot pools whose nodes are terminated or gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

MAINTENANCE: Final = "maintenance"
UPGRADE: Final = "upgrade"
RECONCILING: Final = "reconciling"
ERROR: Final = "error"
PREEMPTION: Final = "preemption"
NODE_LOST: Final = "node-lost"
NODE_NOT_READY: Final = "node-not-ready"
NODEPOOL: Final = "nodepool"
FAILED: Final = "failed"
SUSPENDED: Final = "suspended"
RESTART: Final = "restart"
UNKNOWN: Final = "unknown"
STARTUP_TIMEOUT: Final = "startup-timeout"
"""A workload whose pods did not all become ready in time after it was admitted (Kueue's
``PodsReadyTimeout`` eviction): it is requeued, expected back."""

REASONS: Final = (
    MAINTENANCE,
    UPGRADE,
    RECONCILING,
    ERROR,
    PREEMPTION,
    NODE_LOST,
    NODE_NOT_READY,
    NODEPOOL,
    FAILED,
    SUSPENDED,
    RESTART,
    UNKNOWN,
    STARTUP_TIMEOUT,
)
"""Every reason, in docs/metrics.md order; nothing else is ever recorded or published. A
reason's place is its code in the history's flag byte (``events.reason_bits``): a new one is
appended, never inserted."""

NAMED_REASONS: Final = frozenset({PREEMPTION, NODE_LOST, NODE_NOT_READY, STARTUP_TIMEOUT})
"""The reasons a kind description may give a condition (``Interrupted``): what a workload's
controller can say of an interruption that it expects back from."""

MAX_DETAIL: Final = 256
"""A detail (GKE's status message, node pool names) is cut to this many characters."""

# What a node says about maintenance (``NodeView.maintenance``).
NODE_MAINTENANCE_NONE: Final = ""
NODE_MAINTENANCE_ACTIVE: Final = "active"
"""``cloud.google.com/active-node-maintenance=ONGOING`` or the ``maintenance-window-started``
taint: GKE is stopping the node's workloads for host maintenance."""
NODE_MAINTENANCE_TERMINATING: Final = "terminating"
"""The ``cloud.google.com/impending-node-termination`` taint: GKE will terminate the node
(maintenance on an on-demand or reserved node, preemption on a spot one)."""


@dataclass(frozen=True, slots=True)
class Cause:
    """A reason and what goes with it: GKE's status message for ``error``, the node pools
    for ``nodepool``; empty otherwise."""

    reason: str
    detail: str = ""


NO_CAUSE: Final = Cause("")
"""The cause of an up (or expected-down) observation: none."""


@dataclass(frozen=True, slots=True)
class NodeSignals:
    """What a down node pool's nodes say, counted in one pass over them."""

    present: int = 0
    lost: int = 0
    """Unknown past the grace period."""
    not_ready: int = 0
    """Ready is False (or an unrecognised status)."""
    maintenance: int = 0
    terminating: int = 0
    cordoned: int = 0


def _detail(text: str) -> str:
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def nodepool_cause(
    *,
    failed: bool,
    reconciling: bool,
    provisioning: bool = False,
    message: str = "",
    expected: int,
    spot: bool,
    nodes: NodeSignals,
) -> Cause:
    """Why a node pool is down, the first rule that holds winning.

    GKE's own word first (``ERROR`` / ``RUNNING_WITH_ERROR`` → ``error`` with its message);
    then maintenance on any node; a reconciling pool (``upgrade`` when nodes are cordoned,
    as a surge or blue-green upgrade drains them); a spot pool losing or terminating nodes
    (``preemption``); nodes gone or Unknown past the grace period (``node-lost``); nodes
    NotReady; ``unknown`` when nothing explains it — and for a pool GKE is still creating,
    whose missing nodes are not lost (its first down period is no interruption anyway).
    """
    if failed:
        return Cause(ERROR, _detail(message))
    if provisioning:
        return Cause(UNKNOWN)
    if nodes.maintenance or (nodes.terminating and not spot):
        return Cause(MAINTENANCE)
    if reconciling:
        return Cause(UPGRADE if nodes.cordoned else RECONCILING)
    return node_cause(expected=expected, spot=spot, nodes=nodes) or Cause(UNKNOWN)


def workload_cause(
    *,
    meaning: str,
    pools_down: Sequence[str],
    restarted: bool,
    preempted: bool = False,
    named: str = "",
) -> Cause:
    """Why a workload (JobSet, LeaderWorkerSet, described kind) is down.

    ``meaning`` is its ending condition's (``failed``, ``suspended`` or ``""``: a
    description's ``failed`` and ``suspended`` endings are the reasons of the same name);
    ``preempted`` whether one of its description's ``Preempted`` conditions holds (a Kueue
    Workload evicted by preemption); ``named`` the reason of the first of its description's
    ``Interrupted`` conditions that holds (Kueue's ``NodeFailures`` eviction: ``node-lost``),
    ``""`` when none; ``pools_down`` the node pools it runs on that are down now (named in
    the detail, sorted); ``restarted`` whether its restart count grew since it was last up.
    """
    if meaning == FAILED:
        return Cause(FAILED)
    if meaning == SUSPENDED:
        return Cause(SUSPENDED)
    if preempted:
        return Cause(PREEMPTION)
    if named in NAMED_REASONS:
        return Cause(named)
    if pools_down:
        return Cause(NODEPOOL, _detail(",".join(sorted(pools_down))))
    if restarted:
        return Cause(RESTART)
    return Cause(UNKNOWN)


def node_cause(*, expected: int, spot: bool, nodes: NodeSignals) -> Cause | None:
    """What a set of nodes says on its own: maintenance, preemption, lost, not ready; None
    when they say nothing (then, for the nodes of a JobSet, the down node pools may)."""
    if nodes.maintenance or (nodes.terminating and not spot):
        return Cause(MAINTENANCE)
    missing = nodes.present < expected
    if spot and (nodes.terminating or missing or nodes.lost):
        return Cause(PREEMPTION)
    if missing or nodes.lost:
        return Cause(NODE_LOST)
    if nodes.not_ready:
        return Cause(NODE_NOT_READY)
    return None


def jobset_nodes_cause(
    *,
    meaning: str,
    expected: int,
    spot: bool,
    nodes: NodeSignals,
    pools_down: Sequence[str],
    provisioned: bool,
) -> Cause:
    """Why the nodes of a JobSet (``jobset_nodes``) are down, the first rule that holds winning.

    The JobSet's own ending first (``failed``, ``suspended``: the TPU provisioner takes the
    nodes of a suspended JobSet away, which is no node failure); then what its nodes say,
    counted as the node pool observer counts them (``NodeSignals``): maintenance, preemption
    on spot nodes, nodes gone or Unknown past the grace period, nodes NotReady; then the node
    pools its nodes belong to when one of them has a node not Ready otherwise (Unknown
    within the grace period), named in the detail; ``unknown`` when nothing explains it —
    and for nodes never seen complete (``provisioned`` false), whose missing nodes are still
    being created, not lost.
    """
    if meaning in (FAILED, SUSPENDED):
        return Cause(meaning)
    if not provisioned:
        return Cause(UNKNOWN)
    found = node_cause(expected=expected, spot=spot, nodes=nodes)
    if found is not None:
        return found
    if pools_down:
        return Cause(NODEPOOL, _detail(",".join(sorted(pools_down))))
    return Cause(UNKNOWN)


@dataclass(frozen=True, slots=True)
class SliceSignals:
    """What a down Slice says about why: its conditions, or that it is gone."""

    vanished: bool = False
    """No longer listed (or being deleted) while its owner still runs."""
    creation_failed: str | None = None
    """``SliceCreationFailed=True``: its message (``""`` when it has none); None otherwise."""
    not_ready: str | None = None
    """``Ready=False``: its message, else its reason; None otherwise."""


def slice_cause(*, signals: SliceSignals, pools_down: Sequence[str]) -> Cause:
    """Why a TPU Slice is down, the first rule that holds winning.

    ``SliceCreationFailed=True`` (the slice is in an error state it cannot recover from by
    itself) is ``failed``, with the condition's message; then the node pools of the slice's
    nodes that are down, named; a slice gone or being deleted while its owner runs is
    ``node-lost`` (its hosts were taken away); ``Ready=False`` is ``error`` with the
    condition's message (the slice controller says the hardware is not ready); ``unknown``
    otherwise (``Ready`` Unknown or absent, a slice not ready yet).
    """
    if signals.creation_failed is not None:
        return Cause(FAILED, _detail(signals.creation_failed))
    if pools_down:
        return Cause(NODEPOOL, _detail(",".join(sorted(pools_down))))
    if signals.vanished:
        return Cause(NODE_LOST)
    if signals.not_ready is not None:
        return Cause(ERROR, _detail(signals.not_ready))
    return Cause(UNKNOWN)
