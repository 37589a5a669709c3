"""The fake's Compute Engine surface: the workload policies of Ironwood (TPU7x) pools, read
with the real compute_v1 ResourcePoliciesClient, and pools placed by them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.api_core import exceptions
from google.cloud import compute_v1
from google.cloud.container_v1 import ClusterManagerClient

from internal.fakegke import FakeGke, tpu7x_node_pool, workload_policy
from megamon.sources.gke.policies import make_compute_client
from test.emulators.fakegke.test_fakegke_admin import http

pytestmark = pytest.mark.integration

PROJECT, REGION = "proj", "europe-west4"
POLICIES = f"/compute/v1/projects/{PROJECT}/regions/{REGION}/resourcePolicies"


@pytest.fixture
def compute(fake_gke: FakeGke) -> Iterator[compute_v1.ResourcePoliciesClient]:
    client = make_compute_client(fake_gke.endpoint)
    yield client
    client.transport.close()


def test_a_workload_policy_is_read_with_its_topology(
    fake_gke: FakeGke, compute: compute_v1.ResourcePoliciesClient
) -> None:
    fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "4x4x8"))
    got = compute.get(project=PROJECT, region=REGION, resource_policy="wp")
    assert got.name == "wp" and got.status == "READY"
    assert got.workload_policy.type_ == "HIGH_THROUGHPUT"
    assert got.workload_policy.accelerator_topology == "4x4x8"
    assert got.self_link.endswith(f"{POLICIES}/wp")
    assert got.region.endswith(f"/regions/{REGION}")


def test_an_unknown_policy_is_compute_engines_404(
    fake_gke: FakeGke, compute: compute_v1.ResourcePoliciesClient
) -> None:
    with pytest.raises(exceptions.NotFound, match="projects/proj/regions/europe-west4/"):
        compute.get(project=PROJECT, region=REGION, resource_policy="nope")
    fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "2x2x2"))
    fake_gke.delete_resource_policy(PROJECT, REGION, "wp")
    with pytest.raises(exceptions.NotFound):
        compute.get(project=PROJECT, region="us-east5", resource_policy="wp")


def test_policies_are_set_up_over_admin_http_and_other_methods_are_unimplemented(
    fake_gke: FakeGke, compute: compute_v1.ResourcePoliciesClient
) -> None:
    code, stored = http(fake_gke, "PUT", f"/admin{POLICIES}/wp", workload_policy("x", "2x2x4"))
    assert (code, stored["name"]) == (200, "wp")
    assert compute.get(project=PROJECT, region=REGION, resource_policy="wp").name == "wp"
    code, body = http(fake_gke, "POST", POLICIES, {"name": "new"})
    assert (code, body["error"]["status"]) == (501, "UNIMPLEMENTED")


def test_compute_faults_target_compute_by_path(
    fake_gke: FakeGke, compute: compute_v1.ResourcePoliciesClient
) -> None:
    fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "2x2x2"))
    fake_gke.inject_fault(status=403, count=1, path_prefix="/compute/")
    with pytest.raises(exceptions.Forbidden):
        compute.get(project=PROJECT, region=REGION, resource_policy="wp")
    assert compute.get(project=PROJECT, region=REGION, resource_policy="wp").name == "wp"


def test_a_tpu7x_pool_names_its_policy_and_has_no_tpu_topology(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(PROJECT, f"{REGION}-a", "c", tpu7x_node_pool("np", "wp", "4x4x4"))
    (got,) = gke_client.list_node_pools(
        parent=f"projects/{PROJECT}/locations/{REGION}-a/clusters/c"
    ).node_pools
    assert (got.placement_policy.policy_name, got.placement_policy.tpu_topology) == ("wp", "")
    assert got.config.machine_type == "tpu7x-standard-4t"
    assert got.config.resource_labels["goog-gke-accelerator-type"] == "tpu7x"
    assert got.initial_node_count == 16  # 64 chips on 4-chip VMs
