"""Kubernetes objects of TPU workloads: JobSets, their Jobs and leader pods, LWS and Slices.

Why: megamon reads these objects from the API server as raw JSON, so the fleet must write
them in the shapes the real controllers (JobSet, LeaderWorkerSet, GKE's slice controller)
produce — same apiVersions, same field names, same condition types and reasons — or tests
would pass against objects no cluster ever contains. Each builder returns a plain dict ready
for ``FakeKube.create`` or the official client. Status is built by separate functions so the
fleet can patch it alone, as a controller would.

Node objects are big enough to live in ``internal.fleet.nodes``; ``tpu_node`` is re-exported
here so every builder can be imported from one place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from internal.fleet.nodes import gke_node_name, ready_condition, tpu_node, with_ready
from internal.fleet.shapes import TpuShape
from megamon.domain import labels

__all__ = [
    "JOBSET_API",
    "JOB_COMPLETE",
    "JOB_FAILED",
    "JOB_SUSPENDED",
    "LWS_API",
    "REPLICATED_JOB",
    "SLICE_API",
    "Owner",
    "condition",
    "gke_node_name",
    "job",
    "job_name",
    "job_status",
    "jobset",
    "jobset_status",
    "leader_pod",
    "leader_pod_name",
    "leader_worker_set",
    "lws_status",
    "ready_condition",
    "slice_status",
    "tpu_node",
    "tpu_slice",
    "with_ready",
]

Obj = dict[str, Any]

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
LWS_API = "leaderworkerset.x-k8s.io/v1"
SLICE_API = "accelerator.gke.io/v1beta1"
REPLICATED_JOB = "slice"
WORKLOAD_IMAGE = "us-docker.pkg.dev/megamon-demo/training/maxtext-jax:2025-05-01"

# The JobSet controller's label prefix (the labels megamon reads are in megamon.domain.labels).
_JS = "jobset.sigs.k8s.io"

# How a Job ends (its condition type), with the reason and message the Job controller writes.
JOB_COMPLETE, JOB_FAILED, JOB_SUSPENDED = "Complete", "Failed", "Suspended"
_JOB_OUTCOMES = {
    JOB_COMPLETE: ("CompletionsReached", "Reached expected number of succeeded pods"),
    JOB_FAILED: ("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    JOB_SUSPENDED: ("JobSuspended", "Job suspended"),
}

# How a JobSet ends, with the reason and message the JobSet controller writes.
_TERMINAL_REASONS = {
    labels.JOBSET_COMPLETED: ("AllJobsCompleted", "jobset completed successfully"),
    labels.JOBSET_FAILED: ("FailedJobs", "jobset failed due to one or more job failures"),
    labels.JOBSET_SUSPENDED: ("SuspendedJobs", "jobset is suspended"),
}

# The replicatedJobsStatus counter a terminal JobSet's replicas end up in.
_TERMINAL_COUNTER = {
    labels.JOBSET_COMPLETED: "succeeded",
    labels.JOBSET_FAILED: "failed",
    labels.JOBSET_SUSPENDED: "suspended",
}


@dataclass(frozen=True)
class Owner:
    """The workload a Slice belongs to, as the TPU provisioner labels it."""

    kind: str
    name: str
    namespace: str

    @classmethod
    def jobset(cls, name: str, namespace: str) -> Owner:
        return cls(labels.OWNER_KIND_JOBSET, name, namespace)

    @classmethod
    def lws(cls, name: str, namespace: str) -> Owner:
        return cls(labels.OWNER_KIND_LWS, name, namespace)


def condition(kind: str, status: str, reason: str, message: str, since: str) -> Obj:
    """A ``metav1.Condition`` (``since`` is its RFC 3339 ``lastTransitionTime``)."""
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


# -- JobSets and their children ---------------------------------------------------------------


def jobset(
    name: str,
    namespace: str,
    *,
    shape: TpuShape,
    replicas: int = 1,
    parallelism: int | None = None,
    since: str,
) -> Obj:
    """A JobSet of ``replicas`` slices of ``shape``, one pod per node (``parallelism``).

    It is born running with no replica ready; its status is ``jobset_status``.
    """
    pods = shape.nodes if parallelism is None else parallelism
    replicated_job = {
        "name": REPLICATED_JOB,
        "replicas": replicas,
        "template": {"spec": _job_spec(shape, pods, {})},
    }
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {f"alpha.{_JS}/exclusive-topology": labels.NODEPOOL},
        },
        "spec": {
            "failurePolicy": {"maxRestarts": 0},
            "network": {"enableDNSHostnames": True, "subdomain": name},
            "replicatedJobs": [replicated_job],
            "successPolicy": {"operator": "All"},
            "suspend": False,
        },
        "status": jobset_status(replicas=replicas, ready=0, since=since),
    }


def jobset_status(
    *, replicas: int, ready: int, since: str, terminal: str | None = None, restarts: int = 0
) -> Obj:
    """JobSet status: ``ready`` of ``replicas`` Jobs ready, or ended as ``terminal``, after
    ``restarts`` restarts.

    ``terminal`` is ``Completed``, ``Failed`` or ``Suspended`` (``labels.JOBSET_*``).
    """
    counts = {"active": replicas, "ready": ready, "succeeded": 0, "failed": 0, "suspended": 0}
    status: Obj = {"restarts": restarts, "conditions": []}
    if terminal is not None:
        reason, message = _TERMINAL_REASONS[terminal]
        status["conditions"] = [condition(terminal, labels.TRUE, reason, message, since)]
        counts = dict.fromkeys(counts, 0)
        counts[_TERMINAL_COUNTER[terminal]] = 1 if terminal == labels.JOBSET_FAILED else replicas
        if terminal != labels.JOBSET_SUSPENDED:
            status["terminalState"] = terminal
    status["replicatedJobsStatus"] = [{"name": REPLICATED_JOB, **counts}]
    return status


def job_name(jobset_name: str, index: int, replicated_job: str = REPLICATED_JOB) -> str:
    """The name the JobSet controller gives replica ``index``: ``<jobset>-<rjob>-<index>``."""
    return f"{jobset_name}-{replicated_job}-{index}"


def job(
    jobset_name: str,
    namespace: str,
    *,
    index: int,
    shape: TpuShape,
    parallelism: int | None = None,
    jobset_uid: str | None = None,
) -> Obj:
    """The batch/v1 Job of replica ``index`` of a JobSet, owned by it when its UID is given."""
    name = job_name(jobset_name, index)
    job_labels = _child_labels(jobset_name, index)
    pods = shape.nodes if parallelism is None else parallelism
    metadata: Obj = {"name": name, "namespace": namespace, "labels": job_labels}
    if jobset_uid:
        metadata["ownerReferences"] = [_owner_ref(JOBSET_API, "JobSet", jobset_name, jobset_uid)]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": _job_spec(shape, pods, job_labels),
        "status": job_status(pods=pods, ready=0),
    }


def job_status(*, pods: int, ready: int, since: str = "", outcome: str | None = None) -> Obj:
    """Job status: ``ready`` of ``pods`` running pods ready, or ended with ``outcome``.

    ``outcome`` is a Job condition type: ``Complete``, ``Failed`` or ``Suspended``.
    """
    if outcome is None:
        return {"active": pods, "ready": ready, "terminating": 0, "uncountedTerminatedPods": {}}
    reason, message = _JOB_OUTCOMES[outcome]
    status: Obj = {"active": 0, "ready": 0, "terminating": 0}
    status["conditions"] = [condition(outcome, labels.TRUE, reason, message, since)]
    if outcome == JOB_COMPLETE:
        status["succeeded"] = pods
    elif outcome == JOB_FAILED:
        status["failed"] = 1
    return status


def leader_pod_name(jobset_name: str, index: int) -> str:
    """The name of pod 0 of replica ``index``: ``<job>-0-<five characters>``."""
    owner_job = job_name(jobset_name, index)
    return f"{owner_job}-0-{_suffix(owner_job)}"


def leader_pod(
    jobset_name: str,
    namespace: str,
    *,
    index: int,
    node_name: str,
    shape: TpuShape,
    job_uid: str | None = None,
    phase: str = "Running",
) -> Obj:
    """Pod 0 of replica ``index``'s Job, bound to ``node_name``: what megamon maps to a pool."""
    owner_job = job_name(jobset_name, index)
    pod_labels = {
        **_child_labels(jobset_name, index),
        labels.JOB_NAME: owner_job,
        labels.JOB_COMPLETION_INDEX: "0",
        "job-name": owner_job,
    }
    metadata: Obj = {
        "name": leader_pod_name(jobset_name, index),
        "namespace": namespace,
        "labels": pod_labels,
        "annotations": {labels.JOB_COMPLETION_INDEX: "0"},
    }
    if job_uid:
        metadata["ownerReferences"] = [_owner_ref("batch/v1", "Job", owner_job, job_uid)]
    spec = _pod_spec(shape)
    spec.update({"nodeName": node_name, "hostname": f"{owner_job}-0", "subdomain": jobset_name})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase, "qosClass": "BestEffort"},
    }


