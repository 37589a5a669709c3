"""The resource types megamon watches, and the client call that lists each of them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from megamon.domain import labels
from megamon.domain.descriptions import KindDescription
from megamon.sources.kube.watching import NOT_FOUND, Expired, RawLister

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CustomResource:
    group: str
    version: str
    plural: str


def described_resource(description: KindDescription) -> CustomResource:
    """The resource a kind description points at, at its preferred version."""
    return CustomResource(description.Group, description.Version[0], description.Resource)


def first_served(preferred: Sequence[str], served: Callable[[str], bool]) -> str | None:
    """The first of ``preferred`` that ``served`` says the cluster serves; ``None`` when none."""
    return next((version for version in preferred if served(version)), None)


class ServedVersionLister:
    """Lists a described resource at the first of its description's versions the cluster
    serves (``Version``, in order of preference), asked by discovery at the start of every
    listing: a watch, and the pages after the first, keep the listing's version.

    So a cluster upgraded to serve a newer version (Kueue's ``v1beta2``), or one that stopped
    serving an older one, is read at the version it serves from the next listing on — a
    watch of a version no longer served lists again (``Expired``), and a restart lists anew —
    and the objects, keyed by UID, are the same resources.
    The version chosen is logged when it is first chosen and whenever it changes."""

    def __init__(self, api: Any, description: KindDescription) -> None:
        self._api = k8s.CustomObjectsApi(api)
        self._group = description.Group
        self._plural = description.Resource
        self._versions = tuple(description.Version)
        self._noun = description.Noun
        self.version: str | None = None
        """The version the current listing reads; ``None`` before the first one."""

    def _serves(self, version: str, timeout: Any) -> bool:
        """Whether ``group/version`` is served and has this resource (its resource list)."""
        try:
            response: Any = self._api.get_api_resources(  # raw: _preload_content=False
                self._group, version, _preload_content=False, _request_timeout=timeout
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return False
            raise
        try:
            document = orjson.loads(response.data)
        finally:
            response.release_conn()
        listed = document.get("resources") if isinstance(document, dict) else None
        return any(
            isinstance(entry, dict) and entry.get("name") == self._plural for entry in listed or ()
        )

    def _choose(self, timeout: Any) -> str:
        found = first_served(self._versions, lambda v: self._serves(v, timeout))
        if found is None:
            versions = ", ".join(self._versions)
            raise ApiException(status=NOT_FOUND, reason=f"none of {versions} is served")
        if found != self.version:
            log.info(
                "%s: reading %s.%s at %s (the first served of %s)",
                self._noun,
                self._plural,
                self._group,
                found,
                ", ".join(self._versions),
            )
        self.version = found
        return found

    def __call__(self, **kwargs: Any) -> Any:
        watching = bool(kwargs.get("watch"))
        version = self.version
        if (not watching and not kwargs.get("_continue")) or version is None:
            version = self._choose(kwargs.get("_request_timeout"))
        try:
            return self._api.list_cluster_custom_object(
                self._group, version, self._plural, **kwargs
            )
        except ApiException as err:
            if watching and err.status == NOT_FOUND:  # the version went away: list again
                raise Expired(f"{self._noun} is no longer served at {version}") from err
            raise


def described_lister(api: Any, description: KindDescription) -> RawLister:
    """The lister of a described kind: at its one version, or, when it lists several, at
    the first the cluster serves (``ServedVersionLister``)."""
    if len(description.Version) == 1:
        return custom_lister(api, described_resource(description))
    return ServedVersionLister(api, description)


JOBSETS = CustomResource("jobset.x-k8s.io", "v1alpha2", "jobsets")
LEADERWORKERSETS = CustomResource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
SLICES = CustomResource("accelerator.gke.io", "v1beta1", "slices")

LEADER_POD_LABELS = f"{labels.JOBSET_NAME},{labels.JOB_COMPLETION_INDEX}=0"
"""Only JobSet leader pods matter (the scheduling map): the pod cache holds no other."""
BOUND_PODS = "spec.nodeName!="


def node_lister(api: Any) -> RawLister:
    return k8s.CoreV1Api(api).list_node


def leader_pod_lister(api: Any) -> RawLister:
    return partial(
        k8s.CoreV1Api(api).list_pod_for_all_namespaces,
        label_selector=LEADER_POD_LABELS,
        field_selector=BOUND_PODS,
    )


def custom_lister(api: Any, resource: CustomResource) -> RawLister:
    """Every object of ``resource``, of every namespace when it is namespaced."""
    return partial(
        k8s.CustomObjectsApi(api).list_cluster_custom_object,
        resource.group,
        resource.version,
        resource.plural,
    )
