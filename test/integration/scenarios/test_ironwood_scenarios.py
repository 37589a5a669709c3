"""Ironwood (TPU7x) multi-host node pools through the real clients: GKE lists a pool placed by
a workload policy (no ``tpuTopology``), Compute Engine holds the topology, and megamon measures
the pool's provisioning from its first listing, before any node exists."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from megamon.domain.events import FLAG_FAILED, FLAG_UP
from megamon.domain.kinds import Kind
from megamon.domain.reports import Report
from megamon.domain.summaries import ProvisioningState
from megamon.recording.loading import load_kind
from test.integration.scenarios.world import Megamon, World, scrape

TOPOLOGY = "2x2x4"
"""16 chips: 4 tpu7x-standard-4t VMs."""


@pytest.fixture
def megamon(world: World) -> Iterator[Megamon]:
    running = Megamon(world)
    yield running
    running.stop()


def state(report: Report, name: str = "np") -> tuple[int, int, bool, str]:
    """(expected, ready, up, provisioning state) of the pool; -1s before it is observed."""
    obs = report.kind(Kind.NODEPOOL).observations.get(name)
    summary = report.kind(Kind.NODEPOOL).summaries.get(name)
    if obs is None or summary is None:
        return (-1, -1, False, "")
    return obs.expected, obs.ready, obs.up, summary.provisioning_state.value


def provisioning_series(report: Report) -> dict[str, dict[str, str]]:
    """The pool's ``megamon_nodepool_provisioning_duration_seconds`` series as ``/metrics``
    serves them, by provisioning state: their labels."""
    found: dict[str, dict[str, str]] = {}
    for family in text_string_to_metric_families(scrape(report)):
        for sample in family.samples:
            if sample.name == "megamon_nodepool_provisioning_duration_seconds":
                found[sample.labels["provisioning_state"]] = dict(sample.labels)
    return found


def gets(megamon: Megamon, *, failed: bool) -> float:
    labels = {"method": "GetResourcePolicy", "error": "true" if failed else "false"}
    registry = megamon.instruments.registry
    return registry.get_sample_value("megamon_gke_latency_seconds_count", labels) or 0.0


def test_a_tpu7x_pool_provisions_from_no_node_to_up_sized_by_its_workload_policy(
    world: World, megamon: Megamon
) -> None:
    world.workload_policy("wp-2x2x4", TOPOLOGY)
    world.tpu7x_pool("np", "wp-2x2x4", TOPOLOGY, "PROVISIONING")
    report = megamon.settle(lambda r: state(r) == (4, 0, False, "provisioning"))
    attrs = report.kind(Kind.NODEPOOL).observations["np"].attrs
    assert (attrs.tpu_topology, attrs.tpu_accelerator, attrs.tpu_chip_count) == (
        TOPOLOGY,
        "tpu7x",
        16,
    )
    labels = provisioning_series(report)["provisioning"]
    assert (labels["tpu_topology"], labels["tpu_accelerator"]) == (TOPOLOGY, "tpu7x")

    for i in range(3):
        world.node(f"np-{i}", "np", topology=TOPOLOGY, accelerator="tpu7x")
    megamon.settle(lambda r: state(r) == (4, 3, False, "provisioning"))
    world.node("np-3", "np", topology=TOPOLOGY, accelerator="tpu7x")
    world.pool_status("np", "RUNNING")
    done = megamon.settle(lambda r: state(r) == (4, 4, True, "success"))

    summary = done.kind(Kind.NODEPOOL).summaries["np"]
    assert summary.provisioning_duration > 0 and summary.interruption_count == 0
    labels = provisioning_series(done)["success"]
    assert (labels["tpu_topology"], labels["tpu_accelerator"]) == (TOPOLOGY, "tpu7x")
    # One Compute call for the pool's life: a policy's topology never changes.
    assert (gets(megamon, failed=False), gets(megamon, failed=True)) == (1.0, 0.0)
    record = load_kind(megamon.store, Kind.NODEPOOL).history.records["np"]
    assert [bool(f & FLAG_UP) for f in record.flags] == [False, True]


def test_a_tpu7x_pool_that_fails_to_provision_is_recorded_failed(
    world: World, megamon: Megamon
) -> None:
    world.workload_policy("wp-2x2x4", TOPOLOGY)
    world.tpu7x_pool("np", "wp-2x2x4", TOPOLOGY, "PROVISIONING")
    first = megamon.settle(lambda r: state(r) == (4, 0, False, "provisioning"))
    world.pool_status("np", "ERROR")
    failed = megamon.settle(lambda r: state(r)[3] == ProvisioningState.FAILED)

    obs = failed.kind(Kind.NODEPOOL).observations["np"]
    assert obs.failed and obs.attrs.tpu_topology == TOPOLOGY
    summary = failed.kind(Kind.NODEPOOL).summaries["np"]
    elapsed = (failed.generated_at - first.generated_at) / 1e9
    assert summary.provisioning_duration >= elapsed
    labels = provisioning_series(failed)["failed"]
    assert (labels["tpu_topology"], labels["tpu_accelerator"]) == (TOPOLOGY, "tpu7x")
    record = load_kind(megamon.store, Kind.NODEPOOL).history.records["np"]
    assert record.flags[-1] & FLAG_FAILED and not record.flags[-1] & FLAG_UP


def test_a_tpu7x_pool_whose_policy_is_refused_is_sized_by_its_nodes(
    world: World, megamon: Megamon
) -> None:
    """403 from Compute (no compute.resourcePolicies.get): the pool is observed as soon as a
    node tells its topology, and the refusal is counted, not retried every poll."""
    world.gke.inject_fault(status=403, count=1_000, path_prefix="/compute/")
    world.tpu7x_pool("np", "wp-2x2x4", TOPOLOGY, "PROVISIONING")
    megamon.settle(lambda r: gets(megamon, failed=True) == 1.0 and state(r)[0] == -1)
    for i in range(4):
        world.node(f"np-{i}", "np", topology=TOPOLOGY, accelerator="tpu7x")
    world.pool_status("np", "RUNNING")
    report = megamon.settle(lambda r: state(r) == (4, 4, True, "success"))
    assert report.kind(Kind.NODEPOOL).observations["np"].attrs.tpu_topology == TOPOLOGY
    assert gets(megamon, failed=True) == 1.0  # within DEFAULT_RETRY_AFTER, asked once
