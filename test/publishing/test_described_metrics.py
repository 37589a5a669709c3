"""Described kinds on /metrics: the per-kind contract of docs/metrics.md under the kind's own
noun and label keys (rendered from hand-built reports)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from megamon.codec import report as report_codec
from megamon.domain.descriptions import KindDescription, shipped
from megamon.domain.kinds import kind_spec
from megamon.domain.observations import Observation, WorkloadAttrs
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import Summary
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector

BUILD = BuildInfo("0.2.0", "abc", "2026-01-01")
TRAINJOB = shipped("trainjob")
WORKLOAD = shipped("kueue-workload")


def observation(name: str, up: bool) -> Observation:
    attrs = WorkloadAttrs(
        workload_name=name,
        workload_namespace="ml",
        workload_uid=f"uid-{name}",
        tpu_topology="4x4",
        tpu_chip_count=16,
    )
    return Observation.build(expected=2, ready=2 if up else 0, attrs=attrs)


def registry_for(report: Report, *kinds: KindDescription) -> CollectorRegistry:
    registry = CollectorRegistry()
    described = [k.kind for k in kinds]
    registry.register(ReportCollector("megamon", lambda: report, build=BUILD, described=described))
    return registry


def test_a_described_kind_has_every_per_kind_series_under_its_noun() -> None:
    report = Report(generated_at=1, kinds={TRAINJOB.kind: KindReport()})
    collector = ReportCollector("megamon", lambda: report, build=BUILD, described=[TRAINJOB.kind])
    described = {family.name: family.documentation for family in collector.describe()}
    nodepool = {n.removeprefix("megamon_nodepool_") for n in described if "_nodepool_" in n}
    trainjob = {n.removeprefix("megamon_trainjob_") for n in described if "_trainjob_" in n}
    own = {"queueing_seconds"}  # a described kind's queueing stages
    assert trainjob == nodepool - {"job_scheduled", "surplus_nodes", "tpu_chips_allocatable"} | own
    assert described["megamon_trainjob_up"] == (
        "1 if the TrainJob is up (ready and not expected down), else 0."
    )


def test_the_name_namespace_and_uid_carry_the_labels_the_description_names() -> None:
    kinds = {
        TRAINJOB.kind: KindReport(
            observations={"uid-a": observation("a", True)},
            summaries={"uid-a": Summary(interruption_count=1)},
        ),
        # The same attrs in another kind: its own label keys, never the first kind's.
        WORKLOAD.kind: KindReport(observations={"uid-a": observation("a", False)}),
    }
    registry = registry_for(Report(generated_at=1, kinds=kinds), TRAINJOB, WORKLOAD)
    trainjob = {
        "trainjob_name": "a",
        "trainjob_namespace": "ml",
        "trainjob_uid": "uid-a",
        "tpu_topology": "4x4",
    }
    workload = {
        "kueue_workload_name": "a",
        "kueue_workload_namespace": "ml",
        "kueue_workload_uid": "uid-a",
        "tpu_topology": "4x4",
    }
    for _ in range(2):  # the label sets are reused on the next scrape
        assert registry.get_sample_value("megamon_trainjob_up", trainjob) == 1.0
        assert registry.get_sample_value("megamon_trainjob_interruption_count", trainjob) == 1.0
        assert registry.get_sample_value("megamon_trainjob_tpu_chip_count", trainjob) == 16.0
        assert registry.get_sample_value("megamon_kueue_workload_up", workload) == 0.0


def test_a_described_kind_missing_from_the_report_has_no_series() -> None:
    registry = registry_for(Report(generated_at=1), TRAINJOB)
    names = {s.name for family in registry.collect() for s in family.samples}
    assert not any(name.startswith("megamon_trainjob_") for name in names)


def test_the_report_json_carries_described_kinds_after_the_go_keys() -> None:
    """Exporters write every kind: a described kind's two sections come after the Go
    megamon's keys (new keys only), with the workload's name, namespace and UID."""
    kinds = {
        TRAINJOB.kind: KindReport(
            observations={"uid-a": observation("a", True)},
            summaries={"uid-a": Summary(interruption_count=1)},
        )
    }
    document = report_codec.report_dict(Report(generated_at=1, kinds=kinds))
    keys = list(document)
    spec = kind_spec(TRAINJOB.kind)
    assert keys[-3:] == [spec.report_up_key, spec.report_summaries_key, "generatedAt"]
    up = document[spec.report_up_key]["uid-a"]
    assert (up["up"], up["workloadName"], up["workloadUID"], up["tpuChipCount"]) == (
        True,
        "a",
        "uid-a",
        16,
    )
    summary = document[spec.report_summaries_key]["uid-a"]
    assert summary["interruptionCount"] == 1 and summary["workloadNamespace"] == "ml"
    without = report_codec.report_dict(Report(generated_at=1))
    assert list(without) == [
        k for k in keys if k not in (spec.report_up_key, spec.report_summaries_key)
    ]
