"""``megamon_jobset_restarts{kind}``: a JobSet's restarts of each kind on /metrics — whole
(``status.restarts``, read through the shipped JobSet description, docs/kinds.md), single-Job
(``jobRestarts``) and in-place (KEP-467's attempts) — from the object as the JobSet
controller writes it."""

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


def labelled(name: str) -> dict[str, str]:
    return {"jobset_name": name, "jobset_namespace": "ml", "jobset_uid": f"uid-{name}",
            "tpu_accelerator": "tpu-v5p-slice", "tpu_topology": "2x2x2"}  # fmt: skip


def test_whole_restarts_are_the_jobsets_status_restarts_labelled_as_its_up_series() -> None:
    registry = scrape(jobset("a", restarts=3), jobset("b", restarts=0))
    for name, value in (("a", 3.0), ("b", 0.0)):
        wanted = labelled(name)
        restarts = {**wanted, "kind": "jobset"}
        assert registry.get_sample_value("megamon_jobset_restarts", restarts) == value
        assert registry.get_sample_value("megamon_jobset_up", wanted) == 1.0


def test_single_job_and_in_place_restarts_have_their_own_kind() -> None:
    """``jobRestarts`` are summed over every Job; the in-place attempt counts recreated
    restarts too (KEP-467), so in-place restarts are the attempt less ``status.restarts``."""
    status = {
        "restarts": 1,
        "replicatedJobsStatus": [{"name": "w", "ready": 1, "jobRestarts": [2, 0, 1]}],
        "previousInPlaceRestartAttempt": 4,
        "currentInPlaceRestartAttempt": 5,
    }
    registry = scrape(jobset("a", **status))
    by_kind = {kind: registry.get_sample_value("megamon_jobset_restarts", {**labelled("a"),
               "kind": kind}) for kind in ("jobset", "job", "in-place")}  # fmt: skip
    assert by_kind == {"jobset": 1.0, "job": 3.0, "in-place": 4.0}
    assert sum(by_kind.values()) == 8.0


def test_a_jobset_whose_controller_has_not_written_restarts_counts_zero_of_each_kind() -> None:
    registry = scrape(jobset("new"))
    samples = [s for f in registry.collect() if f.name == "megamon_jobset_restarts"
               for s in f.samples]  # fmt: skip
    assert sorted((s.labels["kind"], s.value) for s in samples) == [
        ("in-place", 0.0),
        ("job", 0.0),
        ("jobset", 0.0),
    ]


def test_no_other_kind_has_a_restarts_series() -> None:
    registry = scrape(jobset("a", restarts=2))
    restarts = {f.name for f in registry.collect() if f.name.endswith("_restarts")}
    assert restarts == {"megamon_jobset_restarts"}


def test_a_restart_count_that_is_not_a_count_is_refused_naming_the_jobset() -> None:
    """The watch cache logs the refusal once and skips that one object."""
    with pytest.raises(ObservationError, match=r"jobset ml/bad: restarts status.restarts"):
        jobset_view(jobset("bad", restarts="three"))


@pytest.mark.parametrize(
    ("status", "where"),
    [
        ({"currentInPlaceRestartAttempt": -1}, "status.currentInPlaceRestartAttempt"),
        ({"replicatedJobsStatus": [{"name": "w", "jobRestarts": ["x"]}]},
         "replicatedJobsStatus.jobRestarts"),
        ({"conditions": [{"type": "RestartingJobSet", "status": "True",
                          "lastTransitionTime": "yesterday"}]}, "RestartingJobSet"),
    ],
)  # fmt: skip
def test_a_restart_field_that_is_not_what_jobset_writes_is_refused_naming_it(
    status: dict[str, Any], where: str
) -> None:
    with pytest.raises(ObservationError, match=rf"jobset ml/bad: {where}"):
        jobset_view(jobset("bad", **status))
