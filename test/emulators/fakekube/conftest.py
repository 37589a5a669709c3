"""Fixtures for the fakekube tests: the emulator and an official client bound to it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from internal.fakekube.fixtures import fake_kube, kube_api_client  # noqa: F401


@pytest.fixture
def core(kube_api_client: Any) -> client.CoreV1Api:  # noqa: F811
    return client.CoreV1Api(kube_api_client)


@pytest.fixture
def batch(kube_api_client: Any) -> client.BatchV1Api:  # noqa: F811
    return client.BatchV1Api(kube_api_client)


@pytest.fixture
def coordination(kube_api_client: Any) -> client.CoordinationV1Api:  # noqa: F811
    return client.CoordinationV1Api(kube_api_client)


@pytest.fixture
def custom(kube_api_client: Any) -> client.CustomObjectsApi:  # noqa: F811
    return client.CustomObjectsApi(kube_api_client)
