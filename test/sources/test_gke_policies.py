"""Workload policies (the topology of Ironwood, TPU7x, multi-host pools) read with the real
compute_v1 ResourcePoliciesClient against the GKE emulator, and the lister that sizes a pool
placed by one."""

from __future__ import annotations

import logging
import subprocess
import sys
from functools import partial

import pytest
from google.auth import exceptions as auth_exceptions
from google.cloud import compute_v1
from prometheus_client import CollectorRegistry

from internal.fakegke import FakeGke, tpu7x_node_pool, workload_policy
from megamon.errors import SourceError
from megamon.sources.gke.lister import GkeNodePoolLister, make_client
from megamon.sources.gke.policies import (
    ComputeWorkloadPolicies,
    PolicyRef,
    make_compute_client,
    policy_ref,
    region_of,
)
from megamon.telemetry import Instruments

PROJECT, ZONE, REGION = "p", "us-central1-c", "us-central1"
REF = f"projects/{PROJECT}/locations/{ZONE}/clusters/c"
POLICY = f"projects/{PROJECT}/regions/{REGION}/resourcePolicies"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def policies(
    fake: FakeGke, registry: CollectorRegistry | None = None, clock: Clock | None = None
) -> ComputeWorkloadPolicies:
    return ComputeWorkloadPolicies(
        PROJECT,
        REGION,
        partial(make_compute_client, fake.endpoint),
        instruments=Instruments("megamon", registry or CollectorRegistry()),
        initial_backoff=0.01,
        deadline=1.0,
        clock=clock or Clock(),
    )


def calls(registry: CollectorRegistry, *, failed: bool) -> float | None:
    labels = {"method": "GetResourcePolicy", "error": "true" if failed else "false"}
    return registry.get_sample_value("megamon_gke_latency_seconds_count", labels)


def test_region_of_a_zone_or_a_region() -> None:
    assert region_of("us-central1-c") == "us-central1"
    assert region_of("europe-west4") == "europe-west4"


def test_a_policy_name_a_path_or_a_url() -> None:
    assert policy_ref("wp", "p", "r") == PolicyRef("p", "r", "wp")
    url = "https://www.googleapis.com/compute/v1/projects/q/regions/s/resourcePolicies/wp"
    assert policy_ref(url, "p", "r") == PolicyRef("q", "s", "wp")
    assert policy_ref("projects/q/regions/s/resourcePolicies/wp", "p", "r") == PolicyRef(
        "q", "s", "wp"
    )


def test_the_topology_is_read_once_per_policy_and_timed(fake_gke: FakeGke) -> None:
    fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "4x4x8"))
    registry = CollectorRegistry()
    reader = policies(fake_gke, registry)
    assert reader.topology("wp") == "4x4x8"
    before = fake_gke.request_count
    assert reader.topology("wp") == "4x4x8"
    assert reader.topology(f"{POLICY}/wp") == "4x4x8"  # the same policy, named in full
    assert fake_gke.request_count == before
    assert (calls(registry, failed=False), calls(registry, failed=True)) == (1.0, 0.0)


@pytest.mark.parametrize("status", [403, 404])
def test_a_refused_policy_is_one_log_line_counted_and_asked_again_later(
    fake_gke: FakeGke, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "2x2x2"))
    if status == 403:
        fake_gke.inject_fault(status=403, count=2, path_prefix="/compute/")
    else:
        fake_gke.delete_resource_policy(PROJECT, REGION, "wp")
    registry, clock = CollectorRegistry(), Clock()
    reader = policies(fake_gke, registry, clock)
    caplog.set_level(logging.WARNING, "megamon.sources.gke.policies")
    for _ in range(3):
        with pytest.raises(SourceError, match=rf"GetResourcePolicy {POLICY}/wp: {status}"):
            reader.topology("wp")
    assert calls(registry, failed=True) == 1.0  # not asked again within retry_after
    clock.now += 61
    with pytest.raises(SourceError):
        reader.topology("wp")
    assert calls(registry, failed=True) == 2.0
    assert len(caplog.records) == 1, caplog.text  # the same failure, one line
    if status == 404:
        fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "2x2x2"))
    clock.now += 61
    assert reader.topology("wp") == "2x2x2"


def test_an_unreachable_api_gives_up_within_the_deadline() -> None:
    reader = ComputeWorkloadPolicies(
        PROJECT,
        REGION,
        partial(make_compute_client, "http://127.0.0.1:9"),
        initial_backoff=0.01,
        deadline=0.5,
        timeout=0.2,
    )
    with pytest.raises(SourceError, match="gave up"):
        reader.topology("wp")


def test_a_policy_without_an_accelerator_topology_is_an_error(fake_gke: FakeGke) -> None:
    spread = {"name": "spread", "workloadPolicy": {"type": "HIGH_AVAILABILITY"}}
    fake_gke.put_resource_policy(PROJECT, REGION, spread)
    with pytest.raises(SourceError, match=r"no workloadPolicy\.acceleratorTopology"):
        policies(fake_gke).topology("spread")


def test_the_lister_sizes_a_tpu7x_pool_from_its_policy(fake_gke: FakeGke) -> None:
    fake_gke.put_resource_policy(PROJECT, REGION, workload_policy("wp", "2x2x2"))
    fake_gke.put_node_pool(PROJECT, ZONE, "c", tpu7x_node_pool("np", "wp"))
    fake_gke.put_node_pool(PROJECT, ZONE, "c", tpu7x_node_pool("lost", "gone"))
    lister = GkeNodePoolLister(REF, make_client(fake_gke.endpoint), policies=policies(fake_gke))
    views = {view.name: view for view in lister.list_node_pools()}
    np, lost = views["np"], views["lost"]
    assert (np.tpu_topology, np.placement_policy, np.accelerator) == ("2x2x2", "wp", "tpu7x")
    assert np.machine_type == "tpu7x-standard-4t" and not np.topology_problem
    assert (lost.tpu_topology, lost.placement_policy) == ("", "gone")
    assert "404" in lost.topology_problem and f"{POLICY}/gone" in lost.topology_problem


def test_the_client_is_made_at_the_first_policy_and_missing_credentials_are_its_error() -> None:
    """A cluster without TPU7x pools never needs Compute Engine: no credentials is a
    failure of the policy's pools, not of megamon's start."""
    made: list[int] = []

    def connect() -> compute_v1.ResourcePoliciesClient:
        made.append(1)
        raise auth_exceptions.DefaultCredentialsError("Your default credentials were not found")

    registry = CollectorRegistry()
    instruments = Instruments("megamon", registry)
    reader = ComputeWorkloadPolicies(PROJECT, REGION, connect, instruments=instruments)
    assert made == []
    with pytest.raises(SourceError, match=r"resourcePolicies/wp: no Google Cloud credentials"):
        reader.topology("wp")
    assert made == [1]


def test_the_compute_client_module_is_loaded_only_when_a_policy_is_read() -> None:
    """``google.cloud.compute_v1`` weighs about 150 MB in a process: megamon's wiring does not
    load it, so a fleet without workload policies never pays for it."""
    code = (
        "import sys, megamon.app, megamon.cli.main; "
        "sys.exit('google.cloud.compute_v1' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
