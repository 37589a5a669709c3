"""PATCH flavours as the official client sends them, and the `/status` subresource rules."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from internal.fakekube import FakeKube
from internal.fakekube.objects import job, node, obj, pod

JS = ("jobset.x-k8s.io", "v1alpha2")


def last_patch_content_type(fake_kube: FakeKube) -> str:
    return next(r.content_type for r in reversed(fake_kube.request_log) if r.verb == "patch")


def test_job_label_patch_uses_strategic_merge(
    batch: client.BatchV1Api, fake_kube: FakeKube
) -> None:
    batch.create_namespaced_job("default", job("j", labels={"keep": "1", "drop": "1"}))
    body = {"metadata": {"labels": {"drop": None, "new": "2"}}}
    patched = batch.patch_namespaced_job("j", "default", body)
    assert patched.metadata.labels == {"keep": "1", "new": "2"}
    assert last_patch_content_type(fake_kube) == "application/strategic-merge-patch+json"


def test_explicit_merge_patch_and_json_patch(batch: client.BatchV1Api, fake_kube: FakeKube) -> None:
    batch.create_namespaced_job("default", job("j", labels={"a": "1"}))
    merged = batch.patch_namespaced_job(
        "j",
        "default",
        {"metadata": {"labels": {"b": "2"}}},
        _content_type="application/merge-patch+json",
    )
    assert merged.metadata.labels == {"a": "1", "b": "2"}
    ops = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "3"},
        {"op": "remove", "path": "/metadata/labels/b"},
    ]
    patched = batch.patch_namespaced_job("j", "default", ops)
    assert patched.metadata.labels == {"a": "3"}
    assert last_patch_content_type(fake_kube) == "application/json-patch+json"
    with pytest.raises(ApiException) as info:
        batch.patch_namespaced_job("j", "default", [{"op": "test", "path": "/x", "value": 1}])
    assert info.value.status == 422


def test_strategic_merge_merges_conditions_by_type(
    core: client.CoreV1Api, fake_kube: FakeKube
) -> None:
    fake_kube.create(node("n1"))
    core.patch_node_status("n1", {"status": {"conditions": [{"type": "TPU", "status": "True"}]}})
    conditions = core.read_node_status("n1").status.conditions
    assert [(c.type, c.status) for c in conditions] == [("Ready", "True"), ("TPU", "True")]
    core.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    conditions = core.read_node("n1").status.conditions
    assert [(c.type, c.status) for c in conditions] == [("Ready", "False"), ("TPU", "True")]


def test_patch_with_stale_resource_version_conflicts(core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version}}
    with pytest.raises(ApiException) as info:
        core.patch_node("n1", stale)
    assert info.value.status == 409
    with pytest.raises(ApiException) as info:
        core.patch_node("missing", {"metadata": {"labels": {"a": "1"}}})
    assert info.value.status == 404


def test_node_main_resource_ignores_status_and_status_ignores_spec(
    core: client.CoreV1Api,
) -> None:
    core.create_node(node("n1"))
    core.patch_node("n1", {"spec": {"unschedulable": True}, "status": {"phase": "Gone"}})
    current = core.read_node("n1")
    assert current.spec.unschedulable is True and current.status.phase is None
    core.patch_node_status("n1", {"spec": {"unschedulable": False}, "status": {"phase": "Up"}})
    current = core.read_node("n1")
    assert current.spec.unschedulable is True and current.status.phase == "Up"


def test_custom_object_status_subresource(
    custom: client.CustomObjectsApi, fake_kube: FakeKube
) -> None:
    body = obj("JobSet", "js", "ml", spec={"suspend": False})
    created = custom.create_namespaced_custom_object(*JS, "ml", "jobsets", body)
    status = {"status": {"conditions": [{"type": "Completed", "status": "True"}]}}
    patched = custom.patch_namespaced_custom_object_status(*JS, "ml", "jobsets", "js", status)
    assert patched["status"] == status["status"]
    assert patched["metadata"]["generation"] == 1, "status changes leave generation alone"
    assert last_patch_content_type(fake_kube) == "application/merge-patch+json"

    sneaky = {"spec": {"suspend": True}, "metadata": {"labels": {"x": "y"}}, "status": {"a": 1}}
    patched = custom.patch_namespaced_custom_object_status(*JS, "ml", "jobsets", "js", sneaky)
    assert patched["spec"] == {"suspend": False}, "/status only changes .status"
    assert "labels" not in patched["metadata"]

    current = custom.get_namespaced_custom_object_status(*JS, "ml", "jobsets", "js")
    current["status"] = {"overwritten": True}
    current["spec"] = {"suspend": True}
    replaced = custom.replace_namespaced_custom_object(*JS, "ml", "jobsets", "js", current)
    assert replaced["spec"] == {"suspend": True} and replaced["metadata"]["generation"] == 2
    assert replaced["status"]["a"] == 1, "main-resource PUT ignores .status"
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )


def test_strategic_merge_is_refused_for_custom_objects(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_namespaced_custom_object(*JS, "ml", "jobsets", obj("JobSet", "js", "ml"))
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object(
            *JS,
            "ml",
            "jobsets",
            "js",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert info.value.status == 415
    assert json.loads(info.value.body)["reason"] == "UnsupportedMediaType"


def test_replace_status_of_a_pod(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create(pod("p", node_name="n1", phase="Pending"))
    current = core.read_namespaced_pod_status("p", "default")
    current.status.phase = "Running"
    current.spec.node_name = "n2"
    updated = core.replace_namespaced_pod_status("p", "default", current)
    assert (updated.status.phase, updated.spec.node_name) == ("Running", "n1")
