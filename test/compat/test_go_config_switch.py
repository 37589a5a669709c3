"""A Go megamon's config.json, switched over unchanged, keeps its scrape working.

The Go megamon's ``SecureMetrics`` (true by default) configured controller-runtime's metrics
server, which it never started: its ``/metrics`` on ``MetricsAddr`` was plain HTTP without
authentication. megamon keeps that: ``SecureMetrics`` changes nothing, and only its own
``MetricsTLS`` turns on TLS and bearer-token authorisation (docs/migrating.md).
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config as kube_config

from internal.fakekube.fakekube import FakeKube
from megamon.config import parse_config
from test.integration.e2e.harness import MegamonProcess, value

pytestmark = pytest.mark.integration

GO_CONFIG = {
    "MetricsPrefix": "megamon",
    "AggregationIntervalSeconds": 1,
    "SecureMetrics": True,
    "EnableLeaderElection": False,
    "EnableSimulation": True,
    "Exporters": [],
}
"""The keys of the Go megamon's shipped config that matter here, as it ships them."""


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    with FakeKube(bookmark_interval=0.5) as kube:
        path = kube.write_kubeconfig(tmp_path / "kubeconfig")
        api = kube_config.new_client_from_config(config_file=str(path))
        yield path
        api.close()


def test_secure_metrics_alone_changes_nothing_in_the_configuration() -> None:
    go = parse_config(b'{"SecureMetrics": true}', "go.json")
    assert go.SecureMetrics and not go.MetricsTLS
    assert parse_config(b"{}", "c").SecureMetrics  # the Go megamon's default, too


def test_a_go_config_with_secure_metrics_serves_plain_metrics(
    tmp_path: Path, kubeconfig: Path
) -> None:
    env = {"KUBECONFIG": str(kubeconfig), "GCE_METADATA_HOST": "127.0.0.1:9"}
    megamon = MegamonProcess(tmp_path, {**GO_CONFIG, "EventsLocalDir": str(tmp_path / "h")}, env)
    megamon.start()
    try:
        samples = megamon.settle(
            lambda s: value(s, "megamon_last_report_timestamp_seconds") is not None, "a report"
        )
        assert value(samples, "megamon_leader") == 1.0
        with pytest.raises(OSError):  # nothing speaks TLS there: a plain HTTP server
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            url = f"https://127.0.0.1:{megamon.metrics_port}/metrics"
            urllib.request.urlopen(url, timeout=5, context=context)
    finally:
        assert megamon.stop() == 0
