"""A cluster for the observer tests: the Kubernetes emulator, or a real cluster when
``MEGAMON_TEST_KUBECONFIG`` names a kubeconfig (see docs/testing.md), plus the GKE emulator.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes import config

from internal.fakegke import FakeGke
from internal.fakekube.fakekube import FakeKube
from megamon.domain.kinds import Kind
from test.crosssurface import PASSED, check_history, dump_store
from test.integration.scenarios.world import World, Written
from test.summary.foldcheck import check_folds

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


def check_histories(world: World, scratch: Path) -> None:
    """The cross-surface check (``test.crosssurface``) on each history the scenario's
    megamons wrote, as the last one on it left it; then the folds on it
    (``test.summary.foldcheck``): every lifetime folded in pieces gives the batch figures,
    and the summary state persisted beside each snapshot is the folds of its events."""
    last: dict[int, Written] = {}
    for written in world.histories:
        last[id(written.store)] = written
    for n, written in enumerate(last.values()):
        root = dump_store(written.store, scratch / f"history-{n}")
        config = None
        if written.described:
            config = scratch / f"config-{n}.json"
            kinds = [d.model_dump(exclude_defaults=True) for d in written.described]
            config.write_bytes(orjson.dumps({"WorkloadKinds": kinds}))
        check_history(
            root,
            written.now,
            metrics=written.metrics,
            cycle_ns=written.cycle_ns,
            config=config,
        )
        kinds = [*Kind, *(description.kind for description in written.described)]
        check_folds(root, kinds, written.now)


@pytest.fixture
def world(kube_api: Any, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """A fresh namespace (on a real cluster; the emulator starts empty) and GKE emulator;
    at the end, the cross-surface check on every history it left."""
    real = bool(os.environ.get(REAL_CLUSTER_ENV))
    namespace = f"megamon-test-{uuid.uuid4().hex[:8]}"
    core = k8s.CoreV1Api(kube_api)
    if real:
        core.create_namespace({"metadata": {"name": namespace}})
    with FakeGke() as gke:
        w = World(api=kube_api, gke=gke, namespace=namespace)
        yield w
    if request.node.stash.get(PASSED, False):
        check_histories(w, tmp_path / "histories")
    if real:
        for name in w.created_nodes:
            core.delete_node(name)
        core.delete_namespace(namespace)
