"""The direct (no HTTP) Python API tests use to play kubelet and controllers."""

from __future__ import annotations

import pytest
from kubernetes import client, watch

from internal.fakekube import ApiError, FakeKube
from internal.fakekube.objects import node, obj, pod
from internal.fakekube.patching import json_patch, merge_patch, strategic_merge_patch
from internal.fakekube.selectors import SelectorError, parse_label_selector


def test_direct_writes_keep_status_and_return_copies(fake_kube: FakeKube) -> None:
    created = fake_kube.create(pod("p", "ml", node_name="n1", phase="Running"))
    assert created["status"] == {"phase": "Running"}, "no create strategy without HTTP"
    created["metadata"]["labels"] = {"mutated": "yes"}
    assert "labels" not in fake_kube.get("Pod", "p", "ml")["metadata"]
    with pytest.raises(ApiError) as info:
        fake_kube.create(pod("p", "ml"))
    assert info.value.code == 409


def test_update_apply_patch_delete(fake_kube: FakeKube) -> None:
    first = fake_kube.create(node("n1"))
    second = fake_kube.patch_status("nodes", "n1", {"phase": "Up"})
    assert second["status"]["phase"] == "Up"
    with pytest.raises(ApiError) as info:
        fake_kube.update(first)
    assert info.value.reason == "Conflict"
    second["spec"] = {"unschedulable": True}
    assert fake_kube.update(second)["spec"] == {"unschedulable": True}
    applied = fake_kube.apply(node("n1", labels={"a": "b"}))
    assert applied["metadata"]["uid"] == first["metadata"]["uid"], "apply replaces in place"
    assert fake_kube.apply(node("n2"))["metadata"]["resourceVersion"]
    fake_kube.delete("Node", "n1")
    with pytest.raises(ApiError) as info:
        fake_kube.get("node", "n1")
    assert info.value.code == 404
    with pytest.raises(KeyError):
        fake_kube.get("Gadget", "x")


def test_direct_list_with_selectors(fake_kube: FakeKube) -> None:
    fake_kube.create(pod("a", "ml", labels={"app": "x"}))
    fake_kube.create(pod("b", "web", labels={"app": "x"}))
    fake_kube.create(obj("Slice", "s1", labels={"app": "x"}))
    assert [p["metadata"]["name"] for p in fake_kube.list("pods", label_selector="app=x")] == [
        "a",
        "b",
    ]
    assert [p["metadata"]["name"] for p in fake_kube.list("pods", "web")] == ["b"]
    assert len(fake_kube.list("slices.accelerator.gke.io", field_selector="metadata.name=s1")) == 1


def test_direct_writes_reach_http_watchers(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create(node("seed"))
    version = fake_kube.resource_version
    fake_kube.create(node("n1"))
    fake_kube.delete("Node", "n1")
    stream = watch.Watch()
    types = []
    for event in stream.stream(core.list_node, resource_version=version, timeout_seconds=5):
        types.append(event["type"])
        if len(types) == 2:
            stream.stop()
    assert types == ["ADDED", "DELETED"]
    assert fake_kube.request_count(verb="watch") == 1
    assert fake_kube.request_count(resource="nodes") == 1


def test_patch_helpers() -> None:
    target = {"a": {"b": 1, "c": [1, 2]}, "keep": True}
    assert merge_patch(target, {"a": {"b": None, "c": [3]}}) == {"a": {"c": [3]}, "keep": True}
    assert target == {"a": {"b": 1, "c": [1, 2]}, "keep": True}, "inputs are not mutated"
    status = {"conditions": [{"type": "A", "status": "1"}, {"type": "B", "status": "1"}]}
    patch = {"conditions": [{"type": "B", "$patch": "delete"}, {"type": "C", "status": "1"}]}
    merged = strategic_merge_patch(status, patch)
    assert [c["type"] for c in merged["conditions"]] == ["A", "C"]
    assert strategic_merge_patch({"x": {"y": 1}}, {"x": {"$patch": "replace", "z": 2}}) == {
        "x": {"z": 2}
    }
    assert strategic_merge_patch({"finalizers": ["a"]}, {"finalizers": ["b", "a"]}) == {
        "finalizers": ["a", "b"]
    }
    ops = [
        {"op": "add", "path": "/l/-", "value": 3},
        {"op": "move", "from": "/m", "path": "/n"},
        {"op": "copy", "from": "/l/0", "path": "/first"},
        {"op": "add", "path": "/a~1b", "value": 1},
    ]
    assert json_patch({"l": [1, 2], "m": "x"}, ops) == {
        "l": [1, 2, 3],
        "n": "x",
        "first": 1,
        "a/b": 1,
    }


def test_selector_parsing_rejects_garbage() -> None:
    assert len(parse_label_selector("a=b, c in (d,e), !f, g>3")) == 4
    for bad in ("a in (b", "=b", "a==b==c", "a b", "-bad=1", "g>x"):
        with pytest.raises(SelectorError):
            parse_label_selector(bad)
