"""Histograms on /metrics from the durable history: a node pool interrupted for maintenance
through the emulators, read back after megamon restarts on the same store, and after the
pool is deleted (its periods stay counted)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from megamon.domain import interruptions
from megamon.domain.kinds import Kind
from megamon.domain.reports import Report
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.stores.memory import MemoryEventStore
from test.integration.scenarios.world import Megamon, World

NAME = "megamon_nodepool_time_to_recover_seconds"
LABELS = {"tpu_accelerator": "tpu-v5-lite-podslice", "tpu_topology": "2x4", "reason": "maintenance"}


def scrape(report: Report) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BuildInfo("0", "c", "d")))
    return registry


def recovered_once(report: Report) -> bool:
    return scrape(report).get_sample_value(f"{NAME}_count", LABELS) == 1.0


def test_time_to_recover_survives_a_restart_and_the_pools_deletion(world: World) -> None:
    store = MemoryEventStore()
    first = Megamon(world, store=store)
    try:
        world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
        world.node("np-0", "np", topology="2x4")
        first.settle(lambda r: r.kind(Kind.NODEPOOL).observations.get("np") is not None
                     and r.kind(Kind.NODEPOOL).observations["np"].up)  # fmt: skip
        world.patch_node(
            "np-0",
            {"metadata": {"labels": {"cloud.google.com/active-node-maintenance": "ONGOING"}}},
        )
        world.ready("np-0", "False")
        first.settle(lambda r: r.kind(Kind.NODEPOOL).observations["np"].reason
                     == interruptions.MAINTENANCE)  # fmt: skip
        world.ready("np-0", "True")
        report = first.settle(recovered_once)
        registry = scrape(report)
        assert registry.get_sample_value(f"{NAME}_bucket", {**LABELS, "le": "+Inf"}) == 1.0
        between = "megamon_nodepool_time_between_interruptions_seconds_count"
        assert registry.get_sample_value(between, LABELS) == 1.0
        provisioning = "megamon_nodepool_provisioning_seconds_count"
        success = {**{k: LABELS[k] for k in ("tpu_accelerator", "tpu_topology")},
                   "provisioning_state": "success"}  # fmt: skip
        assert registry.get_sample_value(provisioning, success) == 1.0
        ttr_s = registry.get_sample_value(f"{NAME}_sum", LABELS)
        chips_down = registry.get_sample_value("megamon_nodepool_down_chip_seconds", LABELS)
        assert ttr_s is not None and chips_down == pytest.approx(8 * ttr_s)  # 2x4: 8 chips
        availability = registry.get_sample_value(
            "megamon_nodepool_chip_availability_ratio",
            {"tpu_accelerator": LABELS["tpu_accelerator"]},
        )
        assert availability is not None and 0.0 < availability < 1.0
        assert first.aggregator.persist_once()
    finally:
        first.stop()
    second = Megamon(world, store=store)  # a restart, or a new leader: the same history
    try:
        second.settle(recovered_once)
        world.gke.delete_node_pool("proj", "us-central2", "tpu-cluster", "np")
        world.delete_node("np-0")
        second.settle(lambda r: "np" not in r.kind(Kind.NODEPOOL).observations)
        second.settle(recovered_once)
        assert second.aggregator.persist_once()
    finally:
        second.stop()
    third = Megamon(world, store=store)  # the pool is only in the archive now
    try:
        report = third.settle(recovered_once)
        assert "np" not in report.kind(Kind.NODEPOOL).observations
    finally:
        third.stop()