def _child_labels(jobset_name: str, index: int) -> dict[str, str]:
    return {
        labels.JOBSET_NAME: jobset_name,
        f"{_JS}/replicatedjob-name": REPLICATED_JOB,
        f"{_JS}/job-index": str(index),
        f"{_JS}/restart-attempt": "0",
    }


def _job_spec(shape: TpuShape, pods: int, pod_labels: dict[str, str]) -> Obj:
    template: Obj = {"spec": _pod_spec(shape)}
    if pod_labels:
        template["metadata"] = {"labels": dict(pod_labels)}
    return {
        "parallelism": pods,
        "completions": pods,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": template,
    }


def _pod_spec(shape: TpuShape) -> Obj:
    tpus = {"google.com/tpu": str(shape.chips_per_vm)}
    return {
        "nodeSelector": shape.node_selector(),
        "containers": [
            {
                "name": "jax-tpu",
                "image": WORKLOAD_IMAGE,
                "command": ["python3", "-m", "maxtext.train"],
                "resources": {"limits": tpus, "requests": tpus},
            }
        ],
        "restartPolicy": "Never",
        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
    }


def _owner_ref(api_version: str, kind: str, name: str, uid: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _suffix(seed: str) -> str:
    """Five characters like the API server's generateName suffix, stable for ``seed``."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


# -- LeaderWorkerSets -------------------------------------------------------------------------


def leader_worker_set(
    name: str, namespace: str, *, shape: TpuShape, replicas: int = 1, since: str
) -> Obj:
    """A LeaderWorkerSet of ``replicas`` groups, each one slice of ``shape`` (one pod a node)."""
    worker = {"metadata": {"labels": {"app": name}}, "spec": _pod_spec(shape)}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": shape.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": worker,
            },
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
        },
        "status": lws_status(replicas=replicas, ready=0, since=since),
    }


def lws_status(*, replicas: int, ready: int, since: str) -> Obj:
    """LeaderWorkerSet status: ``ready`` of ``replicas`` groups ready."""
    available = ready == replicas
    return {
        "replicas": replicas,
        "readyReplicas": ready,
        "updatedReplicas": replicas,
        "conditions": [
            condition(
                "Available",
                "True" if available else "False",
                "AllGroupsReady" if available else "GroupsNotReady",
                "All replicas are ready" if available else f"{ready}/{replicas} replicas ready",
                since,
            )
        ],
    }


# -- Slices -----------------------------------------------------------------------------------


def tpu_slice(name: str, *, shape: TpuShape, owner: Owner, since: str) -> Obj:
    """A cluster-scoped Slice of ``shape`` for ``owner``; born not ready (being created)."""
    return {
        "apiVersion": SLICE_API,
        "kind": "Slice",
        "metadata": {
            "name": name,
            "labels": {
                labels.SLICE_OWNER_KIND: owner.kind,
                labels.SLICE_OWNER_NAME: owner.name,
                labels.SLICE_OWNER_NAMESPACE: owner.namespace,
            },
        },
        "spec": {"type": shape.accelerator, "topology": shape.topology},
        "status": slice_status(ready="False", since=since),
    }


SLICE_DEGRADED = "SliceDegraded"
"""The ``Ready=False`` reason of a slice that was ready and no longer is (the fleet's word)."""


def slice_status(
    *, ready: str, since: str, failure: str | None = None, degraded: str | None = None
) -> Obj:
    """Slice status: ``Ready`` is ``ready``; ``failure`` adds ``SliceCreationFailed=True``;
    ``degraded`` is the message of a ``Ready=False`` slice that lost its hardware."""
    reasons = {
        "True": ("SliceReady", "all TPU hosts of the slice are ready"),
        "False": ("SliceNotReady", "waiting for TPU hosts of the slice"),
        "Unknown": ("SliceStateUnknown", "TPU host health is unknown"),
    }
    reason, message = reasons[ready]
    if degraded is not None:
        reason, message = SLICE_DEGRADED, degraded
    conditions = [condition(labels.CONDITION_READY, ready, reason, message, since)]
    if failure is not None:
        failed = labels.CONDITION_SLICE_CREATION_FAILED
        conditions.append(condition(failed, labels.TRUE, "CreationFailed", failure, since))
    return {"conditions": conditions}
