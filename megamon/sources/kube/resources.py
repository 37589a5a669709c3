"""The resource types megamon watches, and the client call that lists each of them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from kubernetes import client as k8s

from megamon.domain import labels
from megamon.domain.descriptions import KindDescription
from megamon.sources.kube.watching import RawLister


@dataclass(frozen=True)
class CustomResource:
    group: str
    version: str
    plural: str


def described_resource(description: KindDescription) -> CustomResource:
    """The resource a kind description points at."""
    return CustomResource(description.Group, description.Version, description.Resource)


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
