"""The resources the emulator serves, and the per-resource facts that change API behaviour.

The real API server treats resources differently: some are cluster-scoped, some keep `.status`
behind a subresource, some track `metadata.generation`, some accept `.status` on create (nodes)
and some may be created by PUT (leases). Keeping those facts in one table lets the store, the
router and discovery agree on them instead of sprinkling special cases around.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# What create does with a `.status` the caller sent: keep it, drop it, or reset it.
StatusOnCreate = Literal["keep", "drop", "empty", "pending"]

COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
POD_FIELDS = COMMON_FIELDS | {
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
}
NODE_FIELDS = COMMON_FIELDS | {"spec.unschedulable"}
JOB_FIELDS = COMMON_FIELDS | {"status.successful"}


@dataclass(frozen=True)
class ResourceType:
    """One served resource and how the real API server treats it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
    status_subresource: bool = False
    status_on_create: StatusOnCreate = "keep"
    tracks_generation: bool = False
    create_on_update: bool = False
    custom: bool = False
    field_labels: frozenset[str] = COMMON_FIELDS

    @property
    def api_version(self) -> str:
        """The `apiVersion` of objects of this resource, e.g. `v1` or `batch/v1`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """`plural.group` as in API error messages (`jobs.batch`), or just `nodes` for core."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def path_prefix(self) -> str:
        """The URL prefix of this resource's group version."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType(
        group="",
        version="v1",
        plural="nodes",
        kind="Node",
        namespaced=False,
        singular="node",
        status_subresource=True,
        status_on_create="keep",
        field_labels=NODE_FIELDS,
    ),
    ResourceType(
        group="",
        version="v1",
        plural="pods",
        kind="Pod",
        namespaced=True,
        singular="pod",
        status_subresource=True,
        status_on_create="pending",
        tracks_generation=True,
        field_labels=POD_FIELDS,
    ),
    ResourceType(
        group="",
        version="v1",
        plural="configmaps",
        kind="ConfigMap",
        namespaced=True,
        singular="configmap",
    ),
    ResourceType(
        group="batch",
        version="v1",
        plural="jobs",
        kind="Job",
        namespaced=True,
        singular="job",
        status_subresource=True,
        status_on_create="empty",
        tracks_generation=True,
        field_labels=JOB_FIELDS,
    ),
    ResourceType(
        group="coordination.k8s.io",
        version="v1",
        plural="leases",
        kind="Lease",
        namespaced=True,
        singular="lease",
        create_on_update=True,
    ),
    ResourceType(
        group="jobset.x-k8s.io",
        version="v1alpha2",
        plural="jobsets",
        kind="JobSet",
        namespaced=True,
        singular="jobset",
        status_subresource=True,
        status_on_create="drop",
        tracks_generation=True,
        custom=True,
    ),
    ResourceType(
        group="leaderworkerset.x-k8s.io",
        version="v1",
        plural="leaderworkersets",
        kind="LeaderWorkerSet",
        namespaced=True,
        singular="leaderworkerset",
        status_subresource=True,
        status_on_create="drop",
        tracks_generation=True,
        custom=True,
    ),
    ResourceType(
        group="accelerator.gke.io",
        version="v1beta1",
        plural="slices",
        kind="Slice",
        namespaced=False,
        singular="slice",
        status_subresource=True,
        status_on_create="drop",
        tracks_generation=True,
        custom=True,
    ),
    # The kinds megamon ships descriptions for (docs/kinds.md).
    ResourceType(
        group="trainer.kubeflow.org",
        version="v1alpha1",
        plural="trainjobs",
        kind="TrainJob",
        namespaced=True,
        singular="trainjob",
        status_subresource=True,
        status_on_create="drop",
        tracks_generation=True,
        custom=True,
    ),
    ResourceType(
        group="kueue.x-k8s.io",
        version="v1beta1",
        plural="workloads",
        kind="Workload",
        namespaced=True,
        singular="workload",
        status_subresource=True,
        status_on_create="drop",
        tracks_generation=True,
        custom=True,
    ),
)

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES}
_BY_NAME: dict[str, ResourceType] = {}
for _r in RESOURCES:
    for _alias in (_r.plural, _r.singular, _r.kind.lower(), _r.qualified):
        _BY_NAME[_alias] = _r
    _BY_NAME[f"{_r.kind.lower()}.{_r.group}"] = _r


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource served at `/apis/{group}/{version}/{plural}` (group "" for core)."""
    return _BY_PATH.get((group, version, plural))


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The resource of objects with this `apiVersion` and `kind`."""
    return _BY_KIND.get((api_version, kind))


def resolve(name: str) -> ResourceType:
    """Look up a resource by kind (`Node`), plural (`nodes`), singular or `plural.group`."""
    found = _BY_NAME.get(name.lower())
    if found is None:
        raise KeyError(f"unknown resource or kind {name!r}")
    return found


def for_object(obj: dict[str, object]) -> ResourceType:
    """The resource an object belongs to, from its `apiVersion` and `kind`."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise TypeError("object needs string apiVersion and kind")
    found = by_kind(api_version, kind)
    if found is None:
        raise KeyError(f"unknown apiVersion/kind {api_version}/{kind}")
    return found
