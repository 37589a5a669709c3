"""Label, annotation and condition names megamon reads or writes (docs/rules.md)."""

from __future__ import annotations

# Node labels.
NODEPOOL = "cloud.google.com/gke-nodepool"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
ACCELERATOR_COUNT = "cloud.google.com/gke-accelerator-count"
TPU_SLICE = "cloud.google.com/gke-tpu-slice"
SPOT = "cloud.google.com/gke-spot"
PROVISIONER_JOBSET_NAMESPACE = "google.com/tpu-provisioner-jobset-namespace"
PROVISIONER_JOBSET_NAME = "google.com/tpu-provisioner-jobset-name"

# GKE maintenance signals on nodes ("Manage GKE node disruption for GPUs and TPUs").
ACTIVE_NODE_MAINTENANCE = "cloud.google.com/active-node-maintenance"
MAINTENANCE_ONGOING = "ONGOING"
TAINT_MAINTENANCE_WINDOW_STARTED = "cloud.google.com/maintenance-window-started"
TAINT_IMPENDING_NODE_TERMINATION = "cloud.google.com/impending-node-termination"
SCHEDULED_MAINTENANCE_TIME = "cloud.google.com/scheduled-maintenance-time"
"""When a host maintenance will interrupt the node: Unix seconds, as a string."""

# Node status.
RESOURCE_TPU = "google.com/tpu"
"""The extended resource of TPU chips in ``status.allocatable``."""

# Pod labels.
JOB_NAME = "batch.kubernetes.io/job-name"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

# Slice owner labels.
SLICE_OWNER_KIND = "tpu-provisioner.cloud.google.com/owner-kind"
SLICE_OWNER_NAME = "tpu-provisioner.cloud.google.com/owner-name"
SLICE_OWNER_NAMESPACE = "tpu-provisioner.cloud.google.com/owner-namespace"

# Written on Jobs when node-pool job labelling is on.
SCHEDULED_NODE_POOL = "megamon.tbd/scheduled-node-pool"

# GKE node pool resource label.
GKE_ACCELERATOR_TYPE = "goog-gke-accelerator-type"

# Condition types and values.
CONDITION_READY = "Ready"
CONDITION_SLICE_CREATION_FAILED = "SliceCreationFailed"
JOBSET_COMPLETED = "Completed"
JOBSET_FAILED = "Failed"
JOBSET_SUSPENDED = "Suspended"
JOBSET_TERMINAL = (JOBSET_COMPLETED, JOBSET_FAILED, JOBSET_SUSPENDED)
TRUE = "True"
FALSE = "False"

OWNER_KIND_JOBSET = "JobSet"
OWNER_KIND_LWS = "LeaderWorkerSet"
