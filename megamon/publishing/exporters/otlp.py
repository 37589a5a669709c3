"""``OtlpExporter``: the ``/metrics`` series pushed over OTLP/HTTP, as the Go megamon pushes
its series to the OpenTelemetry collector sidecar of its default deployment.

What is pushed is what a scrape of ``/metrics`` would return at that moment — the same
families are collected from the same registry — so names, values and labels are identical;
the only additions are the ones the Go megamon's series carry: the instrumentation scope
(``megamon`` and megamon's version, which a Prometheus-compatible backend shows as
``otel_scope_name`` and ``otel_scope_version``) and the resource (``service.name=megamon``
and the SDK's attributes, shown as ``target_info``). No unit is set, so no backend appends a
second ``_seconds``.

A push never blocks a cycle: ``export`` only wakes the pusher thread, which collects the
families when it gets to them. While a push is under way (a slow or unreachable receiver),
further wake-ups fold into one, so pushes never queue up and the next one after an outage
carries the values current at that moment. Between reports the pusher also pushes every
interval, as the Go megamon's periodic reader does, so a backend keeps receiving the
freshness gauges while cycles fail. megamon logs one warning per outage and one line at the
recovery (the SDK's exporter logs each refused request itself).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.samples import Sample

from megamon.config import EXPORTER_OTLP, Config

log = logging.getLogger(__name__)

SCOPE_NAME = "megamon"
"""The instrumentation scope of every series: the Go megamon's ``otel.Meter("megamon")``."""
SERVICE = "megamon"
METRICS_PATH = "/v1/metrics"

_COUNTER = "counter"
_HISTOGRAM = "histogram"
_TOTAL = "_total"
_CREATED = "_created"
_BUCKET = "_bucket"
_COUNT = "_count"
_SUM = "_sum"
_LE = "le"

Collect = Callable[[], Iterable[Family]]
"""The families of ``/metrics`` now: ``CollectorRegistry.collect``."""

_Labels = tuple[tuple[str, str], ...]


def _key(labels: dict[str, str], without: str = "") -> _Labels:
    return tuple(sorted((k, v) for k, v in labels.items() if k != without))


def _gauges(family: Family, now: int, start: int) -> Iterator[Metric]:
    """Every sample as a gauge point under the sample's own name (``/metrics``'s name)."""
    by_name: dict[str, list[NumberDataPoint]] = defaultdict(list)
    for sample in family.samples:
        by_name[sample.name].append(NumberDataPoint(dict(sample.labels), start, now, sample.value))
    for name, points in by_name.items():
        yield Metric(name, family.documentation, "", Gauge(points))


def _created(samples: Sequence[Sample], without: str = "") -> dict[_Labels, int]:
    """Start times (ns) from the ``_created`` samples, by label set."""
    return {
        _key(s.labels, without): int(s.value * 1e9) for s in samples if s.name.endswith(_CREATED)
    }


def _counter(family: Family, now: int, start: int) -> Iterator[Metric]:
    """The ``_total`` samples as one cumulative monotonic sum named ``<name>_total``."""
    created = _created(family.samples)
    points = [
        NumberDataPoint(dict(s.labels), created.get(_key(s.labels), start), now, s.value)
        for s in family.samples
        if s.name.endswith(_TOTAL)
    ]
    if points:
        data = Sum(points, AggregationTemporality.CUMULATIVE, is_monotonic=True)
        yield Metric(family.name + _TOTAL, family.documentation, "", data)


def _histogram_point(
    samples: list[Sample], labels: _Labels, start: int, now: int
) -> HistogramDataPoint:
    bounds: list[float] = []
    cumulative: list[float] = []
    count, total = 0.0, 0.0
    for s in samples:
        if s.name.endswith(_BUCKET):
            bounds.append(float(s.labels[_LE]))
            cumulative.append(s.value)
        elif s.name.endswith(_COUNT):
            count = s.value
        elif s.name.endswith(_SUM):
            total = s.value
    order = sorted(range(len(bounds)), key=bounds.__getitem__)
    counts, previous = [], 0.0
    for i in order:
        counts.append(int(cumulative[i] - previous))
        previous = cumulative[i]
    finite = [bounds[i] for i in order if bounds[i] != float("inf")]
    if len(counts) == len(finite):  # no +Inf bucket: the rest of the count goes past the last
        counts.append(int(count - previous))
    return HistogramDataPoint(
        dict(labels),
        start,
        now,
        int(count),
        total,
        counts,
        finite,
        # Prometheus histograms keep no minimum or maximum: left unset in OTLP.
        min=None,  # type: ignore[arg-type]
        max=None,  # type: ignore[arg-type]
    )


