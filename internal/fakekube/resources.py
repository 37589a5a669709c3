"""The resources the emulator serves, and the per-resource facts that change API behaviour.

The real API server treats resources differently: some are cluster-scoped, some keep `.status`
behind a subresource, some track `metadata.generation`, some accept `.status` on create (nodes)
and some may be created by PUT (leases). Keeping those facts in one table lets the store, the
router and discovery agree on them instead of sprinkling special cases around.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

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
    pruned: tuple[tuple[str, ...], ...] = ()
    """Field paths the served CRD's structural schema does not have, dropped from every
    write as the real API server prunes unknown fields (``*`` for each list element)."""

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
    # Registering a CRD serves its resource (ResourceTable.add_crd), as the API server does.
    ResourceType(
        group="apiextensions.k8s.io",
        version="v1",
        plural="customresourcedefinitions",
        kind="CustomResourceDefinition",
        namespaced=False,
        singular="customresourcedefinition",
    ),
    # The kinds megamon ships descriptions for (docs/kinds.md).
    ResourceType(
        group="ray.io",
        version="v1",
        plural="rayjobs",
        kind="RayJob",
        namespaced=True,
        singular="rayjob",
        status_subresource=True,
        status_on_create="drop",
        tracks_generation=True,
        custom=True,
    ),
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
    # Kueue serves Workloads at v1beta2 (stored since v0.16) and v1beta1 (to be removed);
    # the preferred version first. `ResourceTable.serve_versions` serves one of them only.
    ResourceType(
        group="kueue.x-k8s.io",
        version="v1beta2",
        plural="workloads",
        kind="Workload",
        namespaced=True,
        singular="workload",
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

CRDS_QUALIFIED = "customresourcedefinitions.apiextensions.k8s.io"


def _crd_types(crd: dict[str, Any]) -> list[ResourceType]:
    """The resources a CustomResourceDefinition object serves, one per served version."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        raise TypeError("a CustomResourceDefinition needs a spec")
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not all(isinstance(v, str) and v for v in (group, plural, kind)):
        raise ValueError("a CustomResourceDefinition needs spec.group, names.plural and kind")
    found = []
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or version.get("served") is False:
            continue
        subresources = version.get("subresources") or {}
        found.append(
            ResourceType(
                group=str(group),
                version=str(version.get("name")),
                plural=str(plural),
                kind=str(kind),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=str(names.get("singular") or str(kind).lower()),
                status_subresource="status" in subresources,
                status_on_create="drop" if "status" in subresources else "keep",
                tracks_generation=True,
                custom=True,
            )
        )
    return found


JOBSET_RELEASE = "v0.12.0"
"""The JobSet release whose CRD the emulator serves unless told otherwise: the newest whose
status fields megamon reads."""

JOBSET_STATUS_SINCE: dict[tuple[str, ...], tuple[int, int]] = {
    ("status", "previousInPlaceRestartAttempt"): (0, 11),
    ("status", "currentInPlaceRestartAttempt"): (0, 11),
    ("status", "replicatedJobsStatus", "*", "jobRestarts"): (0, 12),
    ("status", "replicatedJobsStatus", "*", "jobRestartsCountTowardsMax"): (0, 12),
}
"""The JobSet status fields of the restarts (docs/kinds.md, "JobSet restarts") and the release
whose CRD added each (kubernetes-sigs/jobset ``api/jobset/v1alpha2/jobset_types.go``): the
in-place restart attempts in v0.11.0 (KEP-467), the single-Job restart counts in v0.12.0.
The ``RestartingJobSet`` condition (v0.12.0) is a condition like any other: an older CRD
keeps it, an older controller never writes it."""


def _release(text: str) -> tuple[int, int]:
    """``v0.12.0`` → ``(0, 12)``; anything else is refused, naming it."""
    parts = text.removeprefix("v").split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts[:2]):
        raise ValueError(f"JobSet release {text!r} is not vMAJOR.MINOR[.PATCH]")
    return int(parts[0]), int(parts[1])


def served_resources(jobset_release: str = JOBSET_RELEASE) -> tuple[ResourceType, ...]:
    """The built-in resources, the JobSet CRD as ``jobset_release`` defines its status."""
    release = _release(jobset_release)
    pruned = tuple(path for path, since in JOBSET_STATUS_SINCE.items() if release < since)
    return tuple(
        replace(rt, pruned=pruned) if rt.kind == "JobSet" and rt.custom else rt for rt in RESOURCES
    )


