"""The maintenance-ahead gauges and allocatable chips as a scrape shows them: windows nest
from the report's time, a pool whose maintenance has begun no longer counts, JobSets are
counted once across their pools, every window is present at 0."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from megamon.domain.kinds import Kind
from megamon.domain.observations import NodePoolAttrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector

S = 10**9
NOW = 1_780_272_000 * S
V5P = "tpu-v5p-slice"


def pool(name: str, ahead_s: int | None, *, jobset: str = "", reason: str = "") -> Observation:
    attrs = NodePoolAttrs(
        nodepool_name=name,
        tpu_accelerator=V5P,
        tpu_topology="4x4x4",
        tpu_chip_count=64,
        scheduled_maintenance=NOW // S + ahead_s if ahead_s is not None else 0,
        maintenance_jobset=jobset,
    )
    cause = {"up": not reason, "reason": reason}
    return Observation(expected=16, ready=16, attrs=attrs, tpu_chips_allocatable=60, **cause)


def scrape(*pools: Observation) -> CollectorRegistry:
    kinds = {Kind.NODEPOOL: KindReport(observations={p.attrs.nodepool_name: p for p in pools})}
    report = Report(generated_at=NOW, kinds=kinds)
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BuildInfo("0", "c", "d")))
    return registry


def test_windows_nest_and_a_begun_maintenance_is_no_longer_ahead() -> None:
    registry = scrape(
        pool("a", 1800, jobset="ml/train"),
        pool("b", 5 * 3600, jobset="ml/train"),
        pool("c", 20 * 3600, jobset="ml/eval"),
        pool("d", 48 * 3600),
        pool("e", None),
        pool("f", -600, reason="maintenance"),  # announced, now down for it
    )
    expected = {"1h": (64, 1, 1), "6h": (128, 2, 1), "24h": (192, 3, 2)}
    for within, (chips, pools, jobsets) in expected.items():
        at = {"within": within, "tpu_accelerator": V5P}
        assert registry.get_sample_value("megamon_maintenance_scheduled_chips", at) == chips
        assert registry.get_sample_value("megamon_maintenance_scheduled_nodepools", at) == pools
        jobset_at = {"within": within}
        assert registry.get_sample_value("megamon_maintenance_scheduled_jobsets", jobset_at) == (
            jobsets
        )


def test_every_window_is_present_at_zero_when_nothing_is_announced() -> None:
    registry = scrape(pool("e", None))
    for within in ("1h", "6h", "24h"):
        at = {"within": within, "tpu_accelerator": V5P}
        assert registry.get_sample_value("megamon_maintenance_scheduled_chips", at) == 0.0
        jobsets = registry.get_sample_value(
            "megamon_maintenance_scheduled_jobsets", {"within": within}
        )
        assert jobsets == 0.0


def test_allocatable_chips_are_labelled_as_the_pools_other_series() -> None:
    labels = {"nodepool_name": "e", "tpu_accelerator": V5P, "tpu_topology": "4x4x4"}
    registry = scrape(pool("e", None))
    assert registry.get_sample_value("megamon_nodepool_tpu_chips_allocatable", labels) == 60.0
    assert registry.get_sample_value("megamon_nodepool_tpu_chip_count", labels) == 64.0
