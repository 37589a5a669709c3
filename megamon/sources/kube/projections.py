"""Small projections of Kubernetes objects: only what docs/rules.md needs, never whole objects.

A TPU node object is ~9 KB of JSON; its projection is a slotted tuple of a few strings, so a
65,000-node cluster fits in tens of MB. The strings nodes share (pool, topology, accelerator,
JobSet, status) are interned: one copy per value, not one per node. Projections are built
from raw JSON (dicts from orjson), never from the client's model classes. Objects missing
what a projection needs raise ``ObservationError`` naming the object; the cache skips and
counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from sys import intern
from typing import Any

from megamon.domain import interruptions, labels, timestamps
from megamon.domain import maintenance as announcements
from megamon.domain import restarts as restart_rules
from megamon.domain.descriptions import JOBSET_DESCRIPTION, LWS_DESCRIPTION, shipped
from megamon.errors import ObservationError
from megamon.sources.kube.described import (
    DescribedView,
    Json,
    described_projection,
    meta_and_name,
)

_meta = meta_and_name
_JOBSET_DESCRIBED = described_projection(shipped(JOBSET_DESCRIPTION))
_LWS_DESCRIBED = described_projection(shipped(LWS_DESCRIPTION))


def _dict(obj: Json, key: str) -> Json:
    """``obj[key]`` when it is an object, else an empty one (missing fields are not errors)."""
    found = obj.get(key)
    return found if isinstance(found, dict) else {}


def _list(obj: Json, key: str, what: str) -> list[Any]:
    """``obj[key]`` when it is a list, ``[]`` when absent; anything else is an error."""
    found = obj.get(key)
    if found is None:
        return []
    if not isinstance(found, list):
        raise ObservationError(f"{what} must be a list, got {type(found).__name__}")
    return found


def _text(found: dict[str, Any], key: str) -> str:
    """A label value as text; ``""`` when absent or not a string."""
    value = found.get(key)
    return value if isinstance(value, str) else ""


def _labels(meta: Json) -> dict[str, str]:
    found = meta.get("labels")
    return found if isinstance(found, dict) else {}


def _condition(obj: Json, kind: str) -> Json | None:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return None
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def _shared(found: dict[str, Any], key: str) -> str:
    """A label value many objects share, interned; ``""`` when absent."""
    value = found.get(key)
    return intern(value) if isinstance(value, str) else ""


MAX_COUNT = 2**31 - 1
"""Kubernetes counts (replicas, parallelism, ready) are int32: anything larger is not one."""


def _int(value: Any, default: int, what: str) -> int:
    if value is None:
        return default
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        got = repr(value)[:40]
        raise ObservationError(f"{what} must be an integer from 0 to {MAX_COUNT}, got {got}")
    return value


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    nodepool: str
    topology: str
    accelerator: str
    accelerator_count: str
    spot: bool
    jobset_namespace: str
    jobset_name: str
    ready_status: str | None
    ready_since_ns: int | None
    maintenance: str = interruptions.NODE_MAINTENANCE_NONE
    """What GKE's labels and taints say of maintenance (``interruptions.NODE_MAINTENANCE_*``)."""
    unschedulable: bool = False
    """``spec.unschedulable``: the node is cordoned (drained for an upgrade, say)."""
    tpu_slice: str = ""
    """``cloud.google.com/gke-tpu-slice``: the TPU Slice the node is part of."""
    scheduled_maintenance: int = announcements.NOT_SCHEDULED
    """``cloud.google.com/scheduled-maintenance-time`` in Unix seconds; ``NOT_SCHEDULED``
    without the label, ``MALFORMED`` when it holds no time (``megamon.domain.maintenance``)."""
    tpu_allocatable: int | None = None
    """``status.allocatable["google.com/tpu"]``: the chips the kubelet offers; None when
    the node reports none (or no whole number)."""


def _taint_keys(spec: Json) -> frozenset[str]:
    taints = spec.get("taints")
    if not isinstance(taints, list):
        return frozenset()
    return frozenset(
        t["key"] for t in taints if isinstance(t, dict) and isinstance(t.get("key"), str)
    )


def _maintenance(lab: dict[str, Any], taints: frozenset[str]) -> str:
    if (
        lab.get(labels.ACTIVE_NODE_MAINTENANCE) == labels.MAINTENANCE_ONGOING
        or labels.TAINT_MAINTENANCE_WINDOW_STARTED in taints
    ):
        return interruptions.NODE_MAINTENANCE_ACTIVE
    if labels.TAINT_IMPENDING_NODE_TERMINATION in taints:
        return interruptions.NODE_MAINTENANCE_TERMINATING
    return interruptions.NODE_MAINTENANCE_NONE


def _tpu_allocatable(status: Json) -> int | None:
    """The node's allocatable TPU chips: a Kubernetes quantity, for chips a whole number."""
    value = _dict(status, "allocatable").get(labels.RESOURCE_TPU)
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        return int(value)
    return None


