"""Every Kubernetes write megamon makes fails with megamon's error type, whatever went wrong:
an HTTP error from the API server, or no API server at all (the transport's errors, which the
client does not wrap). Real client, real sockets: the emulator, and a port nobody listens on."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes import config as kube_config

from internal.fakekube.fakekube import FakeKube
from megamon.config import ConfigMapRef
from megamon.domain.reports import Report, ScheduledJob
from megamon.errors import SourceError
from megamon.publishing.exporters.base import ExportError
from megamon.publishing.joblabels import JobLabeler
from megamon.sources.kube.calls import ApiError
from megamon.sources.kube.configmaps import ConfigMapKey

REF = ConfigMapRef(Namespace="megamon-system", Name="megamon-slice-owner-map")


def dead_port() -> int:
    """A port on 127.0.0.1 that refuses connections (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def unreachable() -> Iterator[k8s.ApiClient]:
    configuration = k8s.Configuration()
    configuration.host = f"http://127.0.0.1:{dead_port()}"
    configuration.retries = 0
    api = k8s.ApiClient(configuration)
    yield api
    api.close()


@pytest.fixture
def kube(tmp_path: object) -> Iterator[tuple[FakeKube, k8s.ApiClient]]:
    with FakeKube() as server:
        path = server.write_kubeconfig(f"{tmp_path}/kubeconfig")
        api = kube_config.new_client_from_config(config_file=str(path))
        yield server, api
        api.close()


def scheduled(pool: str = "np") -> Report:
    job = ScheduledJob(job_name="train-leader-0", jobset_name="train", namespace="team")
    return Report(generated_at=0, scheduling={pool: job})


def test_a_configmap_on_an_unreachable_api_server_fails_as_a_source_error(
    unreachable: k8s.ApiClient,
) -> None:
    key = ConfigMapKey(unreachable, REF, "slice-owner-map.json")
    with pytest.raises(SourceError, match="unreachable"):
        key.read()
    with pytest.raises(SourceError, match="unreachable"):
        key.write("{}")


def test_an_http_error_names_its_status(kube: tuple[FakeKube, k8s.ApiClient]) -> None:
    server, api = kube
    server.fail_next(1, status=500, path_prefix="/api/v1/namespaces/megamon-system/configmaps")
    with pytest.raises(ApiError, match="HTTP 500") as raised:
        ConfigMapKey(api, REF, "k").read()
    assert raised.value.status == 500


def test_job_labelling_on_an_unreachable_api_server_fails_this_exporter_only(
    unreachable: k8s.ApiClient,
) -> None:
    labeler = JobLabeler(unreachable)
    with pytest.raises(ExportError, match=r"1 job\(s\) not labelled.*unreachable"):
        labeler.export(scheduled())


def test_job_labelling_patches_each_job_once_and_retries_one_that_failed(
    kube: tuple[FakeKube, k8s.ApiClient],
) -> None:
    server, api = kube
    batch = k8s.BatchV1Api(api)
    container = {"name": "w", "image": "busybox"}
    template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    body = {"metadata": {"name": "train-leader-0"}, "spec": {"template": template}}
    batch.create_namespaced_job("team", body)
    labeler = JobLabeler(api)
    server.fail_next(1, status=500, verb="patch")
    with pytest.raises(ExportError, match="HTTP 500"):
        labeler.export(scheduled())
    labeler.export(scheduled())
    labeler.export(scheduled())
    job = batch.read_namespaced_job("train-leader-0", "team")
    assert job.metadata.labels["megamon.tbd/scheduled-node-pool"] == "np"
    assert server.request_count(verb="patch") == 2  # the failed one, then one that landed
