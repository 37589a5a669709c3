"""The node pool lister with the real ClusterManagerClient against the GKE emulator, and the
metadata-server lookup of a config that leaves the cluster out."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from internal.fakegke import FakeGke, tpu_node_pool
from megamon.config import GKEConfig
from megamon.errors import SourceError
from megamon.sources.gke.lister import GkeNodePoolLister, make_client
from megamon.sources.gke.metadata import METADATA_HOST_ENV, resolve
from megamon.sources.gke.views import NodePoolView
from megamon.telemetry import Instruments

REF = "projects/p/locations/us-east5/clusters/c"


def lister(
    fake: FakeGke, registry: CollectorRegistry | None = None, **kw: float
) -> GkeNodePoolLister:
    instruments = Instruments("megamon", registry) if registry else None
    return GkeNodePoolLister(
        REF, make_client(fake.endpoint), instruments=instruments, initial_backoff=0.01, **kw
    )


def test_tpu_pools_are_listed_with_what_megamon_needs(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool("p", "us-east5", "c", tpu_node_pool("np", status="ERROR", spot=True))
    registry = CollectorRegistry()
    assert lister(fake_gke, registry).list_node_pools() == [
        NodePoolView("np", "ERROR", "ct5lp-hightpu-4t", "16x16", "tpu-v5-lite-podslice", True)
    ]
    calls = {"method": "ListNodePools", "error": "false"}
    assert registry.get_sample_value("megamon_gke_latency_seconds_count", calls) == 1.0


def test_403_is_a_clear_error(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool("p", "us-east5", "c", tpu_node_pool("np"))
    fake_gke.inject_fault(status=403, count=1)
    with pytest.raises(SourceError, match=f"GKE ListNodePools {REF}: 403"):
        lister(fake_gke).list_node_pools()


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_errors_are_retried(fake_gke: FakeGke, status: int) -> None:
    fake_gke.put_node_pool("p", "us-east5", "c", tpu_node_pool("np"))
    fake_gke.inject_fault(status=status, count=3)
    assert [p.name for p in lister(fake_gke).list_node_pools()] == ["np"]


def test_a_slow_api_times_out_within_the_deadline(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool("p", "us-east5", "c", tpu_node_pool("np"))
    fake_gke.inject_fault(latency_seconds=2.0, count=100)
    with pytest.raises(SourceError, match="gave up"):
        lister(fake_gke, timeout=0.2, deadline=1.0).list_node_pools()


class _Metadata(http.server.BaseHTTPRequestHandler):
    answers = {
        "/computeMetadata/v1/project/project-id": "my-project",
        "/computeMetadata/v1/instance/attributes/cluster-location": "us-east5",
        "/computeMetadata/v1/instance/attributes/cluster-name": "tpu-cluster",
    }

    def do_GET(self) -> None:
        answer = self.answers.get(self.path)
        ok = answer is not None and self.headers.get("Metadata-Flavor") == "Google"
        self.send_response(200 if ok else 404)
        self.end_headers()
        self.wfile.write((answer or "").encode())

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def metadata_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metadata)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host = f"127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv(METADATA_HOST_ENV, host)
    yield host
    server.shutdown()
    server.server_close()


def test_missing_cluster_settings_come_from_the_metadata_server(metadata_server: str) -> None:
    got = resolve(GKEConfig(ClusterName="given"))
    assert (got.ProjectID, got.ClusterLocation, got.ClusterName) == (
        "my-project",
        "us-east5",
        "given",
    )


def test_an_unreachable_metadata_server_names_the_missing_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(METADATA_HOST_ENV, "127.0.0.1:9")
    with pytest.raises(SourceError, match=r"GKE\.ProjectID is not configured"):
        resolve(GKEConfig(), timeout=0.5)


def test_a_status_newer_than_the_client_is_read_as_its_raw_value(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool("p", "us-east5", "c", tpu_node_pool("np"))
    future = tpu_node_pool("future")
    future["status"] = 99  # a NodePool.Status value added after this client was built
    fake_gke.put_node_pool("p", "us-east5", "c", future)
    pools = {p.name: p.status for p in lister(fake_gke).list_node_pools()}
    assert pools == {"np": "RUNNING", "future": "99"}


class _Unreadable:
    name = "broken"

    @property
    def config(self) -> Any:
        raise TypeError("a field this client cannot decode")


def test_a_pool_that_cannot_be_read_is_skipped_alone_and_counted_once(
    fake_gke: FakeGke, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    pools = lister(fake_gke, registry)
    fake_gke.put_node_pool("p", "us-east5", "c", tpu_node_pool("np"))
    real = make_client(fake_gke.endpoint).list_node_pools(parent=REF).node_pools
    for _ in range(3):
        assert [v.name for v in pools._views([*real, _Unreadable()])] == ["np"]
    count = registry.get_sample_value(
        "megamon_observation_errors_total", {"kind": "nodepool", "reason": "unexpected"}
    )
    assert count == 1.0
    assert caplog.text.count("node pool broken skipped: TypeError") == 1
