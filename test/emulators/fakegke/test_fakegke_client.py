"""The real REST ClusterManagerClient reading node pools from the fake GKE server."""

from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions
from google.cloud.container_v1 import ClusterManagerClient, NodePool

from internal.fakegke import FakeGke, tpu_node_pool

pytestmark = pytest.mark.integration

PARENT = "projects/proj/locations/us-central2-b/clusters/tpu"
CLUSTER = ("proj", "us-central2-b", "tpu")


def test_list_node_pools_decodes_gke_fields(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("v5e-a", spot=True, status="PROVISIONING"))
    fake_gke.put_node_pool(
        *CLUSTER, tpu_node_pool("v5p-b", "ct5p-hightpu-4t", "2x2x4", accelerator="tpu-v5p-slice")
    )

    pools = gke_client.list_node_pools(parent=PARENT).node_pools

    assert [p.name for p in pools] == ["v5e-a", "v5p-b"]
    first, second = pools
    assert first.status == NodePool.Status.PROVISIONING
    assert first.config.machine_type == "ct5lp-hightpu-4t"
    assert first.config.spot is True
    assert first.config.resource_labels["goog-gke-accelerator-type"] == "tpu-v5-lite-podslice"
    assert first.placement_policy.tpu_topology == "16x16"
    assert first.placement_policy.type_ == NodePool.PlacementPolicy.Type.COMPACT
    assert first.initial_node_count == 64
    assert first.self_link.endswith(f"/v1/{PARENT}/nodePools/v5e-a")
    assert second.status == NodePool.Status.RUNNING
    assert second.config.spot is False
    assert second.config.resource_labels["goog-gke-accelerator-type"] == "tpu-v5p-slice"
    assert second.placement_policy.tpu_topology == "2x2x4"
    assert second.initial_node_count == 4
    assert fake_gke.request_count == 1


def test_get_node_pool(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    fake_gke.put_node_pool(
        *CLUSTER, tpu_node_pool("np", status="ERROR", status_message="GCE_STOCKOUT in zone")
    )

    pool = gke_client.get_node_pool(name=f"{PARENT}/nodePools/np")

    assert pool.name == "np"
    assert pool.status == NodePool.Status.ERROR
    assert pool.status_message == "GCE_STOCKOUT in zone"


@pytest.mark.parametrize("status", list(NodePool.Status.__members__))
def test_every_v1_status_round_trips(
    status: str, fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))
    fake_gke.set_status(*CLUSTER, "np", status, message=f"now {status}")

    pool = gke_client.get_node_pool(name=f"{PARENT}/nodePools/np")

    assert pool.status == NodePool.Status.__members__[status]
    assert pool.status_message == f"now {status}"


def test_set_status_with_empty_message_clears_it(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np", status="ERROR", status_message="boom"))
    fake_gke.set_status(*CLUSTER, "np", "RECONCILING")

    pool = gke_client.get_node_pool(name=f"{PARENT}/nodePools/np")

    assert pool.status == NodePool.Status.RECONCILING
    assert pool.status_message == ""


def test_cluster_without_pools_lists_empty(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))
    fake_gke.delete_node_pool(*CLUSTER, "np")

    assert list(gke_client.list_node_pools(parent=PARENT).node_pools) == []


def test_python_api_replace_is_seen_by_client(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np", topology="4x4"))
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np", topology="8x8", spot=True))

    pools = gke_client.list_node_pools(parent=PARENT).node_pools

    assert len(pools) == 1
    assert pools[0].placement_policy.tpu_topology == "8x8"
    assert pools[0].config.spot is True


def test_clusters_are_separate(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    fake_gke.put_node_pool("proj", "us-east5", "other", tpu_node_pool("elsewhere"))
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("here"))

    pools = gke_client.list_node_pools(parent=PARENT).node_pools

    assert [p.name for p in pools] == ["here"]


def test_deprecated_zonal_arguments_use_the_zones_path(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))

    pools = gke_client.list_node_pools(project_id="proj", zone="us-central2-b", cluster_id="tpu")

    assert [p.name for p in pools.node_pools] == ["np"]


def test_unknown_cluster_is_not_found(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    with pytest.raises(exceptions.NotFound) as raised:
        gke_client.list_node_pools(parent="projects/proj/locations/l/clusters/nope")

    assert raised.value.code == 404
    assert "Not found: projects/proj/locations/l/clusters/nope." in raised.value.message


def test_unknown_pool_is_not_found(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))

    with pytest.raises(exceptions.NotFound, match="nodePools/missing"):
        gke_client.get_node_pool(name=f"{PARENT}/nodePools/missing")


def test_unimplemented_rpc_fails_loudly(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    with pytest.raises(exceptions.MethodNotImplemented, match="fakegke serves only"):
        gke_client.list_clusters(parent="projects/proj/locations/-")


def test_stopped_server_refuses_connections(
    gke_client: ClusterManagerClient, fake_gke: FakeGke
) -> None:
    fake_gke.stop()

    # The REST transport does not wrap transport errors: it is requests' own exception,
    # not a google.api_core exception, and the default retry does not retry it.
    with pytest.raises(requests.exceptions.ConnectionError):
        gke_client.list_node_pools(parent=PARENT)


def test_a_created_cluster_lists_no_pools_before_its_first(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    """A cluster exists before its first node pool: listing it answers none, not 404."""
    fake_gke.create_cluster(*CLUSTER)

    assert list(gke_client.list_node_pools(parent=PARENT).node_pools) == []
