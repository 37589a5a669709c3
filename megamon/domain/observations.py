"""Observations: what an observer saw of one resource at one moment, with up/down decided.

Up/down is decided once, here, when an observation is built (``Observation.build``);
the event log, the summarizer and the metrics only read ``up``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from megamon.domain.interruptions import NO_CAUSE, Cause
from megamon.domain.rules.upness import is_up


class Attrs(BaseModel):
    """Descriptive attributes of a resource: TPU shape and names. Empty strings mean unknown.

    JSON names are the Go megamon's report keys.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    nodepool_name: str = Field("", alias="nodePoolName")
    tpu_topology: str = Field("", alias="tpuTopology")
    tpu_accelerator: str = Field("", alias="tpuAccelerator")
    tpu_chip_count: int = Field(0, alias="tpuChipCount")
    spot: bool = False
    jobset_name: str = Field("", alias="jobsetName")
    jobset_namespace: str = Field("", alias="jobsetNamespace")
    jobset_uid: str = Field("", alias="jobsetUID")
    slice_name: str = Field("", alias="sliceName")
    slice_owner_kind: str = Field("", alias="sliceOwnerKind")
    slice_owner_name: str = Field("", alias="sliceOwnerName")
    slice_owner_namespace: str = Field("", alias="sliceOwnerNamespace")
    slice_uid: str = Field("", alias="sliceUID")
    lws_name: str = Field("", alias="lwsName")
    lws_namespace: str = Field("", alias="lwsNamespace")
    lws_uid: str = Field("", alias="lwsUID")


class WorkloadAttrs(Attrs):
    """The attrs of a described kind's resource (docs/kinds.md) whose labels are not a
    built-in kind's: its name, namespace and UID, which its series carry under the label keys
    its description names. A subclass, so that ``Attrs`` — the report JSON's attribute keys
    — stays the Go megamon's; the archive of a retired resource keeps them."""

    workload_name: str = Field("", alias="workloadName")
    workload_namespace: str = Field("", alias="workloadNamespace")
    workload_uid: str = Field("", alias="workloadUID")


class JobSetAttrs(Attrs):
    """A JobSet's attrs with how its latest restart was timed (``megamon.domain.restarts``):
    recorded in the event log with its other attributes, so the report reads it from the
    history. A subclass, so that ``Attrs`` — the report JSON's attribute keys — stays the
    Go megamon's."""

    restart_timed_by: str = Field("", alias="restartTimedBy")
    """``condition`` (the ``RestartingJobSet`` condition's ``lastTransitionTime``s) or
    ``observed`` (when megamon saw it); ``""`` before its first restart."""


class NodePoolAttrs(Attrs):
    """A node pool's attrs with the maintenance GKE announced on its nodes
    (``megamon.domain.maintenance``): recorded in the event log with the pool's other
    attributes, so the report reads them from history. A subclass, so that ``Attrs`` — the
    report JSON's attribute keys — stays the Go megamon's; 0 means none."""

    scheduled_maintenance: int = Field(0, alias="scheduledMaintenanceTime")
    """Unix seconds of the earliest ``scheduled-maintenance-time`` among the pool's nodes."""
    maintenance_announced: int = Field(0, alias="maintenanceAnnouncedTime")
    """Unix seconds when megamon first saw that announcement (the lead time starts there)."""
    maintenance_jobset: str = Field("", alias="maintenanceJobSet")
    """``namespace/name`` of the JobSet the TPU provisioner created the pool for (its nodes'
    provisioner labels), when a maintenance is announced: the JobSet it will interrupt."""


class Observation(BaseModel):
    """Counts and state of one resource; ``up`` is derived from them by ``build``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    expected: int = Field(alias="expectedCount")
    ready: int = Field(alias="readyCount")
    unknown: int = Field(0, alias="unknownCount")
    status: str = ""
    expected_down: bool = Field(False, alias="ed")
    failed: bool = False
    up: bool = False
    attrs: Attrs = Attrs()
    reason: str = ""
    """Why it is down (``megamon.domain.interruptions``): set on a down observation that is not
    expected down, ``""`` otherwise; kept on the down event of the history."""
    reason_detail: str = ""
    """What goes with the reason: GKE's status message (``error``), node pools (``nodepool``)."""
    restarts: int | None = None
    """How many times the resource restarted, where its kind reads it (JobSet
    ``status.restarts``); not in the report JSON, published as ``megamon_<kind>_restarts``."""
    restart_counts: tuple[tuple[str, int], ...] = ()
    """(kind, count) of each kind of restart (``megamon.domain.restarts.KINDS``), where the
    kind tells them apart (JobSets); not in the report JSON, published as
    ``megamon_jobset_restarts{kind}``."""
    tpu_chips_allocatable: int | None = None
    """The TPU chips the resource's nodes report allocatable (``status.allocatable``), where
    the kind reads them (node pools); not in the report JSON, published as
    ``megamon_nodepool_tpu_chips_allocatable``."""
    down_since: int = 0
    """Nanoseconds since the epoch when a down began that earlier cycles held back, waiting
    for GKE to say why (a node pool whose nodes vanished: ``megamon.observing.deletions``);
    0 otherwise. The append rules stamp the down event then, not at the cycle's ``now``; on an
    up observation (the nodes came back) they append that down, with ``reason``, then the up.
    Not in the report JSON."""
    queued: tuple[tuple[str, int, int], ...] = ()
    """Where its kind reads them (a description's ``Queued`` stages): (stage, created,
    reached) of each stage it has reached, in nanoseconds since the epoch — a Kueue Workload's
    creation and its ``QuotaReserved`` / ``Admitted`` transitions. Not in the report JSON; the
    summary's queueing histograms count them (``megamon_<kind>_queueing_seconds``)."""
    up_since: int = 0
    """Nanoseconds since the epoch when an up the server timed began (a JobSet's
    ``RestartingJobSet`` condition turning False): the append rules stamp the up event then,
    never before the record's last event nor after ``now``; 0 otherwise (``now``). Not in the
    report JSON."""
    surplus: int = 0
    """Units present beyond the expected count (a surge upgrade's extra node), where the kind
    counts nodes; never a reason to be down (``upness``). Not in the report JSON, published
    as ``megamon_<kind>_surplus_nodes``."""

    @classmethod
    def build(
        cls,
        *,
        expected: int,
        ready: int,
        unknown: int = 0,
        threshold: float = 1.0,
        status: str = "",
        expected_down: bool = False,
        failed: bool = False,
        attrs: Attrs | None = None,
        restarts: int | None = None,
        cause: Cause = NO_CAUSE,
        surplus: int = 0,
        exact: bool = False,
        tpu_chips_allocatable: int | None = None,
        queued: tuple[tuple[str, int, int], ...] = (),
    ) -> Observation:
        """An observation whose ``up`` follows the upness rule; expected-down is never up.

        ``cause`` is kept only when the observation is down and not expected down (an
        interruption, or a resource not up yet); the observers of kinds with reasons give
        one, ``unknown`` at the least. ``exact``: the Go megamon's rule, where a unit more
        than expected is down (``upness.is_up``)."""
        up = is_up(expected, ready, unknown, threshold, exact=exact) and not expected_down
        if up or expected_down:
            cause = NO_CAUSE
        return cls(
            expected=expected,
            ready=ready,
            unknown=unknown,
            status=status,
            expected_down=expected_down,
            failed=failed,
            up=up,
            attrs=attrs or Attrs(),
            reason=cause.reason,
            reason_detail=cause.detail,
            restarts=restarts,
            surplus=surplus,
            tpu_chips_allocatable=tpu_chips_allocatable,
            queued=queued,
        )
