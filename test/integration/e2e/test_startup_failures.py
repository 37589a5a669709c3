"""Every start-up failure a user can cause ends ``megamon run`` with one line on stderr,
naming what is wrong and where, and exit status 2 — never a traceback.

Each case runs the real command in a subprocess. Nothing it could reach is alive: the
Kubernetes API, GKE and the metadata server point at a port nobody listens on, and Google's
credential lookup is sent there too (``GCE_METADATA_HOST`` / ``GCE_METADATA_IP``) with no
``GOOGLE_APPLICATION_CREDENTIALS`` and an empty ``HOME``, so no ambient credentials are found.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from internal.fakekube.kubeconfig import write as write_kubeconfig
from test.integration.e2e.harness import free_port

EXIT_USAGE = 2
GKE = {"ProjectID": "p", "ClusterLocation": "us-central2", "ClusterName": "c"}


@pytest.fixture
def dead() -> str:
    """127.0.0.1:<a port nobody listens on>."""
    return f"127.0.0.1:{free_port()}"


@pytest.fixture
def env(tmp_path: Path, dead: str) -> dict[str, str]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://{dead}", "token")
    home = tmp_path / "home"
    home.mkdir()
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "CLOUDSDK_CONFIG"}
        and not k.startswith("KUBERNETES_")
    }
    return {
        **clean,
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "GCE_METADATA_HOST": dead,
        "GCE_METADATA_IP": dead,
    }


def run(tmp_path: Path, env: dict[str, str], config: dict[str, Any] | None) -> tuple[int, str]:
    path = tmp_path / "config.json"
    if config is not None:
        base = {
            "MetricsAddr": "127.0.0.1:0",
            "ProbeAddr": "127.0.0.1:0",
            "EventsLocalDir": str(tmp_path / "history"),
            "AggregationIntervalSeconds": 1,
        }
        path.write_bytes(orjson.dumps({**base, **config}))
    result = subprocess.run(
        [sys.executable, "-m", "megamon", "run", "--config-path", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stderr


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO ")
"""``megamon run``'s own info log (a server that did start says so); anything else is output."""


def assert_one_line(status: int, stderr: str, *fragments: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if not LOG_LINE.match(line)]
    assert len(lines) == 1, stderr
    assert status == EXIT_USAGE, stderr
    assert lines[0].startswith("megamon run: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_gke_without_application_default_credentials(tmp_path: Path, env: dict[str, str]) -> None:
    status, stderr = run(tmp_path, env, {"GKE": GKE})
    assert_one_line(
        status, stderr, "GKE projects/p/locations/us-central2/clusters/c", "credentials"
    )


def test_an_events_bucket_without_credentials(
    tmp_path: Path, env: dict[str, str], dead: str
) -> None:
    gke = {**GKE, "Endpoint": f"http://{dead}"}  # an emulator endpoint needs no credentials
    status, stderr = run(tmp_path, env, {"GKE": gke, "EventsBucketName": "history"})
    assert_one_line(status, stderr, "events bucket", "credentials")


@pytest.mark.parametrize(
    ("key", "addr", "reason"),
    [
        ("MetricsAddr", "8080", "missing port"),
        ("ProbeAddr", "127.0.0.1:99999", "port must be a number"),
        ("MetricsAddr", "::1:8080", "IPv6 host must be in brackets"),
    ],
)
def test_a_malformed_listen_address(
    tmp_path: Path, env: dict[str, str], key: str, addr: str, reason: str
) -> None:
    status, stderr = run(tmp_path, env, {"EnableSimulation": True, key: addr})
    assert_one_line(status, stderr, f"{key}: listen address {addr!r}", reason)


@pytest.fixture
def taken() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("key", ["MetricsAddr", "ProbeAddr"])
def test_a_port_already_in_use(tmp_path: Path, env: dict[str, str], taken: str, key: str) -> None:
    status, stderr = run(tmp_path, env, {"EnableSimulation": True, key: taken})
    assert_one_line(status, stderr, f"{key} {taken!r}", "Address already in use")


def test_a_missing_configuration_file(tmp_path: Path, env: dict[str, str]) -> None:
    status, stderr = run(tmp_path, env, None)
    assert_one_line(status, stderr, "config.json", "cannot read the configuration")


def test_a_configuration_file_that_is_not_json(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "config.json").write_text("MetricsAddr: 8080\n")
    result = subprocess.run(
        [sys.executable, "-m", "megamon", "run", "--config-path", str(tmp_path / "config.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert_one_line(result.returncode, result.stderr, "config.json")


def test_no_kubeconfig(tmp_path: Path, env: dict[str, str]) -> None:
    env = {**env, "KUBECONFIG": str(tmp_path / "absent-kubeconfig")}
    status, stderr = run(tmp_path, env, {"EnableSimulation": True})
    assert_one_line(status, stderr, "no Kubernetes API to talk to")


def test_the_metadata_server_unreachable_with_the_cluster_not_configured(
    tmp_path: Path, env: dict[str, str]
) -> None:
    status, stderr = run(tmp_path, env, {})
    assert_one_line(status, stderr, "GKE.ProjectID is not configured", "metadata server")


def test_a_history_directory_that_cannot_be_created(tmp_path: Path, env: dict[str, str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    gke = {**GKE, "Endpoint": "http://127.0.0.1:9"}
    status, stderr = run(tmp_path, env, {"GKE": gke, "EventsLocalDir": str(blocker / "history")})
    assert_one_line(status, stderr, "EventsLocalDir", "cannot create it")


def test_secure_metrics_with_missing_certificate_files(tmp_path: Path, env: dict[str, str]) -> None:
    config = {"EnableSimulation": True, "MetricsTLS": True, "MetricsCertDir": str(tmp_path)}
    status, stderr = run(tmp_path, env, config)
    assert_one_line(status, stderr, "metrics TLS", "tls.crt")
