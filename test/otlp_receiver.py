"""An OTLP/HTTP metrics receiver on 127.0.0.1 for tests, and what it received spelled as
``/metrics`` spells it (decoded with ``opentelemetry-proto``)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

Sample = tuple[str, frozenset[tuple[str, str]], float]
WAIT = 60.0
"""Generous bound on waiting for a push; a passing run never waits for it."""


@dataclass
class Receiver:
    """An OTLP/HTTP metrics receiver: answers 200, or 500 while ``failing``, or holds the
    request until ``release`` is set while ``holding``."""

    url: str = ""
    requests: queue.Queue[ExportMetricsServiceRequest] = field(default_factory=queue.Queue)
    refused: queue.Queue[None] = field(default_factory=queue.Queue)
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    failing: bool = False
    holding: bool = False

    def handle(self, body: bytes) -> int:
        if self.holding:
            self.entered.set()
            self.release.wait(WAIT)
        if self.failing:
            self.refused.put(None)
            return 500
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        self.requests.put(request)
        return 200

    def next_request(self) -> ExportMetricsServiceRequest:
        return self.requests.get(timeout=WAIT)


@pytest.fixture
def otlp_receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = state.handle(body) if self.path == "/v1/metrics" else 404
            payload = ExportMetricsServiceResponse().SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


def attributes(pairs: Iterator[KeyValue] | list[KeyValue]) -> dict[str, str]:
    return {kv.key: kv.value.string_value for kv in pairs}


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def pushed(request: ExportMetricsServiceRequest) -> set[Sample]:
    """The samples of an OTLP request, spelled as ``/metrics`` spells them."""
    found: set[Sample] = set()
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                found |= _metric_samples(metric)
    return found


def _metric_samples(metric: object) -> set[Sample]:
    found: set[Sample] = set()
    name = metric.name  # type: ignore[attr-defined]
    kind = metric.WhichOneof("data")  # type: ignore[attr-defined]
    if kind in ("gauge", "sum"):
        for p in getattr(metric, kind).data_points:
            value = p.as_double if p.WhichOneof("value") == "as_double" else float(p.as_int)
            found.add((name, frozenset(attributes(p.attributes).items()), value))
        return found
    assert kind == "histogram", kind
    for p in metric.histogram.data_points:  # type: ignore[attr-defined]
        labels = attributes(p.attributes)
        cumulative = 0
        bounds = [*p.explicit_bounds, float("inf")]
        for bound, count in zip(bounds, p.bucket_counts, strict=True):
            cumulative += count
            le = {**labels, "le": _le(bound)}
            found.add((name + "_bucket", frozenset(le.items()), float(cumulative)))
        found.add((name + "_count", frozenset(labels.items()), float(p.count)))
        found.add((name + "_sum", frozenset(labels.items()), p.sum))
    return found
