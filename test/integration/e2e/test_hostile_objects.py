"""Hostile objects against the real process: one malformed JobSet (``replicatedJobsStatus:
5``, a status patched by anyone with write access) must cost megamon that one JobSet — never
the JobSet watch, readiness, or the data of every other JobSet."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from megamon.sources.kube.resources import JOBSETS
from test.integration.e2e import test_megamon_run as run
from test.integration.e2e.harness import value
from test.integration.scenarios.world import World

world = run.world
start = run.start


def _patch_status(world: World, name: str, status: Any) -> None:
    k8s.CustomObjectsApi(world.api).patch_namespaced_custom_object_status(
        JOBSETS.group, JOBSETS.version, world.namespace, JOBSETS.plural, name, {"status": status}
    )


def test_a_malformed_jobset_is_skipped_counted_and_the_watch_lives_on(
    world: World, start: Any
) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    good = world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1)
    world.jobset("bad", replicas=1)
    _patch_status(world, "bad", {"replicatedJobsStatus": 5})

    megamon = start()
    samples = megamon.settle(
        lambda s: value(s, "megamon_jobset_up", jobset_uid=good) == 1.0, "the good jobset"
    )
    assert value(samples, "megamon_observation_errors_total", kind="jobset", reason="invalid") == 1
    assert [
        name
        for (n, lab), _ in samples.items()
        if n == "megamon_jobset_up"
        for k, name in lab
        if k == "jobset_name"
    ] == ["train"]
    assert megamon.get(megamon.probe_port, "/readyz")[0] == 200
    megamon.wait_for(
        lambda: "replicatedJobsStatus must be a list, got int" in megamon.log(), "the logged cause"
    )

    # The watch still runs: a JobSet created afterwards, and a change of the bad one, arrive.
    later = world.jobset("later", replicas=1)
    world.jobset_status("later", ready=1)
    _patch_status(world, "bad", {"replicatedJobsStatus": [{"name": "slice", "ready": 1}]})
    after = megamon.settle(
        lambda s: (
            value(s, "megamon_jobset_up", jobset_uid=later) == 1.0
            and value(s, "megamon_jobset_up", jobset_name="bad") == 1.0
        ),
        "a later jobset and the repaired one",
    )
    assert value(after, "megamon_observation_errors_total", kind="jobset", reason="invalid") == 1
    assert megamon.get(megamon.probe_port, "/healthz")[0] == 200
    assert megamon.log().count("replicatedJobsStatus must be a list") == 1  # logged once
