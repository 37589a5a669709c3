"""A cluster for the observer tests: the Kubernetes emulator, or a real cluster when
``MEGAMON_TEST_KUBECONFIG`` names a kubeconfig (see docs/testing.md), plus the GKE emulator.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config

from internal.fakegke import FakeGke
from internal.fakekube.fakekube import FakeKube
from test.observing.scenarios.world import World

REAL_CLUSTER_ENV = "MEGAMON_TEST_KUBECONFIG"


def _real_api(path: str) -> Any:
    return config.new_client_from_config(config_file=path)


@pytest.fixture
def kube_api(tmp_path: Path) -> Iterator[Any]:
    real = os.environ.get(REAL_CLUSTER_ENV)
    if real:
        api = _real_api(real)
        yield api
        api.close()
        return
    with FakeKube(bookmark_interval=0.2, watch_timeout=30.0) as fake:
        api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kc")))
        yield api
        api.close()


@pytest.fixture
def world(kube_api: Any) -> Iterator[World]:
    """A fresh namespace (on a real cluster; the emulator starts empty) and GKE emulator."""
    real = bool(os.environ.get(REAL_CLUSTER_ENV))
    namespace = f"megamon-test-{uuid.uuid4().hex[:8]}"
    core = k8s.CoreV1Api(kube_api)
    if real:
        core.create_namespace({"metadata": {"name": namespace}})
    with FakeGke() as gke:
        w = World(api=kube_api, gke=gke, namespace=namespace)
        yield w
    if real:
        for name in w.created_nodes:
            core.delete_node(name)
        core.delete_namespace(namespace)