class ResourceTable:
    """The resources one emulator serves: the built-in ones, plus those of the CRDs created
    through its API (each emulator has its own table)."""

    def __init__(self, types: tuple[ResourceType, ...] = RESOURCES) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        self._by_name: dict[str, ResourceType] = {}
        self._from_crd: dict[str, list[ResourceType]] = {}
        self._builtin = types
        for rt in types:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self._by_path[(rt.group, rt.version, rt.plural)] = rt
        self._by_kind[(rt.api_version, rt.kind)] = rt
        for alias in (rt.plural, rt.singular, rt.kind.lower(), rt.qualified):
            self._by_name.setdefault(alias, rt)
        self._by_name.setdefault(f"{rt.kind.lower()}.{rt.group}", rt)

    def __iter__(self) -> Iterator[ResourceType]:
        with self._lock:
            return iter(list(self._by_path.values()))

    def add_crd(self, crd: dict[str, Any]) -> None:
        """Serve the resource of a CustomResourceDefinition that was just created."""
        types = _crd_types(crd)
        with self._lock:
            self._from_crd[str(crd["metadata"]["name"])] = types
            for rt in types:
                self._add(rt)

    def remove_crd(self, crd: dict[str, Any]) -> None:
        """Stop serving the resource of a deleted CustomResourceDefinition."""
        with self._lock:
            for rt in self._from_crd.pop(str(crd["metadata"]["name"]), []):
                self._remove(rt)

    def _remove(self, rt: ResourceType) -> None:
        self._by_path.pop((rt.group, rt.version, rt.plural), None)
        self._by_kind.pop((rt.api_version, rt.kind), None)
        for alias, found in list(self._by_name.items()):
            if found is rt:
                del self._by_name[alias]

    def serve_versions(self, qualified: str, versions: Iterable[str]) -> None:
        """Serve a built-in resource (``workloads.kueue.x-k8s.io``) at these of its versions
        only, as a cluster whose CRD serves them: a Kueue before v1beta2, or after v1beta1
        was removed. Its objects stay the same; each is read at the version asked for."""
        wanted = list(versions)
        known = [rt for rt in self._builtin if rt.qualified == qualified]
        unknown = set(wanted) - {rt.version for rt in known}
        if not known or unknown:
            raise KeyError(f"{qualified} has no built-in version {sorted(unknown)}")
        with self._lock:
            for rt in known:
                self._remove(rt)
            for rt in known:  # in the table's order: the preferred version first
                if rt.version in wanted:
                    self._add(rt)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource served at `/apis/{group}/{version}/{plural}` (group "" for core)."""
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The resource of objects with this `apiVersion` and `kind`."""
        return self._by_kind.get((api_version, kind))

    def resolve(self, name: str) -> ResourceType:
        """Look up a resource by kind (`Node`), plural (`nodes`), singular or `plural.group`."""
        found = self._by_name.get(name.lower())
        if found is None:
            raise KeyError(f"unknown resource or kind {name!r}")
        return found

    def for_object(self, obj: dict[str, object]) -> ResourceType:
        """The resource an object belongs to, from its `apiVersion` and `kind`."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise TypeError("object needs string apiVersion and kind")
        found = self.by_kind(api_version, kind)
        if found is None:
            raise KeyError(f"unknown apiVersion/kind {api_version}/{kind}")
        return found


BUILTIN = ResourceTable()
"""The built-in resources only (never extended): for callers without an emulator at hand."""


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    """The built-in resource served at `/apis/{group}/{version}/{plural}`."""
    return BUILTIN.by_path(group, version, plural)


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The built-in resource of objects with this `apiVersion` and `kind`."""
    return BUILTIN.by_kind(api_version, kind)


def resolve(name: str) -> ResourceType:
    """Look up a built-in resource by kind, plural, singular or `plural.group`."""
    return BUILTIN.resolve(name)


def for_object(obj: dict[str, object]) -> ResourceType:
    """The built-in resource an object belongs to, from its `apiVersion` and `kind`."""
    return BUILTIN.for_object(obj)
