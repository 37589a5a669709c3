"""``megamon_jobset_restarts``: a JobSet's ``status.restarts`` on /metrics, read through the
shipped JobSet description (docs/kinds.md) from the object as the JobSet controller writes it."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from megamon.domain import labels
from megamon.domain.kinds import Kind
from megamon.domain.reports import KindReport, Report
from megamon.errors import ObservationError
from megamon.observing.common import Settings
from megamon.observing.workloads import WorkloadObserver
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.sources.kube.projections import jobset_view

BUILD = BuildInfo("0.2.0", "abc", "2026-01-01")


def jobset(name: str, **status: Any) -> dict[str, Any]:
    selector = {labels.TPU_ACCELERATOR: "tpu-v5p-slice", labels.TPU_TOPOLOGY: "2x2x2"}
    job = {"name": "w", "replicas": 1,
           "template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}}}  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": {"replicatedJobs": [job]},
        "status": {"replicatedJobsStatus": [{"name": "w", "ready": 1}], **status},
    }


def scrape(*objects: dict[str, Any]) -> CollectorRegistry:
    observed = WorkloadObserver().jobsets([jobset_view(o) for o in objects], Settings())
    report = Report(
        generated_at=1, kinds={Kind.JOBSET: KindReport(observations=observed.observations)}
    )
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BUILD))
    return registry


def test_restarts_are_the_jobsets_status_restarts_labelled_as_its_up_series() -> None:
    registry = scrape(jobset("a", restarts=3), jobset("b", restarts=0))
    for name, value in (("a", 3.0), ("b", 0.0)):
        wanted = {"jobset_name": name, "jobset_namespace": "ml", "jobset_uid": f"uid-{name}",
                  "tpu_accelerator": "tpu-v5p-slice", "tpu_topology": "2x2x2"}  # fmt: skip
        assert registry.get_sample_value("megamon_jobset_restarts", wanted) == value
        assert registry.get_sample_value("megamon_jobset_up", wanted) == 1.0


def test_a_jobset_whose_controller_has_not_written_restarts_counts_zero() -> None:
    registry = scrape(jobset("new"))
    samples = [s for f in registry.collect() if f.name == "megamon_jobset_restarts"
               for s in f.samples]  # fmt: skip
    assert [s.value for s in samples] == [0.0]


def test_no_other_kind_has_a_restarts_series() -> None:
    registry = scrape(jobset("a", restarts=2))
    restarts = {f.name for f in registry.collect() if f.name.endswith("_restarts")}
    assert restarts == {"megamon_jobset_restarts"}


def test_a_restart_count_that_is_not_a_count_is_refused_naming_the_jobset() -> None:
    """The watch cache logs the refusal once and skips that one object."""
    with pytest.raises(ObservationError, match=r"jobset ml/bad: restarts status.restarts"):
        jobset_view(jobset("bad", restarts="three"))
