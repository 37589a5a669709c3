"""The fleet's object builders: what they build, the real clients read back as GKE would serve it.

Covers TPU shapes and node counts, nodes (plain and full-size), JobSets with their Jobs and
leader pods, LeaderWorkerSets, Slices and GKE node pools, each read through the official
client (``CoreV1Api``, ``BatchV1Api``, ``CustomObjectsApi``, ``ClusterManagerClient``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from google.cloud.container_v1 import ClusterManagerClient, NodePool
from kubernetes import client

from internal.fakegke import FakeGke, tpu_node_pool
from internal.fakekube import FakeKube
from internal.fleet import Owner, TpuShape, objects
from internal.fleet.objects import tpu_node
from megamon.domain import labels
from test.emulators.fleet.conftest import CLUSTER, LOCATION, PARENT, PROJECT

pytestmark = pytest.mark.integration

V5E_256 = TpuShape("tpu-v5-lite-podslice", "ct5lp-hightpu-4t", "16x16")
SINCE = "2026-05-04T18:23:24Z"


def node(
    name: str = "gke-tpu-test-np-1a2b3c4d-abcd",
    *,
    shape: TpuShape = V5E_256,
    ready: str = "True",
    realistic: bool = False,
    jobset: tuple[str, str] | None = None,
    tpu_slice: str | None = None,
) -> objects.Obj:
    return tpu_node(
        name,
        pool="np",
        shape=shape,
        zone="us-east5-a",
        ready=ready,
        ready_since=SINCE,
        jobset=jobset,
        tpu_slice=tpu_slice,
        realistic=realistic,
    )


@pytest.mark.parametrize(
    ("accelerator", "machine_type", "topology", "nodes", "chips"),
    [
        ("tpu-v5-lite-podslice", "ct5lp-hightpu-4t", "16x16", 64, 256),
        ("tpu-v5-lite-podslice", "ct5lp-hightpu-8t", "2x4", 1, 8),
        ("tpu-v6e-slice", "ct6e-standard-4t", "4x4", 4, 16),
        ("tpu7x", "tpu7x-standard-4t", "2x2x2", 2, 8),
        ("tpu-v5p-slice", "ct5p-hightpu-4t", "2x2x4", 4, 16),
    ],
)
def test_a_shape_knows_its_nodes_and_chips(
    accelerator: str, machine_type: str, topology: str, nodes: int, chips: int
) -> None:
    shape = TpuShape(accelerator, machine_type, topology)
    assert (shape.nodes, shape.chips) == (nodes, chips)


@pytest.mark.parametrize(
    ("machine_type", "topology"),
    [("ct5lp-hightpu-4t", "16"), ("ct5lp-hightpu-4t", "4xa"), ("n2-standard-8", "2x2"),
     ("ct5lp-hightpu-8t", "2x2")],
)  # fmt: skip
def test_an_impossible_shape_is_refused(machine_type: str, topology: str) -> None:
    with pytest.raises(ValueError, match=r"topology|TPU machine type|whole number"):
        TpuShape("tpu-v5-lite-podslice", machine_type, topology)


def test_nodes_are_read_back_by_the_client_with_the_labels_megamon_reads(
    fake_kube: FakeKube, core: client.CoreV1Api
) -> None:
    spot = TpuShape("tpu-v5-lite-podslice", "ct5lp-hightpu-4t", "8x8", spot=True)
    fake_kube.create(node("n-1", jobset=("training", "llm"), tpu_slice="llm-0", shape=spot))
    fake_kube.create(node("n-2", ready="Unknown"))

    read = {n.metadata.name: n for n in core.list_node().items}

    assert (
        read["n-1"].metadata.labels.items()
        >= {
            labels.NODEPOOL: "np",
            labels.TPU_TOPOLOGY: "8x8",
            labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice",
            labels.ACCELERATOR_COUNT: "4",
            labels.SPOT: "true",
            labels.TPU_SLICE: "llm-0",
            labels.PROVISIONER_JOBSET_NAMESPACE: "training",
            labels.PROVISIONER_JOBSET_NAME: "llm",
        }.items()
    )
    assert labels.SPOT not in read["n-2"].metadata.labels
    assert labels.PROVISIONER_JOBSET_NAME not in read["n-2"].metadata.labels
    ready = {n: _ready(read[n]) for n in read}
    assert ready["n-1"].status == "True"
    assert ready["n-2"].status == "Unknown"
    assert ready["n-1"].last_transition_time == datetime(2026, 5, 4, 18, 23, 24, tzinfo=UTC)
    status = read["n-1"].status
    assert {c.type for c in status.conditions} >= {"Ready", "MemoryPressure", "DiskPressure"}
    assert [a.type for a in status.addresses] == ["InternalIP", "Hostname"]
    assert status.node_info.kubelet_version.startswith("v1.31")
    assert status.images
    assert status.capacity["google.com/tpu"] == "4"


def test_a_realistic_node_weighs_about_9_kb_and_a_plain_one_much_less() -> None:
    realistic = len(orjson.dumps(node(realistic=True)))
    plain = len(orjson.dumps(node()))

    assert 8_500 <= realistic <= 10_000
    assert plain < realistic / 2


def test_a_realistic_node_is_read_back_whole(fake_kube: FakeKube, core: client.CoreV1Api) -> None:
    fake_kube.create(node("n-real", realistic=True))

    read = core.read_node("n-real")

    assert len(read.status.conditions) == 12
    assert len(read.status.images) >= 15
    assert read.metadata.annotations["node.gke.io/last-applied-node-taints"]
    assert read.spec.taints[0].key == "google.com/tpu"


def test_a_node_is_the_same_every_time_it_is_built() -> None:
    assert node(realistic=True) == node(realistic=True)
    assert node("a")["status"]["addresses"] != node("b")["status"]["addresses"]


def test_ready_keeps_its_transition_time_until_its_status_changes() -> None:
    conditions = node()["status"]["conditions"]

    same = objects.with_ready(conditions, "True", "2026-05-04T19:00:00Z")
    flipped = objects.with_ready(conditions, "False", "2026-05-04T19:00:00Z")

    assert _ready_dict(same)["lastTransitionTime"] == SINCE
    assert _ready_dict(same)["lastHeartbeatTime"] == "2026-05-04T19:00:00Z"
    assert _ready_dict(flipped) | {"status": "False"} == _ready_dict(flipped)
    assert _ready_dict(flipped)["lastTransitionTime"] == "2026-05-04T19:00:00Z"
    assert len(flipped) == len(conditions)


def test_a_jobset_its_job_and_leader_pod_are_read_back(
    fake_kube: FakeKube,
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    js = fake_kube.create(objects.jobset("llm", "training", shape=V5E_256, replicas=2, since=SINCE))
    uid = js["metadata"]["uid"]
    job = fake_kube.create(objects.job("llm", "training", index=0, shape=V5E_256, jobset_uid=uid))
    pod = objects.leader_pod(
        "llm", "training", index=0, node_name="n-1", shape=V5E_256, job_uid=job["metadata"]["uid"]
    )
    fake_kube.create(pod)
    status = objects.jobset_status(replicas=2, ready=1, since=SINCE, terminal="Failed")
    fake_kube.patch_status("JobSet", "llm", status, "training")

    read = custom.get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", "training", "jobsets", "llm"
    )
    rjob = read["spec"]["replicatedJobs"][0]
    assert rjob["replicas"] == 2
    assert rjob["template"]["spec"]["parallelism"] == 64
    assert rjob["template"]["spec"]["template"]["spec"]["nodeSelector"] == {
        labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice",
        labels.TPU_TOPOLOGY: "16x16",
    }
    assert read["status"]["replicatedJobsStatus"][0]["failed"] == 1
    assert [(c["type"], c["status"]) for c in read["status"]["conditions"]] == [("Failed", "True")]
    read_job = batch.read_namespaced_job("llm-slice-0", "training")
    assert read_job.metadata.owner_references[0].uid == uid
    assert read_job.spec.completion_mode == "Indexed"
    leaders = core.list_namespaced_pod(
        "training",
        label_selector=f"{labels.JOBSET_NAME}=llm,{labels.JOB_COMPLETION_INDEX}=0",
        field_selector="spec.nodeName=n-1",
    ).items
    assert [p.metadata.labels[labels.JOB_NAME] for p in leaders] == ["llm-slice-0"]
    assert leaders[0].metadata.name == objects.leader_pod_name("llm", 0)


def test_a_leader_worker_set_is_read_back(
    fake_kube: FakeKube, custom: client.CustomObjectsApi
) -> None:
    fake_kube.create(
        objects.leader_worker_set("serve", "serving", shape=V5E_256, replicas=3, since=SINCE)
    )
    fake_kube.patch_status(
        "LeaderWorkerSet", "serve", objects.lws_status(replicas=3, ready=2, since=SINCE), "serving"
    )

    read = custom.get_namespaced_custom_object(
        "leaderworkerset.x-k8s.io", "v1", "serving", "leaderworkersets", "serve"
    )

    assert read["spec"]["replicas"] == 3
    worker = read["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert worker["spec"]["nodeSelector"][labels.TPU_TOPOLOGY] == "16x16"
    assert read["status"]["readyReplicas"] == 2


def test_a_slice_is_read_back_cluster_scoped_with_its_owner(
    fake_kube: FakeKube, custom: client.CustomObjectsApi
) -> None:
    owner = Owner.jobset("llm", "training")
    fake_kube.create(objects.tpu_slice("llm-0", shape=V5E_256, owner=owner, since=SINCE))
    failed = objects.slice_status(ready="False", since=SINCE, failure="no capacity")
    fake_kube.patch_status("Slice", "llm-0", failed)

    read = custom.list_cluster_custom_object("accelerator.gke.io", "v1beta1", "slices")["items"]

    assert [s["metadata"]["name"] for s in read] == ["llm-0"]
    assert read[0]["metadata"]["labels"] == {
        labels.SLICE_OWNER_KIND: "JobSet",
        labels.SLICE_OWNER_NAME: "llm",
        labels.SLICE_OWNER_NAMESPACE: "training",
    }
    assert read[0]["spec"] == {"type": "tpu-v5-lite-podslice", "topology": "16x16"}
    conditions = {c["type"]: c["status"] for c in read[0]["status"]["conditions"]}
    assert conditions == {"Ready": "False", "SliceCreationFailed": "True"}


def test_gke_pools_of_every_demo_shape_are_listed_by_the_client(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    shapes = {
        "v6e": TpuShape("tpu-v6e-slice", "ct6e-standard-4t", "4x4"),
        "tpu7x": TpuShape("tpu7x", "tpu7x-standard-4t", "2x2x2"),
        "v5p": TpuShape("tpu-v5p-slice", "ct5p-hightpu-4t", "2x2x4", spot=True),
    }
    for name, shape in shapes.items():
        pool = tpu_node_pool(
            name,
            machine_type=shape.machine_type,
            topology=shape.topology,
            spot=shape.spot,
            accelerator=shape.accelerator,
        )
        fake_gke.put_node_pool(PROJECT, LOCATION, CLUSTER, pool)

    pools = gke_client.list_node_pools(parent=PARENT).node_pools

    assert [(p.name, p.placement_policy.tpu_topology, p.initial_node_count) for p in pools] == [
        ("v6e", "4x4", 4),
        ("tpu7x", "2x2x2", 2),
        ("v5p", "2x2x4", 4),
    ]
    assert pools[2].config.spot
    assert pools[0].status == NodePool.Status.RUNNING


def _ready(read: client.V1Node) -> client.V1NodeCondition:
    return next(c for c in read.status.conditions if c.type == "Ready")


def _ready_dict(conditions: list[objects.Obj]) -> objects.Obj:
    return next(c for c in conditions if c["type"] == "Ready")
