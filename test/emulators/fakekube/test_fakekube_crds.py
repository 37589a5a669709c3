"""Custom resource definitions: creating one through the official client serves its resource
(list, watch, status) as the API server does; deleting it stops serving it. This is how a
test declares a kind the emulator has never heard of (docs/kinds.md)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from internal.fakekube import FakeKube

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


def widget_crd(*, status: bool = True, scope: str = "Namespaced") -> dict[str, Any]:
    version: dict[str, Any] = {"name": VERSION, "served": True, "storage": True}
    version["schema"] = {"openAPIV3Schema": {"type": "object"}}
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget"},
            "scope": scope,
            "versions": [version],
        },
    }


def widget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 3},
        "status": {"ignored": True},
    }


def test_a_created_crd_serves_its_resource(kube_api_client: Any) -> None:
    custom = client.CustomObjectsApi(kube_api_client)
    with pytest.raises(ApiException) as before:
        custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert before.value.status == 404
    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(widget_crd())
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, widget("w"))
    assert "status" not in created, "status is a subresource: dropped on create"
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "w", {"status": {"ready": 2}}
    )
    listed = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert [(i["metadata"]["name"], i["status"]) for i in listed["items"]] == [("w", {"ready": 2})]
    stream = watch.Watch().stream(
        custom.list_cluster_custom_object,
        GROUP,
        VERSION,
        PLURAL,
        resource_version="0",
        timeout_seconds=2,
    )
    first = next(iter(stream))
    stream.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "w")
    groups = client.ApisApi(kube_api_client).get_api_versions().groups
    assert GROUP in {g.name for g in groups}


def test_a_deleted_crd_is_no_longer_served(kube_api_client: Any) -> None:
    extensions = client.ApiextensionsV1Api(kube_api_client)
    extensions.create_custom_resource_definition(widget_crd(scope="Cluster"))
    custom = client.CustomObjectsApi(kube_api_client)
    custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, widget("w"))
    extensions.delete_custom_resource_definition(f"{PLURAL}.{GROUP}")
    with pytest.raises(ApiException) as after:
        custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert after.value.status == 404


def test_a_crd_without_names_is_refused(fake_kube: FakeKube) -> None:
    """The official client will not send one; a hand-written request gets a 422."""
    crd = widget_crd()
    del crd["spec"]["names"]
    request = urllib.request.Request(
        fake_kube.endpoint + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        data=json.dumps(crd).encode(),
        headers={"Authorization": f"Bearer {fake_kube.token}", "Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 422
    assert "spec.group, names.plural and kind" in json.loads(refused.value.read())["message"]
    assert fake_kube.resources.by_path(GROUP, VERSION, PLURAL) is None
