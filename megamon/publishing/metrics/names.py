"""Every metric name suffix and label key megamon publishes about the fleet, in one place.

These strings are a contract (docs/metrics.md): they are the Go megamon's names, and SRE dashboards
and alert rules are written against them, so a rename breaks someone's pager. Nothing else in
megamon spells them out; the collector, the documentation tests and future exporters import
them from here.

A fleet series is named ``<prefix>_<kind>_<suffix>`` (``megamon_nodepool_up``,
``megamon_jobset_nodes_down_time_between_recovery_mean_seconds``): the kind infix is
``Kind.value``, the unit comes last.
"""

from __future__ import annotations

from typing import Final

# Per-kind suffixes: <prefix>_<kind>_<suffix>.
UP: Final = "up"
UP_TIME: Final = "up_time_seconds"
DOWN_TIME: Final = "down_time_seconds"
INTERRUPTION_COUNT: Final = "interruption_count"
RECOVERY_COUNT: Final = "recovery_count"
DOWN_TIME_INITIAL: Final = "down_time_initial_seconds"
DOWN_TIME_BETWEEN_RECOVERY: Final = "down_time_between_recovery_seconds"
DOWN_TIME_BETWEEN_RECOVERY_MEAN: Final = "down_time_between_recovery_mean_seconds"
DOWN_TIME_BETWEEN_RECOVERY_LATEST: Final = "down_time_between_recovery_latest_seconds"
UP_TIME_BETWEEN_INTERRUPTION: Final = "up_time_between_interruption_seconds"
UP_TIME_BETWEEN_INTERRUPTION_MEAN: Final = "up_time_between_interruption_mean_seconds"
UP_TIME_BETWEEN_INTERRUPTION_LATEST: Final = "up_time_between_interruption_latest_seconds"
TPU_CHIP_COUNT: Final = "tpu_chip_count"
PROVISIONING_DURATION: Final = "provisioning_duration_seconds"
RESTARTS: Final = "restarts"
SURPLUS_NODES: Final = "surplus_nodes"
"""New in 0.2.0: nodes beyond the expected count (a surge upgrade's), where a kind counts nodes."""
DOWN_CHIP_SECONDS: Final = "down_chip_seconds"
"""New in 0.2.0: chip-seconds down in interruptions, by accelerator, topology, spot, reason."""
CHIP_AVAILABILITY: Final = "chip_availability_ratio"
"""New in 0.2.0: the kind's availability weighted by chips, by accelerator."""
"""New in 0.2.0: ``status.restarts`` of a kind whose description reads it (JobSet)."""
TPU_CHIPS_ALLOCATABLE: Final = "tpu_chips_allocatable"
"""New in 0.2.0: Σ ``status.allocatable["google.com/tpu"]`` of a node pool's nodes."""

# Process-wide names: <prefix>_<name>.
NODEPOOL_JOB_SCHEDULED: Final = "nodepool_job_scheduled"
BUILD_INFO: Final = "build_info"
LEADER: Final = "leader"
LAST_OBSERVATION_TIMESTAMP: Final = "last_observation_timestamp_seconds"
LAST_REPORT_TIMESTAMP: Final = "last_report_timestamp_seconds"
JOBSET_SUSPENDED: Final = "jobset_suspended"
"""1 for each JobSet whose Suspended condition is true (new in 0.2.0; not in the Go megamon):
the JobSet alerts tell a queued or paused workload from a broken one with it."""

MAINTENANCE_SCHEDULED_CHIPS: Final = "maintenance_scheduled_chips"
MAINTENANCE_SCHEDULED_NODEPOOLS: Final = "maintenance_scheduled_nodepools"
MAINTENANCE_SCHEDULED_JOBSETS: Final = "maintenance_scheduled_jobsets"
"""New in 0.2.0: chips, node pools and JobSets with a host maintenance announced within 1 h,
6 h, 24 h (``within``)."""

