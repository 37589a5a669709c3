"""``Fleet`` operations: each shows up in GKE and Kubernetes consistently, through real clients.

Node pools provision node by node and turn RUNNING with their last node, fail, are interrupted
and recover, and are deleted (STOPPING, nodes and their pods gone, then the pool); JobSets,
LeaderWorkerSets and Slices go through their lives with their children and conditions.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from google.cloud.container_v1 import ClusterManagerClient, NodePool
from kubernetes import client

from internal.fakegke import FakeGke
from internal.fakekube import FakeKube
from internal.fleet import Fleet, FleetError, Owner, TpuShape
from megamon.domain import labels
from test.emulators.fleet.conftest import CLUSTER, LOCATION, PARENT, PROJECT

pytestmark = pytest.mark.integration

V6E_16 = ("tpu-v6e-slice", "ct6e-standard-4t", "4x4")  # 4 nodes


def pool_state(gke_client: ClusterManagerClient, name: str) -> NodePool | None:
    pools = gke_client.list_node_pools(parent=PARENT).node_pools
    return next((p for p in pools if p.name == name), None)


def status_of(gke_client: ClusterManagerClient, name: str) -> NodePool.Status:
    pool = pool_state(gke_client, name)
    assert pool is not None, f"GKE does not list {name}"
    return pool.status


def ready_by_node(core: client.CoreV1Api, pool: str) -> dict[str, str]:
    nodes = core.list_node(label_selector=f"{labels.NODEPOOL}={pool}").items
    return {
        n.metadata.name: next(c.status for c in n.status.conditions if c.type == "Ready")
        for n in nodes
    }


def test_a_new_pool_is_provisioning_with_no_nodes(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v5e-spot", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", "8x8", spot=True)

    pool = pool_state(gke_client, "v5e-spot")
    assert pool is not None
    assert pool.status == NodePool.Status.PROVISIONING
    assert pool.config.spot
    assert pool.config.resource_labels[labels.GKE_ACCELERATOR_TYPE] == "tpu-v5-lite-podslice"
    assert pool.placement_policy.tpu_topology == "8x8"
    assert pool.initial_node_count == 16
    assert core.list_node().items == []


def test_a_pool_turns_running_when_its_last_node_registers(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16, jobset=("training", "ft"))

    first = fleet.add_nodes("v6e", 3)
    assert status_of(gke_client, "v6e") == NodePool.Status.PROVISIONING
    last = fleet.add_nodes("v6e")

    assert status_of(gke_client, "v6e") == NodePool.Status.RUNNING
    assert ready_by_node(core, "v6e") == dict.fromkeys(first + last, "True")
    node = core.read_node(last[0])
    assert node.metadata.labels[labels.PROVISIONER_JOBSET_NAME] == "ft"
    assert node.metadata.labels[labels.PROVISIONER_JOBSET_NAMESPACE] == "training"
    assert node.metadata.name.startswith("gke-tpu-test-v6e-")
    assert len(set(first + last)) == 4


def test_a_pool_never_gets_more_nodes_than_its_slice_has(fleet: Fleet) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)

    with pytest.raises(FleetError, match="4 of 4 nodes"):
        fleet.add_nodes("v6e")


def test_a_failed_pool_reports_error_and_keeps_its_nodes(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v5p", "tpu-v5p-slice", "ct5p-hightpu-4t", "2x2x4")
    fleet.add_nodes("v5p", 2)

    fleet.fail_pool("v5p")

    pool = pool_state(gke_client, "v5p")
    assert pool is not None
    assert pool.status == NodePool.Status.ERROR
    assert "GCE_STOCKOUT" in pool.status_message
    assert len(ready_by_node(core, "v5p")) == 2


def test_an_interrupted_pool_has_not_ready_nodes_until_it_recovers(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    nodes = fleet.add_nodes("v6e", 4)

    down = fleet.interrupt_pool("v6e", nodes=2)
    assert down == nodes[:2]
    assert sorted(ready_by_node(core, "v6e").values()) == ["False", "False", "True", "True"]
    assert status_of(gke_client, "v6e") == NodePool.Status.RUNNING

    fleet.recover_pool("v6e")
    assert set(ready_by_node(core, "v6e").values()) == {"True"}


def test_recovering_a_failed_pool_registers_its_missing_nodes(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 1)
    fleet.fail_pool("v6e")

    fleet.recover_pool("v6e")

    pool = pool_state(gke_client, "v6e")
    assert pool is not None
    assert pool.status == NodePool.Status.RUNNING
    assert not pool.status_message
    assert list(ready_by_node(core, "v6e").values()) == ["True"] * 4


def test_a_node_can_be_set_unknown_and_its_transition_time_moves(
    fake_gke: FakeGke, fake_kube: FakeKube, core: client.CoreV1Api
) -> None:
    clock = iter([1_000.0, 2_000.0, 3_000.0])
    fleet = Fleet(fake_gke, fake_kube, PROJECT, LOCATION, CLUSTER, clock=lambda: next(clock))
    fleet.create_pool("v6e", *V6E_16)
    (node,) = fleet.add_nodes("v6e")  # at 1000

    fleet.set_node_ready(node, "True")  # at 2000: no change, transition time stays
    fleet.set_node_ready(node, "Unknown")  # at 3000

    ready = next(c for c in core.read_node(node).status.conditions if c.type == "Ready")
    assert ready.status == "Unknown"
    assert ready.reason == "NodeStatusUnknown"
    assert int(ready.last_transition_time.timestamp()) == 3_000


def test_a_realistic_fleet_registers_full_size_nodes(
    fake_gke: FakeGke, fake_kube: FakeKube, core: client.CoreV1Api
) -> None:
    fleet = Fleet(fake_gke, fake_kube, PROJECT, LOCATION, CLUSTER, realistic_nodes=True)
    fleet.create_pool("v6e-8", "tpu-v6e-slice", "ct6e-standard-8t", "2x4")

    (node,) = fleet.add_nodes("v6e-8")

    raw = core.read_node(node, _preload_content=False).data
    assert len(raw) > 8_500
    assert orjson.loads(raw)["metadata"]["labels"][labels.NODEPOOL] == "v6e-8"


def test_deleting_a_pool_stops_it_then_removes_nodes_pods_and_pool(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)
    fleet.create_jobset("eval", "eval", "v6e")
    fleet.set_jobset_ready("eval", "eval")
    assert len(core.list_namespaced_pod("eval").items) == 1

    fleet.stop_pool("v6e")
    assert status_of(gke_client, "v6e") == NodePool.Status.STOPPING
    assert core.list_node().items == []
    assert core.list_namespaced_pod("eval").items == []

    fleet.remove_pool("v6e")
    assert pool_state(gke_client, "v6e") is None
    assert fleet.pools == ()


def test_delete_pool_does_both_steps(
    fleet: Fleet, gke_client: ClusterManagerClient, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 2)

    fleet.delete_pool("v6e")

    assert pool_state(gke_client, "v6e") is None
    assert core.list_node().items == []


def test_a_jobset_runs_with_its_jobs_and_a_leader_pod_on_its_pool(
    fleet: Fleet,
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    fleet.create_pool("v6e-a", *V6E_16)
    fleet.create_pool("v6e-b", *V6E_16)
    fleet.add_nodes("v6e-a", 4)
    fleet.add_nodes("v6e-b", 4)
    uid = fleet.create_jobset("ft", "training", ["v6e-a", "v6e-b"], replicas=2)

    fleet.set_jobset_ready("ft", "training", 1)
    assert _jobset(custom, "ft")["status"]["replicatedJobsStatus"][0]["ready"] == 1
    fleet.set_jobset_ready("ft", "training")

    js = _jobset(custom, "ft")
    assert js["metadata"]["uid"] == uid
    assert js["status"]["replicatedJobsStatus"][0]["ready"] == 2
    assert js["status"]["conditions"] == []
    jobs = batch.list_namespaced_job("training").items
    assert sorted(j.metadata.name for j in jobs) == ["ft-slice-0", "ft-slice-1"]
    assert {j.metadata.owner_references[0].uid for j in jobs} == {uid}
    assert {j.status.ready for j in jobs} == {4}
    leaders = core.list_namespaced_pod(
        "training", label_selector=f"{labels.JOB_COMPLETION_INDEX}=0"
    ).items
    assert sorted((p.metadata.labels[labels.JOB_NAME], p.spec.node_name) for p in leaders) == [
        ("ft-slice-0", fleet.nodes("v6e-a")[0]),
        ("ft-slice-1", fleet.nodes("v6e-b")[0]),
    ]


def test_a_jobset_that_loses_a_replica_drops_its_leader_pod(
    fleet: Fleet, core: client.CoreV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)
    fleet.create_jobset("ft", "training", "v6e")
    fleet.set_jobset_ready("ft", "training")

    fleet.set_jobset_ready("ft", "training", 0)

    assert core.list_namespaced_pod("training").items == []


@pytest.mark.parametrize(
    ("end", "condition", "phase"),
    [
        ("complete_jobset", "Completed", "Succeeded"),
        ("fail_jobset", "Failed", "Failed"),
    ],
)
def test_a_jobset_ends_with_its_terminal_condition(
    fleet: Fleet,
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    custom: client.CustomObjectsApi,
    end: str,
    condition: str,
    phase: str,
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)
    fleet.create_jobset("ft", "training", "v6e")
    fleet.set_jobset_ready("ft", "training")

    getattr(fleet, end)("ft", "training")

    js = _jobset(custom, "ft")
    assert [(c["type"], c["status"]) for c in js["status"]["conditions"]] == [(condition, "True")]
    assert js["status"]["terminalState"] == condition
    assert js["status"]["replicatedJobsStatus"][0]["ready"] == 0
    job = batch.read_namespaced_job("ft-slice-0", "training")
    assert job.status.conditions[0].type in {"Complete", "Failed"}
    assert [p.status.phase for p in core.list_namespaced_pod("training").items] == [phase]


def test_a_suspended_jobset_has_no_pods_and_says_suspended(
    fleet: Fleet,
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)
    fleet.create_jobset("rl", "training", "v6e")
    fleet.set_jobset_ready("rl", "training")

    fleet.suspend_jobset("rl", "training")

    js = _jobset(custom, "rl")
    assert js["spec"]["suspend"] is True
    assert [c["type"] for c in js["status"]["conditions"]] == ["Suspended"]
    assert batch.read_namespaced_job("rl-slice-0", "training").spec.suspend is True
    assert core.list_namespaced_pod("training").items == []


def test_a_jobset_on_a_shape_has_no_leader_pod(
    fleet: Fleet, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    shape = TpuShape("tpu7x", "tpu7x-standard-4t", "2x2x2", spot=True)
    fleet.create_jobset("probe", "research", shape, replicas=3, parallelism=1)

    fleet.set_jobset_ready("probe", "research")

    rjob = _jobset(custom, "probe", "research")["spec"]["replicatedJobs"][0]
    assert rjob["template"]["spec"]["parallelism"] == 1
    assert rjob["template"]["spec"]["template"]["spec"]["nodeSelector"][labels.SPOT] == "true"
    assert core.list_namespaced_pod("research").items == []


def test_deleting_a_jobset_removes_its_jobs_and_pods(
    fleet: Fleet, core: client.CoreV1Api, batch: client.BatchV1Api
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)
    fleet.create_jobset("ft", "training", "v6e")
    fleet.set_jobset_ready("ft", "training")

    fleet.delete_jobset("ft", "training")

    assert batch.list_namespaced_job("training").items == []
    assert core.list_namespaced_pod("training").items == []
    with pytest.raises(FleetError, match="no JobSet training/ft"):
        fleet.complete_jobset("ft", "training")


def test_a_leader_worker_set_becomes_ready(fleet: Fleet, custom: client.CustomObjectsApi) -> None:
    fleet.create_pool("tpu7x", "tpu7x", "tpu7x-standard-4t", "2x2x2")
    uid = fleet.create_lws("serve", "serving", "tpu7x", replicas=2)
    assert _lws(custom)["status"]["readyReplicas"] == 0

    fleet.set_lws_ready("serve", "serving")

    lws = _lws(custom)
    assert lws["metadata"]["uid"] == uid
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert lws["status"]["readyReplicas"] == 2
    fleet.delete_lws("serve", "serving")
    assert (
        custom.list_namespaced_custom_object(
            "leaderworkerset.x-k8s.io", "v1", "serving", "leaderworkersets"
        )["items"]
        == []
    )


def test_a_slice_is_created_not_ready_then_ready_or_failed(
    fleet: Fleet, custom: client.CustomObjectsApi
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.create_slice("ok", "v6e", Owner.jobset("ft", "training"))
    fleet.create_slice("bad", "v6e", Owner.lws("serve", "serving"))
    assert _slice_conditions(custom) == {"ok": {"Ready": "False"}, "bad": {"Ready": "False"}}

    fleet.set_slice_ready("ok")
    fleet.fail_slice("bad")

    assert _slice_conditions(custom) == {
        "ok": {"Ready": "True"},
        "bad": {"Ready": "False", "SliceCreationFailed": "True"},
    }
    fleet.delete_slice("ok")
    assert list(_slice_conditions(custom)) == ["bad"]


def test_clear_removes_everything_the_fleet_made(
    fleet: Fleet,
    gke_client: ClusterManagerClient,
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.add_nodes("v6e", 4)
    fleet.create_jobset("ft", "training", "v6e")
    fleet.set_jobset_ready("ft", "training")
    fleet.create_lws("serve", "serving", "v6e")
    fleet.create_slice("ft-0", "v6e", Owner.jobset("ft", "training"))

    fleet.clear()

    assert gke_client.list_node_pools(parent=PARENT).node_pools == []
    assert core.list_node().items == []
    assert core.list_pod_for_all_namespaces().items == []
    assert batch.list_job_for_all_namespaces().items == []
    assert _slice_conditions(custom) == {}


def test_unknown_names_and_mixed_shapes_are_refused(fleet: Fleet) -> None:
    fleet.create_pool("v6e", *V6E_16)
    fleet.create_pool("tpu7x", "tpu7x", "tpu7x-standard-4t", "2x2x2")

    with pytest.raises(FleetError, match="no node pool nope"):
        fleet.add_nodes("nope")
    with pytest.raises(FleetError, match="already exists"):
        fleet.create_pool("v6e", *V6E_16)
    with pytest.raises(FleetError, match="different TPU shapes"):
        fleet.create_jobset("mixed", "default", ["v6e", "tpu7x"], replicas=2)
    with pytest.raises(FleetError, match="only 0 ready nodes"):
        fleet.interrupt_pool("v6e")
    with pytest.raises(FleetError, match="no Slice"):
        fleet.set_slice_ready("nope")


def _jobset(custom: client.CustomObjectsApi, name: str, namespace: str = "training") -> Any:
    return custom.get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", name
    )


def _lws(custom: client.CustomObjectsApi) -> Any:
    return custom.get_namespaced_custom_object(
        "leaderworkerset.x-k8s.io", "v1", "serving", "leaderworkersets", "serve"
    )


def _slice_conditions(custom: client.CustomObjectsApi) -> dict[str, dict[str, str]]:
    items = custom.list_cluster_custom_object("accelerator.gke.io", "v1beta1", "slices")["items"]
    return {
        s["metadata"]["name"]: {c["type"]: c["status"] for c in s["status"]["conditions"]}
        for s in items
    }
