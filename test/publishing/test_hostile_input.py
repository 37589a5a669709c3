"""Hostile input: odd label values reach /metrics escaped; odd histories never crash or go
negative; bad topologies are skipped, not fatal."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from megamon.codec import history as codec
from megamon.domain import labels
from megamon.domain.kinds import Kind
from megamon.domain.reports import KindReport, Report
from megamon.observing.common import Settings
from megamon.observing.workloads import observe_jobsets
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.sources.kube.projections import jobset_view
from megamon.summary.summarizing import anomalies, summarize

NASTY = [
    'quote " inside',
    "back\\slash",
    "new\nline",
    "ünïcödé 東京 🚀",
    "x" * 10_000,
    "",
]


def jobset(name: str, accelerator: str) -> dict[str, Any]:
    selector = {labels.TPU_ACCELERATOR: accelerator, labels.TPU_TOPOLOGY: "2x2"}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}},
                }
            ]
        },
        "status": {"replicatedJobsStatus": [{"ready": 1}]},
    }


def test_label_values_with_quotes_backslashes_newlines_and_10kb_round_trip() -> None:
    views = [jobset_view(jobset(f"js-{i}", value)) for i, value in enumerate(NASTY)]
    observed = observe_jobsets(views, Settings())
    assert not observed.problems
    report = Report(
        generated_at=0,
        kinds={Kind.JOBSET: KindReport(observations=observed.observations, summaries={})},
    )
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BuildInfo("v", "c", "d")))
    text = generate_latest(registry).decode()
    found = {
        sample.labels["jobset_name"]: sample.labels.get("tpu_accelerator", "")
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "megamon_jobset_up"
    }
    assert found == {f"js-{i}": value for i, value in enumerate(NASTY)}


@pytest.mark.parametrize(
    "events",
    [
        # duplicated timestamps: zero-length periods
        b'[{"up":false,"ts":"2026-05-01T00:00:00Z"},{"up":true,"ts":"2026-05-01T00:00:00Z"},'
        b'{"up":false,"ts":"2026-05-01T00:00:00Z"},{"up":true,"ts":"2026-05-01T01:00:00Z"}]',
        # unsorted: an event earlier than the one before it
        b'[{"up":false,"ts":"2026-05-01T00:00:00Z"},{"up":true,"ts":"2026-05-01T02:00:00Z"},'
        b'{"up":false,"ts":"2026-05-01T01:00:00Z"},{"up":true,"ts":"2026-05-01T03:00:00Z"}]',
    ],
)
def test_odd_histories_are_normalised_never_negative(events: bytes) -> None:
    record = codec.decode_event_file(b'{"k":{"upEvents":' + events + b"}}", "f")["k"]
    now = record.timestamps[-1] + 3600 * 10**9
    summary = summarize(record, now)
    for field, value in summary.model_dump().items():
        if isinstance(value, int):
            assert value >= 0, field
    total = summary.up_time + summary.down_time
    assert total <= now - record.timestamps[0] + 3600 * 10**9
    if sorted(record.timestamps) != list(record.timestamps):
        assert anomalies(record) == ["event 2 is earlier than event 1: that period counts as zero"]
