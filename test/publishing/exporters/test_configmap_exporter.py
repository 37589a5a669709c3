"""The ConfigMap exporter against the Kubernetes API emulator: the ConfigMap is created by
the first report and replaced by the next, other keys survive, and an API server that
refuses or cannot be reached gives one error naming the ConfigMap."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from kubernetes import client as k8s

from internal.fakekube.fakekube import FakeKube
from megamon.codec import report as report_codec
from megamon.config import ConfigMapRef
from megamon.domain import timestamps
from megamon.errors import MegamonError, SourceError
from megamon.publishing import exporters
from test.publishing.exporters.reports import MINUTE, report_at

REF = ConfigMapRef(Namespace="megamon-system", Name="megamon-report")
T0 = timestamps.parse("2026-05-04T18:00:00Z")


@pytest.fixture
def core(kube_api_client: Any) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube_api_client)


def stored_data(core: k8s.CoreV1Api) -> dict[str, str]:
    found = core.read_namespaced_config_map(REF.Name, REF.Namespace)
    assert found.data is not None
    return found.data


def stored_report(core: k8s.CoreV1Api) -> Any:
    return orjson.loads(stored_data(core)[exporters.REPORT_KEY])


def resource_version(core: k8s.CoreV1Api) -> str | None:
    metadata = core.read_namespaced_config_map(REF.Name, REF.Namespace).metadata
    assert metadata is not None
    return metadata.resource_version


def test_the_first_report_creates_the_configmap_and_the_next_replaces_it(
    kube_api_client: Any, core: k8s.CoreV1Api
) -> None:
    exporter = exporters.ConfigMapExporter(kube_api_client, REF)
    first, second = report_at(T0, ready=15), report_at(T0 + MINUTE)

    exporter.export(first)
    assert stored_report(core) == report_codec.report_dict(first)
    version = resource_version(core)

    exporter.export(second)
    assert resource_version(core) != version
    assert stored_report(core) == report_codec.report_dict(second)
    assert stored_report(core)["nodePoolsUp"]["np-a"]["readyCount"] == 16


def test_other_keys_of_the_configmap_are_kept(kube_api_client: Any, core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map(
        REF.Namespace,
        k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name=REF.Name, namespace=REF.Namespace),
            data={"note": "kept"},
        ),
    )
    exporters.ConfigMapExporter(kube_api_client, REF).export(report_at(T0))
    data = stored_data(core)
    assert data["note"] == "kept"
    assert orjson.loads(data["report"])["generatedAt"] == "2026-05-04T18:00:00Z"


def test_a_refused_write_names_the_configmap(fake_kube: FakeKube, kube_api_client: Any) -> None:
    fake_kube.fail_next(1, status=403, verb="create")
    with pytest.raises(SourceError) as caught:
        exporters.ConfigMapExporter(kube_api_client, REF).export(report_at(T0))
    message = str(caught.value)
    assert message.startswith("configmap megamon-system/megamon-report key report: write:")
    assert "403" in message and "\n" not in message


def test_an_unreachable_api_server_is_a_source_error_naming_the_configmap(
    fake_kube: FakeKube, kube_api_client: Any
) -> None:
    fake_kube.stop()
    with pytest.raises(SourceError) as caught:
        exporters.ConfigMapExporter(kube_api_client, REF).export(report_at(T0))
    message = str(caught.value)
    assert message.startswith("configmap megamon-system/megamon-report key report: read:")
    assert "unreachable" in message and isinstance(caught.value, MegamonError)