# Label keys of the resource attributes.
LABEL_NODEPOOL_NAME: Final = "nodepool_name"
LABEL_TPU_TOPOLOGY: Final = "tpu_topology"
LABEL_TPU_ACCELERATOR: Final = "tpu_accelerator"
LABEL_SPOT: Final = "spot"
LABEL_JOBSET_NAME: Final = "jobset_name"
LABEL_JOBSET_NAMESPACE: Final = "jobset_namespace"
LABEL_JOBSET_UID: Final = "jobset_uid"
LABEL_SLICE_NAME: Final = "slice_name"
LABEL_SLICE_OWNER_KIND: Final = "slice_owner_kind"
LABEL_SLICE_OWNER_NAME: Final = "slice_owner_name"
LABEL_SLICE_OWNER_NAMESPACE: Final = "slice_owner_namespace"
LABEL_LWS_NAME: Final = "lws_name"
LABEL_LWS_NAMESPACE: Final = "lws_namespace"
LABEL_LWS_UID: Final = "lws_uid"

# Other label keys.
LABEL_PROVISIONING_STATE: Final = "provisioning_state"
LABEL_REASON: Final = "reason"
LABEL_RESTART_KIND: Final = "kind"
"""New in 0.2.0: the kind of restart of ``megamon_jobset_restarts`` (``jobset``, ``job``,
``in-place``: ``megamon.domain.restarts.KINDS``)."""
"""Why a resource went down (``megamon.domain.interruptions``), on the histograms (0.2.0)."""
LABEL_JOB_NAME: Final = "job_name"
LABEL_WITHIN: Final = "within"
"""``1h``, ``6h``, ``24h``: the window of the maintenance gauges (0.2.0)."""
LABEL_ANNOUNCED: Final = "announced"
"""``true`` or ``false``: on the maintenance lead-time histogram (0.2.0)."""
LABEL_UNTIL: Final = "until"
"""The stage of a queueing histogram: ``quota_reserved``, ``admitted`` (0.2.0)."""
LABEL_SOURCE: Final = "source"
LABEL_VERSION: Final = "version"
LABEL_COMMIT: Final = "commit"
LABEL_DATE: Final = "date"

SPOT_TRUE: Final = "true"
"""The only value of the ``spot`` label: the label is absent on on-demand resources."""

ATTR_LABELS: Final[tuple[tuple[str, str], ...]] = (
    ("nodepool_name", LABEL_NODEPOOL_NAME),
    ("tpu_topology", LABEL_TPU_TOPOLOGY),
    ("tpu_accelerator", LABEL_TPU_ACCELERATOR),
    ("spot", LABEL_SPOT),
    ("jobset_name", LABEL_JOBSET_NAME),
    ("jobset_namespace", LABEL_JOBSET_NAMESPACE),
    ("jobset_uid", LABEL_JOBSET_UID),
    ("slice_name", LABEL_SLICE_NAME),
    ("slice_owner_kind", LABEL_SLICE_OWNER_KIND),
    ("slice_owner_name", LABEL_SLICE_OWNER_NAME),
    ("slice_owner_namespace", LABEL_SLICE_OWNER_NAMESPACE),
    ("lws_name", LABEL_LWS_NAME),
    ("lws_namespace", LABEL_LWS_NAMESPACE),
    ("lws_uid", LABEL_LWS_UID),
)
"""``Attrs`` field → label key, in docs/metrics.md order. ``spot`` (a bool) becomes
``spot="true"`` only when true; every other field is a string and is omitted when empty, so a
series carries only the labels its resource has. ``tpu_chip_count`` is a value, not a label."""


def kind_metric(prefix: str, kind_infix: str, suffix: str) -> str:
    """``<prefix>_<kind>_<suffix>``, e.g. ``megamon_jobset_nodes_up``."""
    return f"{prefix}_{kind_infix}_{suffix}"


def process_metric(prefix: str, name: str) -> str:
    """``<prefix>_<name>``, e.g. ``megamon_build_info``."""
    return f"{prefix}_{name}"