def _histogram(family: Family, now: int, start: int) -> Iterator[Metric]:
    """A histogram family as one cumulative explicit-bucket histogram per label set."""
    created = _created(family.samples)
    groups: dict[_Labels, list[Sample]] = defaultdict(list)
    for sample in family.samples:
        if not sample.name.endswith(_CREATED):
            groups[_key(sample.labels, _LE)].append(sample)
    points = [
        _histogram_point(samples, labels, created.get(labels, start), now)
        for labels, samples in groups.items()
    ]
    if points:
        data = Histogram(points, AggregationTemporality.CUMULATIVE)
        yield Metric(family.name, family.documentation, "", data)


def to_metrics(families: Iterable[Family], now: int, start: int) -> list[Metric]:
    """OTLP metrics of Prometheus families: counters as monotonic sums, histograms as
    histograms, everything else (gauges, info) as gauges, each under its ``/metrics``
    name. ``start`` is the start of the cumulative series without a ``_created`` sample."""
    metrics: list[Metric] = []
    for family in families:
        if family.type == _COUNTER:
            metrics.extend(_counter(family, now, start))
        elif family.type == _HISTOGRAM:
            metrics.extend(_histogram(family, now, start))
        else:
            metrics.extend(_gauges(family, now, start))
    return metrics


def megamon_resource(version: str) -> Resource:
    """``service.name=megamon`` over the SDK's defaults (and ``OTEL_RESOURCE_ATTRIBUTES``),
    as the Go megamon's ``resource.Merge(resource.Default(), service.name)``."""
    return Resource.create({SERVICE_NAME: SERVICE, SERVICE_VERSION: version})


class OtlpExporter:
    """Pushes the ``/metrics`` families after every report and every ``interval_seconds``,
    from a thread of its own (started by the first report)."""

    name = EXPORTER_OTLP

    def __init__(
        self,
        collect: Collect,
        exporter: MetricExporter,
        *,
        version: str,
        interval_seconds: float = 10.0,
        timeout_seconds: float = 10.0,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._collect = collect
        self._exporter = exporter
        self._resource = megamon_resource(version)
        self._scope = InstrumentationScope(SCOPE_NAME, version)
        self._interval = interval_seconds
        self._timeout_ms = timeout_seconds * 1000
        self._clock = clock
        self._start = clock()
        self._wake = threading.Event()
        self._stopping = False
        self._failing = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def export(self, report: object) -> None:
        """Ask for a push of the current values; returns at once, whatever the receiver."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="otlp-push", daemon=True)
                self._thread.start()
        self._wake.set()

    def close(self) -> None:
        """Stop the pusher after the push under way, if any."""
        self._stopping = True
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(self._timeout_ms / 1000 + 5)
        self._exporter.shutdown()

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stopping:
                return
            try:
                self.push()
            except Exception:  # the pusher's boundary: one bad collection must not end it
                log.exception("otlp: push failed unexpectedly")

    def push(self) -> bool:
        """Collect and push once, in the calling thread; whether the receiver took it."""
        now = self._clock()
        metrics = to_metrics(self._collect(), now, self._start)
        data = MetricsData(
            [ResourceMetrics(self._resource, [ScopeMetrics(self._scope, metrics, "")], "")]
        )
        ok = self._exporter.export(data, timeout_millis=self._timeout_ms) is (
            MetricExportResult.SUCCESS
        )
        if not ok and not self._failing:
            log.warning("otlp: the receiver did not take the metrics; the next push retries")
        elif ok and self._failing:
            log.info("otlp: the receiver takes the metrics again")
        self._failing = not ok
        return ok


def otlp_endpoint(config: Config) -> str | None:
    """The metrics URL: ``OTLPEndpoint`` + ``/v1/metrics``; ``None`` lets the SDK read
    ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
    if not config.OTLPEndpoint:
        return None
    base = config.OTLPEndpoint.removesuffix("/")
    return base if base.endswith(METRICS_PATH) else base + METRICS_PATH


def build_otlp_exporter(config: Config, collect: Collect, version: str) -> OtlpExporter:
    """The ``otlp`` exporter of ``config``, pushing what ``collect`` returns."""
    exporter = OTLPMetricExporter(
        endpoint=otlp_endpoint(config), timeout=float(config.OTLPTimeoutSeconds)
    )
    return OtlpExporter(
        collect,
        exporter,
        version=version,
        interval_seconds=config.AggregationIntervalSeconds,
        timeout_seconds=config.OTLPTimeoutSeconds,
    )
