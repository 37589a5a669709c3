"""The series budget (``PerResourceSeries``): which kinds publish per-resource series, while
the fleet-wide families (histograms, chip figures) are always published."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from megamon.config import parse_config
from megamon.domain.distributions import Histogram, SeriesKey, Shape
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import Summary
from megamon.errors import ConfigError
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector

POOL = Attrs(nodepool_name="np", tpu_accelerator="tpu-v5p-slice", tpu_chip_count=8)
JOBSET = Attrs(jobset_name="js", jobset_uid="u", tpu_accelerator="tpu-v5p-slice")
HISTOGRAM = Histogram()
HISTOGRAM.add(60 * 10**9)
TTR = SeriesKey("time_to_recover_seconds", "nodepool", Shape("tpu-v5p-slice"), "maintenance")
SUSPENDED = Observation.build(expected=1, ready=0, status="Suspended", attrs=JOBSET, restarts=1)
TTR = SeriesKey("time_to_recover_seconds", "nodepool", Shape("tpu-v5p-slice"), "maintenance")
SUSPENDED = Observation.build(expected=1, ready=0, status="Suspended", attrs=JOBSET, restarts=1)
REPORT = Report(
    generated_at=1,
    kinds={
        Kind.NODEPOOL: KindReport(
            observations={"np": Observation.build(expected=1, ready=1, attrs=POOL)},
            summaries={"np": Summary(up_time=10, down_time=0)},
        ),
        Kind.JOBSET: KindReport(observations={"u": SUSPENDED}),
    },
    scheduling={"np": ScheduledJob(job_name="js-0", jobset_name="js")},
    distributions=((TTR, HISTOGRAM),),
    chips_down=(("nodepool", Shape("tpu-v5p-slice"), "maintenance", 480 * 10**9),),
    chip_availability=(("nodepool", "tpu-v5p-slice", 1.0),),
)


def names(per_resource: list[str] | None) -> set[str]:
    registry = CollectorRegistry()
    collector = ReportCollector(
        "megamon", lambda: REPORT, build=BuildInfo("0", "c", "d"), per_resource=per_resource
    )
    registry.register(collector)
    return {family.name for family in registry.collect() if family.samples}


FLEET = {
    "megamon_nodepool_time_to_recover_seconds",
    "megamon_nodepool_down_chip_seconds",
    "megamon_nodepool_chip_availability_ratio",
}


def test_by_default_every_kind_publishes_its_per_resource_series() -> None:
    published = names(None)
    assert {"megamon_nodepool_up", "megamon_jobset_up", "megamon_jobset_restarts",
            "megamon_jobset_suspended", "megamon_nodepool_job_scheduled"} <= published  # fmt: skip
    assert published >= FLEET


def test_fleet_only_keeps_the_histograms_and_chip_figures_and_nothing_per_resource() -> None:
    published = names([])
    assert published >= FLEET
    assert not {n for n in published if n.endswith(("_up", "_restarts", "_job_scheduled"))}
    assert "megamon_jobset_suspended" not in published


def test_one_kind_kept_the_others_dropped() -> None:
    published = names(["nodepool"])
    assert "megamon_nodepool_up" in published and "megamon_nodepool_job_scheduled" in published
    assert "megamon_jobset_up" not in published and "megamon_jobset_restarts" not in published


def test_the_config_key_names_kinds_and_refuses_anything_else() -> None:
    assert parse_config(b"{}", "config.json").PerResourceSeries is None
    assert parse_config(b'{"PerResourceSeries": []}', "config.json").PerResourceSeries == []
    kept = parse_config(b'{"PerResourceSeries": ["nodepool", "slice"]}', "c").PerResourceSeries
    assert kept == ["nodepool", "slice"]
    with pytest.raises(ConfigError, match=r"PerResourceSeries: 'jobsets' is not a kind"):
        parse_config(b'{"PerResourceSeries": ["jobsets"]}', "config.json")
