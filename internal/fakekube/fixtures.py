"""Pytest fixtures for tests that need a Kubernetes API: import them into a conftest.

    from internal.fakekube.fixtures import fake_kube, kube_api_client  # noqa: F401

`fake_kube` is a started emulator, one per test so no state leaks between tests, with short
bookmark intervals so watch tests stay fast. `kube_api_client` is an official-client
`ApiClient` built from the kubeconfig the emulator wrote, never from the user's
~/.kube/config, so a test can never reach a real cluster. The emulator's own internal errors
fail the test at teardown rather than hiding behind a 500 the client retried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from internal.fakekube.fakekube import FakeKube


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    """A running emulator for this test; stopped (and checked for internal errors) after."""
    kube = FakeKube(bookmark_interval=0.2, watch_timeout=30.0)
    kube.start()
    try:
        yield kube
    finally:
        kube.stop()
    assert not kube.server_errors, "fakekube internal errors:\n" + "\n".join(kube.server_errors)


@pytest.fixture
def kube_api_client(fake_kube: FakeKube, tmp_path: Path) -> Iterator[Any]:
    """A `kubernetes.client.ApiClient` configured from the emulator's kubeconfig."""
    path = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    new_client: Callable[..., Any] = config.new_client_from_config
    client = new_client(config_file=str(path))
    try:
        yield client
    finally:
        client.close()
