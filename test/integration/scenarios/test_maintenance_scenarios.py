"""Maintenance ahead and allocatable chips, driven through the emulators with the real
clients: GKE's ``scheduled-maintenance-time`` label on a node, the nodes' allocatable TPU
chips, then the maintenance beginning — read from the metrics megamon publishes and the
history it writes. megamon's clock moves only when the test advances it, so the 3 h between
the announcement and the maintenance take no time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from megamon.cli import report_format, report_html
from megamon.domain import interruptions, labels, timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import NodePoolAttrs, Observation
from megamon.domain.reports import Report
from megamon.fleet.resources import read_resources
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.recording.loading import load_kind
from megamon.summary.availability import AvailabilityReport, Window, availability_report
from test.integration.scenarios.world import Megamon, World

S = 10**9
V5E = "tpu-v5-lite-podslice"


class Clock:
    """megamon's clock: it moves only when the test says; on a whole second, as GKE's label."""

    def __init__(self) -> None:
        self.now = time.time_ns() // S * S

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def megamon(world: World, clock: Clock) -> Iterator[Megamon]:
    running = Megamon(world, grace_s=180, clock=clock)
    yield running
    running.stop()


def scrape(report: Report) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BuildInfo("0", "c", "d")))
    return registry


def pool(report: Report) -> Observation | None:
    return report.kind(Kind.NODEPOOL).observations.get("np")


def two_node_pool(world: World, megamon: Megamon, *, announced_s: int) -> Report:
    """A running 2x4 v5e pool (two 4-chip nodes); its second node announces a maintenance."""
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-4t")
    world.node("np-0", "np", topology="2x4")
    schedule = {labels.SCHEDULED_MAINTENANCE_TIME: str(announced_s)}
    world.node("np-1", "np", topology="2x4", extra=schedule)
    for node in ("np-0", "np-1"):
        world.allocatable(node, "4")
    return megamon.settle(
        lambda r: (
            (obs := pool(r)) is not None
            and obs.up
            and obs.tpu_chips_allocatable == 8
            and isinstance(obs.attrs, NodePoolAttrs)
            and obs.attrs.scheduled_maintenance == announced_s
        )
    )


def test_an_announced_maintenance_counts_in_its_windows_and_its_lead_time_when_it_begins(
    world: World, megamon: Megamon, clock: Clock
) -> None:
    in_3h = clock.now // S + 3 * 3600
    report = two_node_pool(world, megamon, announced_s=in_3h)
    registry = scrape(report)
    for within, chips in (("1h", 0.0), ("6h", 8.0), ("24h", 8.0)):
        at = {"within": within, "tpu_accelerator": V5E}
        assert registry.get_sample_value("megamon_maintenance_scheduled_chips", at) == chips
        assert registry.get_sample_value("megamon_maintenance_scheduled_nodepools", at) == chips / 8
    # The announcement is in the history the report reads.
    recorded = load_kind(megamon.store, Kind.NODEPOOL).history.attrs["np"]
    assert recorded["scheduledMaintenanceTime"] == in_3h
    assert recorded["maintenanceAnnouncedTime"] == clock.now // S

    # megamon report, on the history megamon wrote, names it beside "down now".
    assert megamon.aggregator.persist_once()
    scheduled = history_report(megamon, clock.now)
    (entry,) = report_format.report_dict(scheduled)["maintenanceScheduled"]
    assert (entry["kind"], entry["name"], entry["jobset"]) == ("nodepool", "np", "")
    assert entry["at"] == timestamps.format_ns(in_3h * S)
    assert entry["text"].startswith("nodepool np maintenance in 3h")
    assert "Maintenance scheduled:\n  nodepool np maintenance in 3h" in (
        report_format.render_table(scheduled)
    )
    assert 'id="maintenance-scheduled"' in report_html.render_html(scheduled)

    # Three hours later GKE begins the maintenance and drops the announcement.
    clock.now += 3 * 3600 * S
    world.patch_node(
        "np-1",
        {
            "metadata": {
                "labels": {
                    labels.ACTIVE_NODE_MAINTENANCE: labels.MAINTENANCE_ONGOING,
                    labels.SCHEDULED_MAINTENANCE_TIME: None,
                }
            }
        },
    )
    world.ready("np-1", "False")
    report = megamon.settle(
        lambda r: (obs := pool(r)) is not None and obs.reason == interruptions.MAINTENANCE
    )
    registry = scrape(report)
    announced = {"announced": "true", "tpu_accelerator": V5E, "tpu_topology": "2x4"}
    name = "megamon_nodepool_maintenance_lead_time_seconds"
    assert registry.get_sample_value(f"{name}_count", announced) == 1.0
    assert registry.get_sample_value(f"{name}_sum", announced) == 3 * 3600.0
    assert registry.get_sample_value(f"{name}_count", {**announced, "announced": "false"}) is None
    at = {"within": "24h", "tpu_accelerator": V5E}
    assert registry.get_sample_value("megamon_maintenance_scheduled_chips", at) == 0.0
    assert megamon.aggregator.persist_once()  # begun: down now, no longer scheduled
    document = report_format.report_dict(history_report(megamon, clock.now))
    assert document["maintenanceScheduled"] == []
    assert [d["reason"] for d in document["downNow"]] == [interruptions.MAINTENANCE]


def history_report(megamon: Megamon, now: int) -> AvailabilityReport:
    resources = list(read_resources(megamon.store, [Kind.NODEPOOL], {}, now))
    return availability_report(resources, Window(now=now, since=None))


def test_allocatable_chips_equal_the_topologys_until_a_node_reports_none(
    world: World, megamon: Megamon, clock: Clock
) -> None:
    report = two_node_pool(world, megamon, announced_s=clock.now // S + 30 * 3600)
    labels_of_pool = {"nodepool_name": "np", "tpu_accelerator": V5E, "tpu_topology": "2x4"}
    registry = scrape(report)
    assert registry.get_sample_value("megamon_nodepool_tpu_chip_count", labels_of_pool) == 8.0
    name = "megamon_nodepool_tpu_chips_allocatable"
    assert registry.get_sample_value(name, labels_of_pool) == 8.0
    at = {"within": "24h", "tpu_accelerator": V5E}
    assert registry.get_sample_value("megamon_maintenance_scheduled_chips", at) == 0.0

    world.allocatable("np-0", "0")  # its TPUs failed: the device plugin offers none
    report = megamon.settle(
        lambda r: (obs := pool(r)) is not None and obs.tpu_chips_allocatable == 4
    )
    assert scrape(report).get_sample_value(name, labels_of_pool) == 4.0
