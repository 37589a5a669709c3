"""The ``otlp`` exporter end to end: the official OTLP/HTTP exporter pushing to a receiver on
127.0.0.1, what arrives decoded with ``opentelemetry-proto`` and compared with ``/metrics``.

The Go megamon pushes its series to the collector sidecar of its default deployment
(``internal/metrics/metrics.go``, ``initMeterProvider``: an OTLP periodic reader beside the
Prometheus reader, meter ``otel.Meter("megamon")``, resource ``service.name=megamon``); a
deployment that switches must see the same series arrive, plus that scope and resource.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from megamon import __version__
from megamon.config import Config
from megamon.domain.reports import Report
from megamon.publishing.exporters import build_exporters
from megamon.publishing.exporters.otlp import OtlpExporter
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.telemetry import Instruments
from test.otlp_receiver import WAIT, Receiver, Sample, attributes, otlp_receiver, pushed
from test.publishing.exporters.reports import HOUR, report_at

__all__ = ["otlp_receiver"]  # the receiver fixture


@pytest.fixture
def receiver(otlp_receiver: Receiver) -> Receiver:
    return otlp_receiver


@dataclass
class Megamon:
    """The parts of a running megamon that the exporter reads: the ``/metrics`` registry."""

    registry: CollectorRegistry
    report: Report | None = None

    def metrics(self) -> set[Sample]:
        """Every sample a scrape of ``/metrics`` returns now (``_created`` aside)."""
        text = generate_latest(self.registry).decode()
        return {
            (s.name, frozenset(s.labels.items()), s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if not s.name.endswith("_created")
        }


@pytest.fixture
def megamon() -> Megamon:
    registry = CollectorRegistry()
    state = Megamon(registry)
    instruments = Instruments("megamon", registry)
    instruments.gcs_latency.labels(operation="upload").observe(0.03)
    instruments.gcs_latency.labels(operation="upload").observe(7.0)
    instruments.store_conflicts.labels(kind="nodepool").inc(3)
    build = BuildInfo(version=__version__, commit="abc", date="2026-12-01")
    registry.register(ReportCollector("megamon", lambda: state.report, build=build))
    return state


def otlp_exporter(config: Config, megamon: Megamon) -> OtlpExporter:
    """The exporter as ``megamon run`` builds it for ``"Exporters": ["otlp"]``."""
    built = build_exporters(config, collect=megamon.registry.collect, version=__version__)
    assert len(built) == 1 and isinstance(built[0], OtlpExporter)
    return built[0]


@pytest.fixture
def exporter(receiver: Receiver, megamon: Megamon) -> Iterator[OtlpExporter]:
    # A day between periodic pushes: in these tests, every push follows an export.
    config = Config(
        Exporters=["otlp"],
        OTLPEndpoint=receiver.url,
        OTLPTimeoutSeconds=30,
        AggregationIntervalSeconds=86_400,
    )
    built = otlp_exporter(config, megamon)
    yield built
    receiver.release.set()
    built.close()


def _value(samples: set[Sample], name: str) -> float:
    (value,) = {v for n, _, v in samples if n == name}
    return value


def test_a_push_carries_the_metrics_series_with_the_go_scope_and_resource(
    receiver: Receiver, megamon: Megamon, exporter: OtlpExporter
) -> None:
    megamon.report = report_at(10 * HOUR)
    exporter.export(megamon.report)
    request = receiver.next_request()

    (resource_metrics,) = request.resource_metrics
    resource = attributes(list(resource_metrics.resource.attributes))
    assert resource["service.name"] == "megamon"  # target_info{service_name="megamon"}
    assert resource["telemetry.sdk.name"] == "opentelemetry"
    (scope_metrics,) = resource_metrics.scope_metrics
    assert scope_metrics.scope.name == "megamon"  # otel_scope_name
    assert scope_metrics.scope.version == __version__  # otel_scope_version
    assert all(m.unit == "" for m in scope_metrics.metrics)  # no second _seconds suffix
    samples = pushed(request)
    assert samples == megamon.metrics()
    assert _value(samples, "megamon_nodepool_up") == 1.0
    assert ("megamon_event_store_conflicts_total", frozenset({("kind", "nodepool")}), 3.0) in (
        samples
    )
    assert any(m.WhichOneof("data") == "sum" and m.sum.is_monotonic for m in scope_metrics.metrics)


def test_the_endpoint_comes_from_the_standard_variable_when_the_config_has_none(
    receiver: Receiver, megamon: Megamon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    config = Config(Exporters=["otlp"], AggregationIntervalSeconds=86_400)
    built = otlp_exporter(config, megamon)
    try:
        megamon.report = report_at(HOUR)
        built.export(megamon.report)
        assert pushed(receiver.next_request()) == megamon.metrics()
    finally:
        built.close()


def test_after_a_receiver_outage_the_next_push_carries_the_current_values(
    receiver: Receiver, megamon: Megamon, exporter: OtlpExporter
) -> None:
    receiver.failing = True
    megamon.report = report_at(HOUR)
    exporter.export(megamon.report)
    receiver.refused.get(timeout=WAIT)  # the receiver refused that push

    receiver.failing = False
    megamon.report = report_at(2 * HOUR, ready=12)  # the pool lost nodes meanwhile
    exporter.export(megamon.report)
    samples = pushed(receiver.next_request())
    assert samples == megamon.metrics()
    assert _value(samples, "megamon_nodepool_up") == 0.0


def test_a_receiver_that_does_not_answer_blocks_no_cycle(
    receiver: Receiver, megamon: Megamon, exporter: OtlpExporter
) -> None:
    receiver.holding = True
    megamon.report = report_at(HOUR)
    exporter.export(megamon.report)
    assert receiver.entered.wait(WAIT)  # a push is stuck in the receiver

    for hour in (2, 3, 4):  # three more cycles export while it is stuck, and return
        megamon.report = report_at(hour * HOUR, ready=12)
        exporter.export(megamon.report)
    assert receiver.requests.empty()

    receiver.holding = False
    receiver.release.set()
    receiver.next_request()  # the stuck push completes
    samples = pushed(receiver.next_request())  # the cycles' wake-ups folded into one push
    assert samples == megamon.metrics()
    assert _value(samples, "megamon_nodepool_up") == 0.0


def test_between_reports_the_pusher_pushes_every_interval(
    receiver: Receiver, megamon: Megamon
) -> None:
    """internal/metrics/metrics.go: initMeterProvider — a periodic reader at the aggregation
    interval: a backend keeps hearing from megamon while its cycles fail."""
    config = Config(Exporters=["otlp"], OTLPEndpoint=receiver.url, AggregationIntervalSeconds=1)
    built = otlp_exporter(config, megamon)
    try:
        megamon.report = report_at(HOUR)
        built.export(megamon.report)  # the only report
        receiver.next_request()
        later = receiver.next_request()  # no export: pushed by the interval
        assert pushed(later) == megamon.metrics()
    finally:
        built.close()