def node_view(obj: Json) -> NodeView:
    meta, name = _meta(obj, "node")
    lab = _labels(meta)
    spec = _dict(obj, "spec")
    ready = _condition(obj, labels.CONDITION_READY)
    since: int | None = None
    if ready is not None and isinstance(ready.get("lastTransitionTime"), str):
        try:
            since = timestamps.parse(ready["lastTransitionTime"])
        except timestamps.TimestampError as err:
            raise ObservationError(f"node {name}: Ready lastTransitionTime: {err}") from None
    return NodeView(
        name=name,
        nodepool=_shared(lab, labels.NODEPOOL),
        topology=_shared(lab, labels.TPU_TOPOLOGY),
        accelerator=_shared(lab, labels.TPU_ACCELERATOR),
        accelerator_count=_shared(lab, labels.ACCELERATOR_COUNT),
        spot=lab.get(labels.SPOT) == "true",
        jobset_namespace=_shared(lab, labels.PROVISIONER_JOBSET_NAMESPACE),
        jobset_name=_shared(lab, labels.PROVISIONER_JOBSET_NAME),
        ready_status=intern(str(ready.get("status"))) if ready is not None else None,
        ready_since_ns=since,
        maintenance=_maintenance(lab, _taint_keys(spec)),
        unschedulable=spec.get("unschedulable") is True,
        tpu_slice=_shared(lab, labels.TPU_SLICE),
        scheduled_maintenance=announcements.parse_scheduled(
            lab.get(labels.SCHEDULED_MAINTENANCE_TIME)
        ),
        tpu_allocatable=_tpu_allocatable(_dict(obj, "status")),
    )


@dataclass(frozen=True, slots=True)
class PodView:
    namespace: str
    name: str
    node_name: str
    job_name: str
    jobset_name: str
    completion_index: str


def pod_view(obj: Json) -> PodView:
    meta, name = _meta(obj, "pod")
    lab = _labels(meta)
    spec = _dict(obj, "spec")
    return PodView(
        namespace=str(meta.get("namespace", "")),
        name=name,
        node_name=str(spec.get("nodeName") or ""),
        job_name=_text(lab, labels.JOB_NAME),
        jobset_name=_text(lab, labels.JOBSET_NAME),
        completion_index=_text(lab, labels.JOB_COMPLETION_INDEX),
    )


@dataclass(frozen=True, slots=True)
class ReplicatedJobView:
    name: str
    replicas: int
    parallelism: int


@dataclass(frozen=True, slots=True)
class JobSetView:
    uid: str
    name: str
    namespace: str
    replicated_jobs: tuple[ReplicatedJobView, ...]
    ready: int
    terminal: str
    """The first of Completed/Failed/Suspended whose condition is True, or ``""``."""
    described: DescribedView
    """What the shipped JobSet description reads (docs/kinds.md): the JobSet kind's counts,
    ending and TPU shape."""
    restarts: restart_rules.RestartStatus = restart_rules.NO_RESTARTS
    """Its restarts of every kind and its ``RestartingJobSet`` condition."""


def _replicated_job(raw: Any, where: str) -> ReplicatedJobView:
    if not isinstance(raw, dict):
        raise ObservationError(f"{where}: a replicated job must be an object")
    template = _dict(raw, "template")
    job_spec = _dict(template, "spec")
    return ReplicatedJobView(
        name=str(raw.get("name", "")),
        replicas=_int(raw.get("replicas"), 1, f"{where}: replicas"),
        parallelism=_int(job_spec.get("parallelism"), 1, f"{where}: parallelism"),
    )


def _terminal(obj: Json) -> str:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if (
            isinstance(condition, dict)
            and condition.get("type") in labels.JOBSET_TERMINAL
            and condition.get("status") == labels.TRUE
        ):
            return str(condition["type"])
    return ""


def _attempt(status: Json, key: str, where: str) -> int | None:
    """An in-place restart attempt of the status (KEP-467), ``None`` when absent."""
    value = status.get(key)
    return None if value is None else _int(value, 0, f"{where}: status.{key}")


def _restarting(obj: Json, where: str) -> restart_rules.RestartingCondition | None:
    condition = _condition(obj, restart_rules.CONDITION_RESTARTING)
    if condition is None:
        return None
    since, text = 0, condition.get("lastTransitionTime")
    if isinstance(text, str):
        try:
            since = timestamps.parse(text)
        except timestamps.TimestampError as err:
            raise ObservationError(
                f"{where}: {restart_rules.CONDITION_RESTARTING} lastTransitionTime: {err}"
            ) from None
    return restart_rules.RestartingCondition(
        status=_text(condition, "status"), reason=_text(condition, "reason"), since=since
    )


