"""A JobSet release before the single-Job and in-place restarts (v0.10.0): its CRD has no
``jobRestarts`` nor in-place attempts, so the API server prunes them and megamon, reading
what the server serves, counts whole restarts only — and says nothing is wrong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from internal.fakekube.fakekube import FakeKube
from megamon.domain import interruptions
from megamon.domain.kinds import Kind
from test.integration.scenarios.world import Megamon, World


@pytest.fixture
def kube_api(tmp_path: Path) -> Iterator[Any]:
    """The emulator serving JobSet v0.10.0's CRD (this module's clusters only)."""
    with FakeKube(bookmark_interval=0.2, watch_timeout=30.0, jobset_release="v0.10.0") as fake:
        api = config.new_client_from_config(config_file=str(fake.write_kubeconfig(tmp_path / "kc")))
        yield api
        api.close()


def test_an_older_jobset_counts_whole_restarts_only(world: World) -> None:
    megamon = Megamon(world)
    try:
        uid = world.jobset("train", replicas=1)
        world.jobset_status("train", ready=1, restarts=0)
        megamon.settle(
            lambda r: (o := r.kind(Kind.JOBSET).observations.get(uid)) is not None and o.up
        )
        world.jobset_status("train", ready=0, restarts=1, job_restarts=[2], in_place=(3, 3))
        report = megamon.settle(
            lambda r: (
                (o := r.kind(Kind.JOBSET).observations.get(uid)) is not None
                and o.reason == interruptions.RESTART
            )
        )
        found = report.kind(Kind.JOBSET).observations[uid]
        assert dict(found.restart_counts) == {"jobset": 1, "job": 0, "in-place": 0}
        assert megamon.problems == []
    finally:
        megamon.stop()
