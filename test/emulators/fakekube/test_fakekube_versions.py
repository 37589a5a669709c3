"""A resource served at several versions (Kueue's Workloads at v1beta2 and v1beta1): one set
of objects, read at the version asked for, and served at one of them only when the test says
so — a cluster before v1beta2, or after v1beta1 was removed."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from internal.fakekube import FakeKube

GROUP, PLURAL = "kueue.x-k8s.io", "workloads"
WORKLOADS = f"{PLURAL}.{GROUP}"


def workload(name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"podSets": [{"name": "main", "count": 2}]},
    }


def served(custom: client.CustomObjectsApi, version: str) -> bool:
    try:
        found = custom.get_api_resources(GROUP, version)
    except ApiException as err:
        assert err.status == 404
        return False
    return any(r.name == PLURAL for r in found.resources)


def test_both_versions_are_served_by_default_the_newest_preferred(
    custom: client.CustomObjectsApi, kube_api_client: Any
) -> None:
    assert served(custom, "v1beta2") and served(custom, "v1beta1")
    group = client.ApisApi(kube_api_client).get_api_versions()
    kueue = next(g for g in group.groups if g.name == GROUP)
    assert [v.version for v in kueue.versions] == ["v1beta2", "v1beta1"]
    assert kueue.preferred_version.version == "v1beta2"


def test_one_object_read_at_either_version(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GROUP, "v1beta1", "ml", PLURAL, workload("a", "v1beta1"))
    new = custom.get_namespaced_custom_object(GROUP, "v1beta2", "ml", PLURAL, "a")
    old = custom.get_namespaced_custom_object(GROUP, "v1beta1", "ml", PLURAL, "a")
    assert new["apiVersion"] == f"{GROUP}/v1beta2" and old["apiVersion"] == f"{GROUP}/v1beta1"
    assert new["metadata"]["uid"] == old["metadata"]["uid"]
    listed = custom.list_cluster_custom_object(GROUP, "v1beta2", PLURAL)
    assert listed["apiVersion"] == f"{GROUP}/v1beta2"
    assert [o["apiVersion"] for o in listed["items"]] == [f"{GROUP}/v1beta2"]


def test_a_watch_sees_objects_at_its_version(custom: client.CustomObjectsApi) -> None:
    start = custom.list_cluster_custom_object(GROUP, "v1beta2", PLURAL)["metadata"]
    custom.create_namespaced_custom_object(GROUP, "v1beta1", "ml", PLURAL, workload("a", "v1beta1"))
    stream = watch.Watch().stream(
        custom.list_cluster_custom_object,
        GROUP,
        "v1beta2",
        PLURAL,
        resource_version=start["resourceVersion"],
        timeout_seconds=2,
    )
    event = next(iter(stream))
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == f"{GROUP}/v1beta2"


@pytest.mark.parametrize("only", ["v1beta2", "v1beta1"])
def test_served_at_one_version_only(
    fake_kube: FakeKube, custom: client.CustomObjectsApi, only: str
) -> None:
    other = "v1beta1" if only == "v1beta2" else "v1beta2"
    fake_kube.serve_versions(WORKLOADS, only)
    assert served(custom, only) and not served(custom, other)
    custom.create_namespaced_custom_object(GROUP, only, "ml", PLURAL, workload("a", only))
    with pytest.raises(ApiException) as info:
        custom.list_cluster_custom_object(GROUP, other, PLURAL)
    assert info.value.status == 404
    fake_kube.serve_versions(WORKLOADS, "v1beta2", "v1beta1")
    assert custom.get_namespaced_custom_object(GROUP, other, "ml", PLURAL, "a")["apiVersion"] == (
        f"{GROUP}/{other}"
    ), "the objects outlive a version not served for a while"


def test_an_unknown_version_is_refused(fake_kube: FakeKube) -> None:
    with pytest.raises(KeyError, match="v9"):
        fake_kube.serve_versions(WORKLOADS, "v9")