def _job_restarts(replicated: list[Any], where: str) -> int:
    """The sum of every ``jobRestarts[]`` (single-Job restarts, JobSet v0.12.0)."""
    total = 0
    for rj in replicated:
        if isinstance(rj, dict):
            for count in _list(rj, "jobRestarts", f"{where}: replicatedJobsStatus.jobRestarts"):
                total += _int(count, 0, f"{where}: replicatedJobsStatus.jobRestarts")
    return total


def _restart_status(
    obj: Json, status: Json, replicated: list[Any], where: str
) -> restart_rules.RestartStatus:
    jobset = _int(status.get("restarts"), 0, f"{where}: status.restarts")
    found = restart_rules.RestartStatus(
        jobset=jobset,
        job=_job_restarts(replicated, where),
        in_place_current=_attempt(status, "currentInPlaceRestartAttempt", where),
        in_place_previous=_attempt(status, "previousInPlaceRestartAttempt", where),
        condition=_restarting(obj, where),
    )
    return restart_rules.NO_RESTARTS if found == restart_rules.NO_RESTARTS else found


def jobset_view(obj: Json) -> JobSetView:
    meta, name = _meta(obj, "jobset")
    where = f"jobset {meta.get('namespace', '')}/{name}"
    spec = _dict(obj, "spec")
    raw_jobs = _list(spec, "replicatedJobs", f"{where}: spec.replicatedJobs")
    status = _dict(obj, "status")
    ready = 0
    replicated = _list(status, "replicatedJobsStatus", f"{where}: status.replicatedJobsStatus")
    for rj in replicated:
        if isinstance(rj, dict):
            ready += _int(rj.get("ready"), 0, f"{where}: replicatedJobsStatus.ready")
    return JobSetView(
        uid=str(meta.get("uid", "")),
        name=name,
        namespace=str(meta.get("namespace", "")),
        replicated_jobs=tuple(_replicated_job(rj, where) for rj in raw_jobs),
        ready=ready,
        terminal=_terminal(obj),
        described=_JOBSET_DESCRIBED(obj),
        restarts=_restart_status(obj, status, replicated, where),
    )


@dataclass(frozen=True, slots=True)
class LwsView:
    uid: str
    name: str
    namespace: str
    replicas: int
    ready_replicas: int
    described: DescribedView
    """What the shipped LeaderWorkerSet description reads (docs/kinds.md)."""


def lws_view(obj: Json) -> LwsView:
    meta, name = _meta(obj, "leaderworkerset")
    where = f"leaderworkerset {meta.get('namespace', '')}/{name}"
    spec = _dict(obj, "spec")
    status = _dict(obj, "status")
    return LwsView(
        uid=str(meta.get("uid", "")),
        name=name,
        namespace=str(meta.get("namespace", "")),
        replicas=_int(spec.get("replicas"), 1, f"{where}: spec.replicas"),
        ready_replicas=_int(status.get("readyReplicas"), 0, f"{where}: status.readyReplicas"),
        described=_LWS_DESCRIBED(obj),
    )


@dataclass(frozen=True, slots=True)
class SliceView:
    name: str
    owner_kind: str
    owner_name: str
    owner_namespace: str
    ready_status: str | None
    terminating: bool
    creation_failed: bool
    accelerator: str
    topology: str
    uid: str = ""
    creation_failed_message: str = ""
    """The ``SliceCreationFailed`` condition's message, when it is True."""
    not_ready_message: str = ""
    """The ``Ready`` condition's message (else its reason), when it is False."""


def _says(condition: Json | None) -> str:
    """A condition's message, else its reason: what it says of why (``""`` when silent)."""
    if condition is None:
        return ""
    for key in ("message", "reason"):
        value = condition.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def slice_view(obj: Json) -> SliceView:
    meta, name = _meta(obj, "slice")
    lab = _labels(meta)
    spec = _dict(obj, "spec")
    ready = _condition(obj, labels.CONDITION_READY)
    failed = _condition(obj, labels.CONDITION_SLICE_CREATION_FAILED)
    ready_status = str(ready.get("status")) if ready is not None else None
    creation_failed = failed is not None and failed.get("status") == labels.TRUE
    return SliceView(
        name=name,
        owner_kind=_text(lab, labels.SLICE_OWNER_KIND),
        owner_name=_text(lab, labels.SLICE_OWNER_NAME),
        owner_namespace=_text(lab, labels.SLICE_OWNER_NAMESPACE),
        ready_status=ready_status,
        terminating=bool(meta.get("deletionTimestamp")),
        creation_failed=creation_failed,
        accelerator=str(spec.get("type", "")),
        topology=str(spec.get("topology", "")),
        uid=str(meta.get("uid") or ""),
        creation_failed_message=_says(failed) if creation_failed else "",
        not_ready_message=_says(ready) if ready_status == labels.FALSE else "",
    )
