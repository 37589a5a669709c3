"""A described kind that lists several versions is read at the first one the cluster serves,
chosen by discovery at every listing (Kueue's Workloads: v1beta2, else v1beta1), with the
real kubernetes client against the Kubernetes emulator."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from internal.fakekube.fakekube import FakeKube
from megamon.domain.descriptions import shipped
from megamon.sources.kube.resources import ServedVersionLister, described_lister, first_served

WORKLOADS = "workloads.kueue.x-k8s.io"
KUEUE = shipped("kueue-workload")


def workload(name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"podSets": [{"name": "main", "count": 1}]},
    }


def listed_versions(lister: ServedVersionLister) -> list[str]:
    response = lister(_preload_content=False)
    return [item["apiVersion"] for item in orjson.loads(response.data)["items"]]


def test_first_served_keeps_the_order_of_preference() -> None:
    assert first_served(["v1beta2", "v1beta1"], {"v1beta1", "v1beta2"}.__contains__) == "v1beta2"
    assert first_served(["v1beta2", "v1beta1"], {"v1beta1"}.__contains__) == "v1beta1"
    assert first_served(["v1beta2", "v1beta1"], set().__contains__) is None


def test_one_version_needs_no_discovery(kube_api_client: Any) -> None:
    trainjob = shipped("trainjob")
    assert not isinstance(described_lister(kube_api_client, trainjob), ServedVersionLister)


@pytest.mark.parametrize(
    ("served", "chosen"),
    [(("v1beta2", "v1beta1"), "v1beta2"), (("v1beta2",), "v1beta2"), (("v1beta1",), "v1beta1")],
)
def test_the_newest_served_version_is_read_and_logged(
    fake_kube: FakeKube,
    kube_api_client: Any,
    caplog: pytest.LogCaptureFixture,
    served: tuple[str, ...],
    chosen: str,
) -> None:
    fake_kube.serve_versions(WORKLOADS, *served)
    fake_kube.create(workload("a", served[-1]))
    lister = described_lister(kube_api_client, KUEUE)
    assert isinstance(lister, ServedVersionLister)
    with caplog.at_level(logging.INFO, "megamon.sources.kube.resources"):
        assert listed_versions(lister) == [f"kueue.x-k8s.io/{chosen}"]
    assert lister.version == chosen
    assert f"kueue_workload: reading workloads.kueue.x-k8s.io at {chosen}" in caplog.text


def test_a_change_of_the_served_versions_is_followed_at_the_next_listing(
    fake_kube: FakeKube, kube_api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fake_kube.serve_versions(WORKLOADS, "v1beta1")
    fake_kube.create(workload("a", "v1beta1"))
    lister = described_lister(kube_api_client, KUEUE)
    assert isinstance(lister, ServedVersionLister)
    listed_versions(lister)
    assert lister.version == "v1beta1"
    fake_kube.serve_versions(WORKLOADS, "v1beta2")  # Kueue upgraded, v1beta1 removed
    with caplog.at_level(logging.INFO, "megamon.sources.kube.resources"):
        assert listed_versions(lister) == ["kueue.x-k8s.io/v1beta2"]
        listed_versions(lister)
    assert caplog.text.count("reading workloads.kueue.x-k8s.io at") == 1, "logged on change"


def test_no_version_served_is_not_served(fake_kube: FakeKube, kube_api_client: Any) -> None:
    fake_kube.serve_versions(WORKLOADS)
    lister = described_lister(kube_api_client, KUEUE)
    with pytest.raises(ApiException) as caught:
        lister(_preload_content=False)
    assert caught.value.status == 404
    assert "none of v1beta2, v1beta1 is served" in str(caught.value.reason)
