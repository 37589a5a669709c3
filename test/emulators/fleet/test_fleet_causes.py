"""The simulated fleet's interruption causes, as megamon's observers see them through the real
clients: maintenance, an upgrade, a spot preemption, a node lost, a JobSet restart, a JobSet
brought down by its node pool, the same causes on the nodes of a JobSet, a Slice that failed,
degraded, vanished or lost its node pool, and a JobSet Kueue preempted (docs/metrics.md,
"Reasons")."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest
from google.cloud.container_v1 import ClusterManagerClient
from kubernetes import client

from internal.fleet import Fleet, Owner
from megamon.domain import interruptions
from megamon.domain.observations import Observation
from megamon.observing.attribution import jobset_pools_down, slice_pools_down
from megamon.observing.common import Settings
from megamon.observing.nodepools import observe_nodepools
from megamon.observing.slices import observe_slices
from megamon.observing.workloads import WorkloadObserver
from megamon.sources.gke.lister import GkeNodePoolLister
from megamon.sources.kube import projections
from test.emulators.fleet.conftest import PARENT

pytestmark = pytest.mark.integration

V6E_16 = ("tpu-v6e-slice", "ct6e-standard-4t", "4x4")  # 4 nodes


def nodes(api: Any) -> list[projections.NodeView]:
    core = client.CoreV1Api(api)
    raw = orjson.loads(core.list_node(_preload_content=False).data)["items"]
    return [projections.node_view(n) for n in raw]


def pools(gke: ClusterManagerClient, api: Any) -> dict[str, Observation]:
    listed = GkeNodePoolLister(PARENT, gke).list_node_pools()
    return observe_nodepools(listed, nodes(api), time.time_ns(), Settings()).observations


def running(fleet: Fleet, name: str, *, spot: bool = False) -> None:
    fleet.create_pool(name, *V6E_16, spot=spot)
    fleet.add_nodes(name, 4)


@pytest.mark.parametrize(
    ("action", "spot", "reason"),
    [
        ("maintain_pool", False, interruptions.MAINTENANCE),
        ("upgrade_pool", False, interruptions.UPGRADE),
        ("preempt_pool", True, interruptions.PREEMPTION),
        ("preempt_pool", False, interruptions.NODE_LOST),
        ("interrupt_pool", False, interruptions.NODE_NOT_READY),
    ],
)
def test_each_cause_of_the_fleet_is_the_reason_megamon_gives(
    fleet: Fleet,
    gke_client: ClusterManagerClient,
    kube_api_client: Any,
    action: str,
    spot: bool,
    reason: str,
) -> None:
    running(fleet, "np", spot=spot)
    assert pools(gke_client, kube_api_client)["np"].up
    getattr(fleet, action)("np", 1)
    seen = pools(gke_client, kube_api_client)["np"]
    assert (seen.up, seen.reason) == (False, reason)
    fleet.recover_pool("np")
    recovered = pools(gke_client, kube_api_client)["np"]
    assert (recovered.up, recovered.reason) == (True, "")


def test_a_restarted_jobset_and_one_brought_down_by_its_pool(
    fleet: Fleet, kube_api_client: Any
) -> None:
    fleet.create_pool("np", *V6E_16, jobset=("ml", "train"))  # the TPU provisioner's pool
    fleet.add_nodes("np", 4)
    fleet.create_jobset("train", "ml", "np")
    fleet.set_jobset_ready("train", "ml")
    custom = client.CustomObjectsApi(kube_api_client)
    core = client.CoreV1Api(kube_api_client)
    observer = WorkloadObserver()

    def observe() -> Observation:
        items = custom.list_cluster_custom_object("jobset.x-k8s.io", "v1alpha2", "jobsets")
        views = [projections.jobset_view(o) for o in items["items"]]
        raw_pods = orjson.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
        pods = [projections.pod_view(p) for p in raw_pods["items"]]
        by_name = {n.name: n for n in nodes(kube_api_client)}
        down = jobset_pools_down(by_name, pods, time.time_ns(), Settings())
        (found,) = observer.jobsets(views, Settings(), down).observations.values()
        return found

    assert observe().up
    fleet.restart_jobset("train", "ml")
    assert (observe().reason, observe().restarts) == (interruptions.RESTART, 1)
    fleet.set_jobset_ready("train", "ml")
    assert observe().up
    fleet.set_jobset_ready("train", "ml", 0)
    fleet.interrupt_pool("np", 1)
    seen = observe()
    assert (seen.reason, seen.reason_detail) == (interruptions.NODEPOOL, "np")


def jobsets(api: Any) -> list[projections.JobSetView]:
    custom = client.CustomObjectsApi(api)
    items = custom.list_cluster_custom_object("jobset.x-k8s.io", "v1alpha2", "jobsets")
    return [projections.jobset_view(o) for o in items["items"]]


@pytest.mark.parametrize(
    ("action", "spot", "reason"),
    [
        ("maintain_pool", False, interruptions.MAINTENANCE),
        ("preempt_pool", True, interruptions.PREEMPTION),
        ("preempt_pool", False, interruptions.NODE_LOST),
        ("interrupt_pool", False, interruptions.NODE_NOT_READY),
    ],
)
def test_the_nodes_of_a_jobset_take_the_cause_of_their_pool(
    fleet: Fleet, kube_api_client: Any, action: str, spot: bool, reason: str
) -> None:
    fleet.create_pool("np", *V6E_16, spot=spot, jobset=("ml", "train"))
    fleet.add_nodes("np", 4)
    fleet.create_jobset("train", "ml", "np", parallelism=4)
    observer = WorkloadObserver()

    def observe() -> Observation:
        found = observer.jobset_nodes(jobsets(kube_api_client), nodes(kube_api_client),
                                      time.time_ns(), Settings())  # fmt: skip
        (only,) = found.observations.values()
        return only

    assert observe().up
    getattr(fleet, action)("np", 1)
    assert (observe().up, observe().reason) == (False, reason)
    fleet.recover_pool("np")
    assert (observe().up, observe().reason) == (True, "")


def test_a_jobset_kueue_preempts_is_suspended(fleet: Fleet, kube_api_client: Any) -> None:
    fleet.create_pool("np", *V6E_16)
    fleet.add_nodes("np", 4)
    fleet.create_jobset("train", "ml", "np")
    fleet.set_jobset_ready("train", "ml")
    observer = WorkloadObserver()
    (seen,) = observer.jobsets(jobsets(kube_api_client), Settings()).observations.values()
    assert seen.up
    fleet.preempt_jobset("train", "ml")
    (seen,) = observer.jobsets(jobsets(kube_api_client), Settings()).observations.values()
    assert (seen.up, seen.reason) == (False, interruptions.SUSPENDED)


@pytest.mark.parametrize(
    ("action", "reason", "detail"),
    [
        ("fail_slice", interruptions.FAILED, "TPU slice creation failed"),
        ("degrade_slice", interruptions.ERROR, "TPU host of the slice unhealthy"),
        ("delete_slice", interruptions.NODE_LOST, ""),
        ("interrupt_pool", interruptions.NODEPOOL, "np"),
    ],
)
def test_each_slice_cause_of_the_fleet_is_the_reason_megamon_gives(
    fleet: Fleet, kube_api_client: Any, action: str, reason: str, detail: str
) -> None:
    fleet.create_pool("np", *V6E_16, tpu_slice="slice-a")
    fleet.add_nodes("np", 4)
    fleet.create_jobset("train", "ml", "np")
    fleet.create_slice("slice-a", "np", Owner.jobset("train", "ml"))
    fleet.set_slice_ready("slice-a")
    custom = client.CustomObjectsApi(kube_api_client)
    owners: dict[str, Any] = {}

    def observe() -> Observation:
        nonlocal owners
        raw = custom.list_cluster_custom_object("accelerator.gke.io", "v1beta1", "slices")
        views = [projections.slice_view(o) for o in raw["items"]]
        down = slice_pools_down(nodes(kube_api_client), time.time_ns(), Settings())
        found, owners = observe_slices(
            views, jobsets(kube_api_client), [], owners, Settings(), down
        )
        return found.observations["slice-a"]

    assert observe().up
    if action == "interrupt_pool":
        fleet.interrupt_pool("np", 1)
        fleet.set_slice_ready("slice-a", "False")
    else:
        getattr(fleet, action)("slice-a")
    seen = observe()
    assert (seen.up, seen.reason) == (False, reason)
    assert seen.reason_detail.startswith(detail)
