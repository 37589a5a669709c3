"""The metrics and probe servers over real HTTP on 127.0.0.1: readiness gating of
``/metrics``, content negotiation and gzip, probe answers, address parsing, and a clean stop
that gives the port back."""

from __future__ import annotations

import gzip
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.serving.http import ListenAddress, MetricsServer, ProbeServer, parse_addr

pytestmark = pytest.mark.integration

T = 1_780_272_000 * 10**9
LOOPBACK = "127.0.0.1:0"


class Latest:
    """The aggregator's side of the contract: the latest report, absent at first."""

    def __init__(self) -> None:
        self.report: Report | None = None

    def __call__(self) -> Report | None:
        return self.report

    def ready(self) -> bool:
        return self.report is not None


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


@pytest.fixture
def latest() -> Latest:
    return Latest()


@pytest.fixture
def metrics(latest: Latest) -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    build = BuildInfo(version="0.1.0", commit="abc1234", date="2026-06-01")
    registry.register(ReportCollector("megamon", latest, build=build))
    with MetricsServer(LOOPBACK, registry) as server:
        yield server


def a_report() -> Report:
    obs = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="tpu-pool-a"))
    return Report(generated_at=T, kinds={Kind.NODEPOOL: KindReport(observations={"a": obs})})


def test_before_the_first_report_metrics_has_only_megamons_own_series(
    metrics: MetricsServer,
) -> None:
    """200 with megamon_leader and no fleet series: MegamonNoReport needs the one, and the
    other must not pass for an empty, healthy fleet."""
    status, _, body = get(metrics.url + "/metrics")
    assert status == 200
    assert b"\nmegamon_leader 1.0\n" in body
    assert b"megamon_last_report_timestamp_seconds" not in body
    assert b"megamon_nodepool_up" not in body


def test_metrics_serves_the_exposition_once_ready(metrics: MetricsServer, latest: Latest) -> None:
    latest.report = a_report()
    status, headers, body = get(metrics.url + "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert "megamon_build_info" in families
    [up] = families["megamon_nodepool_up"].samples
    assert up.labels == {"nodepool_name": "tpu-pool-a"} and up.value == 1.0


def test_metrics_speaks_openmetrics_and_gzip_when_asked(
    metrics: MetricsServer, latest: Latest
) -> None:
    latest.report = a_report()
    accept = {"Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"}
    status, headers, body = get(metrics.url + "/metrics", accept)
    assert status == 200
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert headers["Content-Encoding"] == "gzip"
    text = gzip.decompress(body).decode()
    assert "megamon_build_info" in text and text.endswith("# EOF\n")


def test_other_paths_are_404(metrics: MetricsServer) -> None:
    assert get(metrics.url + "/")[0] == 404
    assert get(metrics.url + "/healthz")[0] == 404


def test_probes_answer_200_ok_or_503_with_the_reason() -> None:
    state = {"healthy": True, "ready": False}
    with ProbeServer(LOOPBACK, lambda: state["healthy"], lambda: state["ready"]) as probes:
        assert get(probes.url + "/healthz")[::2] == (200, b"ok\n")
        assert get(probes.url + "/readyz")[::2] == (503, b"not ready\n")
        state["ready"] = True
        state["healthy"] = False
        assert get(probes.url + "/readyz")[::2] == (200, b"ok\n")
        assert get(probes.url + "/healthz")[::2] == (503, b"not healthy\n")
        assert get(probes.url + "/metrics")[0] == 404


def test_a_probe_that_raises_is_a_503() -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    with ProbeServer(LOOPBACK, broken, broken) as probes:
        status, _, body = get(probes.url + "/healthz")
    assert status == 503
    assert body.startswith(b"not healthy: ")


def test_stop_frees_the_port() -> None:
    server = ProbeServer(LOOPBACK, lambda: True, lambda: True)
    server.start()
    port = server.port
    assert get(server.url + "/healthz")[0] == 200
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.port
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR lets a bind pass TIME_WAIT connections, never a socket still listening.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
    with ProbeServer(f"127.0.0.1:{port}", lambda: True, lambda: True) as again:
        assert again.port == port
        assert get(again.url + "/readyz")[0] == 200


def test_starting_twice_is_refused() -> None:
    with ProbeServer(LOOPBACK, lambda: True, lambda: True) as server, pytest.raises(RuntimeError):
        server.start()


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        (":8080", ListenAddress("", 8080)),
        ("127.0.0.1:0", ListenAddress("127.0.0.1", 0)),
        ("[::1]:9090", ListenAddress("::1", 9090)),
        ("localhost:8081", ListenAddress("localhost", 8081)),
        ("[::]:65535", ListenAddress("::", 65535)),
    ],
)
def test_go_style_addresses_parse(addr: str, expected: ListenAddress) -> None:
    assert parse_addr(addr) == expected


@pytest.mark.parametrize(
    ("addr", "reason"),
    [
        ("8080", "missing port"),
        ("localhost", "missing port"),
        (":", "port must be a number"),
        (":http", "port must be a number"),
        (":65536", "port must be a number"),
        (":-1", "port must be a number"),
        ("::1:8080", "in brackets"),
        ("[::1:8080", "unbalanced brackets"),
        ("[not-v6]:80", "not an IPv6 address"),
        ("bad host:80", "not a host name"),
    ],
)
def test_bad_addresses_are_refused_with_the_reason(addr: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_addr(addr)


def test_ipv6_loopback_serves_when_available() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    try:
        server = ProbeServer("[::1]:0", lambda: True, lambda: True)
        server.start()
    except OSError:
        pytest.skip("::1 cannot be bound on this host")
    try:
        assert server.url.startswith("http://[::1]:")
        assert get(server.url + "/healthz")[0] == 200
    finally:
        server.stop()


def test_a_wildcard_address_serves_on_the_ipv4_loopback() -> None:
    with ProbeServer(":0", lambda: True, lambda: True) as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert get(server.url + "/healthz")[0] == 200
