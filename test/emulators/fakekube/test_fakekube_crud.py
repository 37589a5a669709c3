"""CRUD of every served resource through the official client, with the API's error answers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from internal.fakekube import FakeKube
from internal.fakekube.objects import job, node, obj, pod

NAMESPACED_CUSTOM = [
    ("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"),
]


def error_body(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def test_node_crud(core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1", labels={"pool": "a"}))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.status.conditions[0].type == "Ready", "nodes keep .status on create"
    fetched = core.read_node("n1")
    assert fetched.metadata.resource_version == created.metadata.resource_version
    fetched.metadata.labels["pool"] = "b"
    replaced = core.replace_node("n1", fetched)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert core.read_node("n1").metadata.labels == {"pool": "b"}
    status = core.delete_node("n1")
    assert status["status"] == "Success", "client 37 returns delete answers as plain dicts"
    with pytest.raises(ApiException) as info:
        core.read_node("n1")
    assert info.value.status == 404
    assert error_body(info.value)["message"] == 'nodes "n1" not found'


def test_create_conflict_answers_409_already_exists(core: client.CoreV1Api) -> None:
    core.create_node(node("n1"))
    with pytest.raises(ApiException) as info:
        core.create_node(node("n1"))
    body = error_body(info.value)
    assert (info.value.status, body["reason"], body["kind"]) == (409, "AlreadyExists", "Status")
    assert body["details"] == {"name": "n1", "kind": "nodes"}


def test_pod_crud_and_create_strategy(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", pod("p1", "ml", node_name="n1", phase="Running"))
    assert created.status.phase == "Pending", "pods' .status is reset on create"
    assert created.metadata.generation == 1
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces().items] == ["p1"]
    assert core.list_namespaced_pod("other").items == []
    deleted = core.delete_namespaced_pod("p1", "ml")
    assert deleted.metadata.name == "p1", "pod deletion answers with the pod (a V1Pod)"
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("ml", pod("p1", "elsewhere"))
    assert info.value.status == 400


def test_configmap_crud_and_stale_update(core: client.CoreV1Api) -> None:
    body = {"metadata": {"name": "cm"}, "data": {"k": "v1"}}
    first = core.create_namespaced_config_map("default", body)
    first.data = {"k": "v2"}
    second = core.replace_namespaced_config_map("cm", "default", first)
    first.data = {"k": "v3"}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("cm", "default", first)
    assert (info.value.status, error_body(info.value)["reason"]) == (409, "Conflict")
    assert core.read_namespaced_config_map("cm", "default").data == {"k": "v2"}
    unconditional = {"metadata": {"name": "cm"}, "data": {"k": "v4"}}
    third = core.replace_namespaced_config_map("cm", "default", unconditional)
    assert int(third.metadata.resource_version) > int(second.metadata.resource_version)
    core.delete_namespaced_config_map("cm", "default")
    assert core.list_namespaced_config_map("default").items == []


def test_job_generation_and_status(batch: client.BatchV1Api) -> None:
    sent = job("j1", labels={"team": "a"})
    sent["status"] = {"active": 3}
    created = batch.create_namespaced_job("default", sent)
    assert created.metadata.generation == 1
    assert created.status.active is None, "job .status is reset on create"
    labelled = batch.patch_namespaced_job("j1", "default", {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1, "metadata changes do not bump generation"
    labelled.spec.parallelism = 4
    respec = batch.replace_namespaced_job("j1", "default", labelled)
    assert respec.metadata.generation == 2
    assert batch.delete_namespaced_job("j1", "default")["status"] == "Success"


def test_lease_create_update_conflict(coordination: client.CoordinationV1Api) -> None:
    body = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a"}}
    lease = coordination.create_namespaced_lease("kube-system", body)
    lease.spec.holder_identity = "b"
    newer = coordination.replace_namespaced_lease("leader", "kube-system", lease)
    lease.spec.holder_identity = "c"
    with pytest.raises(ApiException) as info:
        coordination.replace_namespaced_lease("leader", "kube-system", lease)
    assert info.value.status == 409
    assert "the object has been modified" in error_body(info.value)["message"]
    assert coordination.read_namespaced_lease("leader", "kube-system").spec.holder_identity == "b"
    newer.spec.holder_identity = "c"
    assert coordination.replace_namespaced_lease("leader", "kube-system", newer).spec
    with pytest.raises(ApiException) as info:
        coordination.create_namespaced_lease("kube-system", body)
    assert info.value.status == 409


def test_lease_put_may_create(coordination: client.CoordinationV1Api) -> None:
    body = {"metadata": {"name": "fresh"}, "spec": {"holderIdentity": "a"}}
    created = coordination.replace_namespaced_lease("fresh", "default", body)
    assert created.metadata.uid


@pytest.mark.parametrize(("group", "version", "plural", "kind"), NAMESPACED_CUSTOM)
def test_namespaced_custom_object_crud(
    custom: client.CustomObjectsApi, group: str, version: str, plural: str, kind: str
) -> None:
    gv = (group, version)
    body = obj(kind, "x1", "ml", labels={"a": "1"}, spec={"replicas": 1}, status={"ready": 1})
    created = custom.create_namespaced_custom_object(*gv, "ml", plural, body)
    assert "status" not in created, "custom resources drop .status on create"
    assert created["metadata"]["generation"] == 1
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object(*gv, "ml", plural, body)
    assert info.value.status == 409
    listed = custom.list_namespaced_custom_object(*gv, "ml", plural)
    assert listed["kind"] == f"{kind}List"
    assert [i["kind"] for i in listed["items"]] == [kind], "CR list items keep their kind"
    assert custom.list_cluster_custom_object(*gv, plural)["items"] == listed["items"]
    assert custom.list_namespaced_custom_object(*gv, "other", plural)["items"] == []
    created["spec"]["replicas"] = 2
    replaced = custom.replace_namespaced_custom_object(*gv, "ml", plural, "x1", created)
    assert replaced["metadata"]["generation"] == 2
    custom.delete_namespaced_custom_object(*gv, "ml", plural, "x1")
    with pytest.raises(ApiException) as info:
        custom.get_namespaced_custom_object(*gv, "ml", plural, "x1")
    assert info.value.status == 404


def test_cluster_scoped_slices(custom: client.CustomObjectsApi) -> None:
    gv = ("accelerator.gke.io", "v1beta1")
    body = obj("Slice", "s1", spec={"topology": "4x4"}, status={"state": "Ready"})
    created = custom.create_cluster_custom_object(*gv, "slices", body)
    assert "namespace" not in created["metadata"] and "status" not in created
    created["spec"]["topology"] = "8x8"
    replaced = custom.replace_cluster_custom_object(*gv, "slices", "s1", created)
    assert replaced["metadata"]["generation"] == 2
    status = {"status": {"state": "Degraded"}}
    assert custom.patch_cluster_custom_object_status(*gv, "slices", "s1", status)["status"] == {
        "state": "Degraded"
    }
    listed = custom.list_cluster_custom_object(*gv, "slices")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["s1"]
    custom.delete_cluster_custom_object(*gv, "slices", "s1")
    with pytest.raises(ApiException) as info:
        custom.get_cluster_custom_object(*gv, "slices", "s1")
    assert info.value.status == 404


def test_builtin_list_items_omit_type_fields(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create(node("n1"))
    raw = json.loads(core.list_node(_preload_content=False).data)
    assert (raw["kind"], raw["apiVersion"]) == ("NodeList", "v1")
    assert "kind" not in raw["items"][0]
    assert json.loads(core.read_node("n1", _preload_content=False).data)["kind"] == "Node"


def test_delete_preconditions_and_collections(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    created = core.create_node(node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
    stale = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(resource_version=created.metadata.resource_version)
    )
    with pytest.raises(ApiException) as info:
        core.delete_node("n1", body=stale)
    assert info.value.status == 409
    wrong_uid = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="nope"))
    with pytest.raises(ApiException) as info:
        core.delete_node("n1", body=wrong_uid)
    assert "Precondition failed" in error_body(info.value)["message"]
    right = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=created.metadata.uid))
    core.delete_node("n1", body=right)
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        fake_kube.create(pod(name, "ml", labels={"app": app}))
    core.delete_collection_namespaced_pod("ml", label_selector="app=x")
    assert [p["metadata"]["name"] for p in fake_kube.list("pods")] == ["c"]


def test_generate_name_and_missing_name(core: client.CoreV1Api) -> None:
    made = core.create_namespaced_config_map("default", {"metadata": {"generateName": "cm-"}})
    assert made.metadata.name.startswith("cm-") and len(made.metadata.name) == 8
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("default", {"metadata": {}})
    assert info.value.status == 422


def test_unchanged_update_is_a_no_op(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    created = core.create_node(node("n1"))
    again = core.replace_node("n1", core.read_node("n1"))
    assert again.metadata.resource_version == created.metadata.resource_version
    assert fake_kube.resource_version == created.metadata.resource_version


def test_unknown_paths_and_missing_token(fake_kube: FakeKube) -> None:
    def get(path: str, token: str | None) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(fake_kube.endpoint + path)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    code, body = get("/apis/nope/v1/things", fake_kube.token)
    assert (code, body["reason"]) == (404, "NotFound")
    code, body = get("/api/v1/nodes", None)
    assert (code, body["reason"]) == (401, "Unauthorized")
    code, body = get("/version", fake_kube.token)
    assert code == 200 and body["major"] == "1"


def test_discovery_documents(kube_api_client: Any) -> None:
    assert client.VersionApi(kube_api_client).get_code().major == "1"
    assert client.CoreApi(kube_api_client).get_api_versions().versions == ["v1"]
    groups = client.ApisApi(kube_api_client).get_api_versions().groups
    assert {"batch", "jobset.x-k8s.io", "accelerator.gke.io"} <= {g.name for g in groups}
    resources = client.BatchV1Api(kube_api_client).get_api_resources().resources
    assert [r.name for r in resources] == ["jobs", "jobs/status"]
    core_names = {r.name for r in client.CoreV1Api(kube_api_client).get_api_resources().resources}
    assert {"nodes", "nodes/status", "pods", "pods/status", "configmaps"} == core_names
