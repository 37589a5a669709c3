"""Fixtures of the fleet tests: both emulators, real clients on them, and a ``Fleet``."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from internal.fakegke import FakeGke
from internal.fakegke.fixtures import fake_gke, gke_client
from internal.fakekube import FakeKube
from internal.fakekube.fixtures import fake_kube, kube_api_client
from internal.fleet import Fleet

__all__ = [
    "batch",
    "core",
    "custom",
    "fake_gke",
    "fake_kube",
    "fleet",
    "gke_client",
    "kube_api_client",
]

PROJECT, LOCATION, CLUSTER = "megamon-test", "us-east5", "tpu-test"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER}"


@pytest.fixture
def fleet(fake_gke: FakeGke, fake_kube: FakeKube) -> Fleet:
    return Fleet(fake_gke, fake_kube, PROJECT, LOCATION, CLUSTER)


@pytest.fixture
def core(kube_api_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api_client)


@pytest.fixture
def batch(kube_api_client: Any) -> client.BatchV1Api:
    return client.BatchV1Api(kube_api_client)


@pytest.fixture
def custom(kube_api_client: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_api_client)
