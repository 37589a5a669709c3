"""Pytest fixtures for the fake GKE server (use as a plugin or import the fixtures).

Why: every test that touches GKE needs a fresh fake and a real client pointed at it; doing
that in fixtures guarantees the server is stopped and the client's HTTP session closed even
when a test fails, so no thread or socket leaks into the next test.

Use either ``pytest_plugins = ["internal.fakegke.fixtures"]`` in a root conftest, or
``from internal.fakegke.fixtures import fake_gke, gke_client  # noqa: F401`` in a conftest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.cloud.container_v1 import ClusterManagerClient

from internal.fakegke.client import rest_client
from internal.fakegke.server import FakeGke


@pytest.fixture
def fake_gke() -> Iterator[FakeGke]:
    """A started ``FakeGke`` on a free 127.0.0.1 port, stopped after the test."""
    with FakeGke() as server:
        yield server


@pytest.fixture
def gke_client(fake_gke: FakeGke) -> Iterator[ClusterManagerClient]:
    """The real REST ``ClusterManagerClient`` pointed at ``fake_gke``."""
    client = rest_client(fake_gke.endpoint)
    yield client
    client.transport.close()  # type: ignore[no-untyped-call]
