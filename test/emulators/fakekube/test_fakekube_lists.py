"""Label and field selectors, limit/continue pagination, raw lists and listing at a version."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from internal.fakekube import FakeKube
from internal.fakekube.objects import node, pod

POOLS = {"n1": "a", "n2": "a", "n3": "b", "n4": "c"}


@pytest.fixture
def labelled_nodes(fake_kube: FakeKube) -> None:
    for name, pool in POOLS.items():
        labels = {"pool": pool, "tpu": "v5e"} if pool != "c" else {"pool": pool}
        fake_kube.create(node(name, labels=labels))


def names(node_list: client.V1NodeList) -> list[str]:
    return [n.metadata.name for n in node_list.items]


@pytest.mark.usefixtures("labelled_nodes")
@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("pool=a", ["n1", "n2"]),
        ("pool==b", ["n3"]),
        ("pool!=a", ["n3", "n4"]),
        ("pool in (a,c)", ["n1", "n2", "n4"]),
        ("pool notin (a, b)", ["n4"]),
        ("tpu", ["n1", "n2", "n3"]),
        ("!tpu", ["n4"]),
        ("tpu!=v5e", ["n4"]),
        ("pool=a,tpu=v5e", ["n1", "n2"]),
        ("missing notin (x)", ["n1", "n2", "n3", "n4"]),
    ],
)
def test_label_selectors(core: client.CoreV1Api, selector: str, expected: list[str]) -> None:
    assert names(core.list_node(label_selector=selector)) == expected


def test_bad_selectors_answer_400(core: client.CoreV1Api) -> None:
    for kwargs in ({"label_selector": "pool in (a"}, {"field_selector": "spec.bogus=1"}):
        with pytest.raises(ApiException) as info:
            core.list_node(**kwargs)
        assert info.value.status == 400


def test_field_selectors_on_pods(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create(pod("a", "ml", node_name="n1"))
    fake_kube.create(pod("b", "ml", node_name="n2"))
    fake_kube.create(pod("c", "web"))
    fake_kube.create(pod("d", "web", node_name="n1", phase="Succeeded"))

    def listed(selector: str) -> list[str]:
        items = core.list_pod_for_all_namespaces(field_selector=selector).items
        return [p.metadata.name for p in items]

    assert listed("spec.nodeName=n1") == ["a", "d"]
    assert listed("spec.nodeName!=") == ["a", "b", "d"], "scheduled pods"
    assert listed("spec.nodeName=") == ["c"], "an unset field compares as empty"
    assert listed("metadata.namespace=web,status.phase!=Succeeded") == ["c"]
    assert listed("metadata.name=b") == ["b"]
    only = core.list_namespaced_pod("ml", field_selector="spec.nodeName=n1").items
    assert [p.metadata.name for p in only] == ["a"]


def test_pagination_over_250_nodes(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create_many(node(f"node-{i:03d}") for i in range(250))
    seen: list[str] = []
    pages = 0
    token = None
    first_rv = None
    while True:
        page = core.list_node(limit=100, _continue=token)
        pages += 1
        first_rv = first_rv or page.metadata.resource_version
        assert page.metadata.resource_version == first_rv, "all pages share one snapshot"
        seen.extend(names(page))
        token = page.metadata._continue
        if pages == 1:
            assert page.metadata.remaining_item_count == 150
            fake_kube.delete("Node", "node-249")
            fake_kube.create(node("node-250"))
        if not token:
            break
    assert pages == 3
    assert seen == [f"node-{i:03d}" for i in range(250)], "the snapshot hides later writes"
    assert len(core.list_node().items) == 250


def test_limit_with_selector_may_return_short_pages(
    core: client.CoreV1Api, fake_kube: FakeKube
) -> None:
    fake_kube.create_many(
        node(f"n{i:02d}", labels={"even": str(i % 2 == 0).lower()}) for i in range(10)
    )
    collected: list[str] = []
    token = None
    while True:
        page = core.list_node(limit=3, label_selector="even=true", _continue=token)
        assert page.metadata.remaining_item_count is None
        collected += names(page)
        token = page.metadata._continue
        if not token:
            break
    assert collected == ["n00", "n02", "n04", "n06", "n08"]


def test_raw_list_without_preloading(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create_many(node(f"n{i}") for i in range(3))
    response = core.list_node(limit=2, _preload_content=False)
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json"
    raw = json.loads(response.data)
    assert raw["kind"] == "NodeList" and raw["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in raw["items"]] == ["n0", "n1"]
    assert raw["metadata"]["resourceVersion"] == fake_kube.resource_version
    assert raw["metadata"]["continue"]


def test_expired_continue_answers_410(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create_many(node(f"n{i}") for i in range(5))
    first = core.list_node(limit=2)
    fake_kube.compact()
    with pytest.raises(ApiException) as info:
        core.list_node(limit=2, _continue=first.metadata._continue)
    body = json.loads(info.value.body)
    assert (info.value.status, body["reason"]) == (410, "Expired")
    inconsistent = core.list_node(limit=10, _continue=body["metadata"]["continue"])
    assert names(inconsistent) == ["n2", "n3", "n4"], "the 410's token continues at latest"


def test_list_at_exact_version(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create(node("n1"))
    version = fake_kube.resource_version
    fake_kube.create(node("n2"))
    fake_kube.delete("Node", "n1")
    past = core.list_node(resource_version=version, resource_version_match="Exact")
    assert names(past) == ["n1"] and past.metadata.resource_version == version
    assert names(core.list_node(resource_version="0")) == ["n2"]
    with pytest.raises(ApiException) as info:
        core.list_node(resource_version="999999", resource_version_match="NotOlderThan")
    assert info.value.status == 504
