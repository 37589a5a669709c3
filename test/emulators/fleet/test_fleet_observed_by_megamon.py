"""The demo as megamon sees it: its observers, fed through the real clients, report the states
the demo scenario's timeline describes — mid-incident and at the end.

This is the fleet's contract with megamon (docs/rules.md): a pool the fleet made RUNNING with all
nodes ready is up, one in ERROR is failed, one STOPPING is expected down, an interrupted one
is down; JobSets, LeaderWorkerSets and Slices likewise.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from google.cloud.container_v1 import ClusterManagerClient
from kubernetes import client

from internal.fleet import Fleet, ScenarioRunner, demo_scenario, minutes
from megamon.domain.observations import Observation
from megamon.observing.common import Settings
from megamon.observing.nodepools import observe_nodepools
from megamon.observing.slices import observe_slices
from megamon.observing.workloads import observe_jobsets, observe_leaderworkersets
from megamon.sources.gke.lister import GkeNodePoolLister
from megamon.sources.kube import projections
from test.emulators.fleet.conftest import PARENT

pytestmark = pytest.mark.integration

UP, DOWN, FAILED, PLANNED = "up", "down", "failed", "expected down"


@dataclass
class Seen:
    """megamon's observations of every kind, keyed by resource name."""

    pools: dict[str, Observation]
    jobsets: dict[str, Observation]
    lwss: dict[str, Observation]
    slices: dict[str, Observation]


def state(observation: Observation) -> str:
    if observation.up:
        return UP
    if observation.expected_down:
        return PLANNED
    return FAILED if observation.failed else DOWN


def play_until(fleet: Fleet, until: str) -> None:
    steps = [step for step in demo_scenario() if step.at <= minutes(until)]
    outcome = ScenarioRunner(fleet, steps, speed=1e6).play(threading.Event())
    assert outcome.failed == []


def observe(gke_client: ClusterManagerClient, kube_api_client: Any) -> Seen:
    settings, now = Settings(), time.time_ns()
    core = client.CoreV1Api(kube_api_client)
    custom = client.CustomObjectsApi(kube_api_client)
    raw_nodes = orjson.loads(core.list_node(_preload_content=False).data)["items"]
    nodes = [projections.node_view(n) for n in raw_nodes]
    jobsets = [projections.jobset_view(o) for o in _custom(custom, "jobset.x-k8s.io", "v1alpha2")]
    lwss = [projections.lws_view(o) for o in _custom(custom, "leaderworkerset.x-k8s.io", "v1")]
    slices = [projections.slice_view(o) for o in _custom(custom, "accelerator.gke.io", "v1beta1")]
    pools = GkeNodePoolLister(PARENT, gke_client).list_node_pools()
    by_uid = {js.uid: js.name for js in jobsets} | {lws.uid: lws.name for lws in lwss}
    seen_slices, _ = observe_slices(slices, jobsets, lwss, {}, settings)
    return Seen(
        pools=observe_nodepools(pools, nodes, now, settings).observations,
        jobsets=_by_name(observe_jobsets(jobsets, settings).observations, by_uid),
        lwss=_by_name(observe_leaderworkersets(lwss, settings).observations, by_uid),
        slices=seen_slices.observations,
    )


def test_mid_incident_megamon_sees_failed_interrupted_and_stopping_pools(
    fleet: Fleet, gke_client: ClusterManagerClient, kube_api_client: Any
) -> None:
    play_until(fleet, "16:00")

    seen = observe(gke_client, kube_api_client)

    assert {name: state(o) for name, o in seen.pools.items()} == {
        "v5e-256-pretrain": UP,
        "v5e-8-dev": UP,
        "v6e-16-finetune": DOWN,  # a node NotReady since 15:00
        "tpu7x-8-serve": UP,
        "v5p-16-stuck": FAILED,  # GKE ERROR since 6:00
        "v5e-64-spot": DOWN,  # preempted at 12:00
        "v6e-64-eval": PLANNED,  # STOPPING since 16:00
        "v6e-8-rl": UP,
    }
    assert (seen.pools["v6e-16-finetune"].ready, seen.pools["v6e-16-finetune"].expected) == (3, 4)
    assert seen.pools["v6e-64-eval"].status == "STOPPING"
    assert seen.pools["v5e-256-pretrain"].attrs.tpu_chip_count == 256
    assert seen.pools["v5e-64-spot"].attrs.spot
    assert state(seen.jobsets["finetune-v6e"]) == DOWN


def test_at_the_end_megamon_sees_the_final_state_of_the_demo(
    fleet: Fleet, gke_client: ClusterManagerClient, kube_api_client: Any
) -> None:
    play_until(fleet, "30:00")

    seen = observe(gke_client, kube_api_client)

    assert {name: state(o) for name, o in seen.pools.items()} == {
        "v5e-256-pretrain": UP,
        "v5e-8-dev": UP,
        "v6e-16-finetune": UP,
        "tpu7x-8-serve": UP,
        "v5p-16-stuck": FAILED,
        "v5e-64-spot": UP,
        "v6e-8-rl": UP,
    }
    assert {name: (state(o), o.status) for name, o in seen.jobsets.items()} == {
        "llm-pretrain": (UP, ""),
        "notebook-eval": (PLANNED, "Completed"),
        "finetune-v6e": (UP, ""),
        "v5p-experiment": (DOWN, ""),
        "spot-inference": (DOWN, "Failed"),
        "benchmark-v6e": (PLANNED, "Completed"),
        "rl-rollout": (DOWN, "Suspended"),
    }
    assert {name: state(o) for name, o in seen.lwss.items()} == {"gemma-serve": UP}
    assert {name: state(o) for name, o in seen.slices.items()} == {
        "llm-pretrain-0": UP,
        "gemma-serve-0": UP,
        "v5p-experiment-0": FAILED,
    }


def _custom(custom: client.CustomObjectsApi, group: str, version: str) -> list[Any]:
    plural = {"jobset.x-k8s.io": "jobsets", "leaderworkerset.x-k8s.io": "leaderworkersets"}
    items = custom.list_cluster_custom_object(group, version, plural.get(group, "slices"))["items"]
    return list(items)


def _by_name(observations: dict[str, Observation], names: dict[str, str]) -> dict[str, Observation]:
    return {names[uid]: observation for uid, observation in observations.items()}
