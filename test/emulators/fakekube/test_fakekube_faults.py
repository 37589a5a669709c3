"""Fault injection, the admin endpoint, restarts and the command line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from internal.fakekube import FakeKube
from internal.fakekube.objects import node


def admin(kube: FakeKube, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        kube.endpoint + path, data=data, method="POST" if data else "GET"
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def test_injected_500_fails_only_matching_requests(
    core: client.CoreV1Api, fake_kube: FakeKube
) -> None:
    fake_kube.create(node("n1"))
    fake_kube.fail_next(2, path_prefix="/api/v1/nodes", verb="list")
    core.read_node("n1")  # a get does not match
    for _ in range(2):
        with pytest.raises(ApiException) as info:
            core.list_node()
        assert info.value.status == 500
        assert json.loads(info.value.body)["reason"] == "InternalError"
    assert len(core.list_node().items) == 1


def test_retry_after_is_honoured_by_the_client(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.fail_next(1, status=429, retry_after=1)
    started = time.monotonic()
    assert core.list_node().items == [], "urllib3 waited and retried by itself"
    assert time.monotonic() - started >= 1 and fake_kube.request_count("list") == 2
    fake_kube.fail_next(None, status=429, retry_after=0)
    with pytest.raises(ApiException) as info:
        core.list_node()
    assert info.value.status == 429 and info.value.headers["Retry-After"] == "0"
    assert fake_kube.request_count("list") == 6, "one try and urllib3's three retries"
    with pytest.raises(ApiException):
        core.create_node(node("n1"))
    assert fake_kube.request_count("create") == 1, "POST is never retried"


def test_delay(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.faults.delay_next(0.3, verb="list")
    started = time.monotonic()
    core.list_node()
    assert time.monotonic() - started >= 0.3


def test_admin_endpoint(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    answer = admin(fake_kube, "/admin/faults", {"status": 503, "count": 1, "verb": "get"})
    assert answer["fault"]["status"] == 503
    with pytest.raises(ApiException) as info:
        core.read_node("n1")
    assert info.value.status == 503
    with pytest.raises(ApiException) as info:
        core.read_node("n1")
    assert info.value.status == 404, "the fault was used up"
    counts = admin(fake_kube, "/admin/requests")["requests"]
    assert {"verb": "get", "resource": "nodes", "count": 2} in counts
    assert admin(fake_kube, "/admin/faults", {"action": "compact"})["floor"] >= 1
    assert admin(fake_kube, "/admin/faults", {"action": "drop_watches"}) == {"dropped": 0}


def test_restart_keeps_state_and_port(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    core.create_node(node("n1"))
    port, version = fake_kube.port, fake_kube.resource_version
    fake_kube.restart()
    assert fake_kube.port == port
    assert core.read_node("n1").metadata.resource_version == version
    core.create_node(node("n2"))
    assert int(fake_kube.resource_version) == int(version) + 1


def test_restart_breaks_open_watches(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    fake_kube.create(node("n1"))
    stream = watch.Watch()
    events = stream.stream(core.list_node, resource_version="0", timeout_seconds=30)
    assert next(events)["type"] == "ADDED"
    fake_kube.restart()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(events)


def test_restart_over_admin_endpoint(core: client.CoreV1Api, fake_kube: FakeKube) -> None:
    core.create_node(node("n1"))
    assert admin(fake_kube, "/admin/faults", {"action": "restart"})["restarting"] is True
    deadline = time.monotonic() + 5
    while fake_kube.running and time.monotonic() < deadline:  # wait for the stop...
        time.sleep(0.01)
    while not fake_kube.running and time.monotonic() < deadline:  # ...and the start
        time.sleep(0.01)
    assert core.read_node("n1").metadata.name == "n1"


def test_command_line_serves_until_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    process = subprocess.Popen(
        [sys.executable, "-m", "internal.fakekube", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("fakekube serving at http://127.0.0.1:")
        assert process.stdout.readline().startswith("kubeconfig:")
        with config.new_client_from_config(config_file=str(kubeconfig)) as api:
            assert client.CoreV1Api(api).list_node().items == []
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
