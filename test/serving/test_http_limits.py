"""The servers' limits over real sockets on 127.0.0.1: a slow or silent client is cut off at
its deadline however it trickles, clients holding half a request never starve scrapes or
probes (they cost a socket, not a worker; beyond the pending bound the oldest is closed), and
``stop`` cuts whoever is still connected."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from megamon.serving.http import METRICS_LIMITS, PROBE_LIMITS, Limits, MetricsServer, ProbeServer

pytestmark = pytest.mark.integration


def connect(server: MetricsServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.settimeout(10)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock``: EOF or a reset (not our 10 s timeout)."""
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def status(server: MetricsServer) -> int:
    return get(f"{server.url}/metrics")


@pytest.fixture
def server_with(request: pytest.FixtureRequest) -> Iterator[MetricsServer]:
    server = MetricsServer("127.0.0.1:0", CollectorRegistry(), limits=request.param)
    with server:
        yield server


@pytest.mark.parametrize("server_with", [Limits(workers=2, backlog=0, deadline=0.5)], indirect=True)
def test_a_silent_client_is_cut_off_at_the_deadline(server_with: MetricsServer) -> None:
    sock = connect(server_with)
    with sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
        assert closed_by_server(sock)
    assert status(server_with) == 200


@pytest.mark.parametrize("server_with", [Limits(workers=2, backlog=0, deadline=0.5)], indirect=True)
def test_a_client_trickling_bytes_is_cut_off_at_the_deadline(server_with: MetricsServer) -> None:
    sock = connect(server_with)
    cut = False
    with sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        for _ in range(400):  # one byte every 25 ms keeps any per-read timeout from firing
            try:
                sock.sendall(b"a")
            except OSError:
                cut = True
                break
            time.sleep(0.025)
        else:
            sock.settimeout(10)
        cut = cut or closed_by_server(sock)
    assert cut


SLOW_CLIENTS = 40
"""More than every worker and backlog slot of both servers together."""
HALF_A_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: megamon\r\n"


def hold_half_requests(port: int, count: int) -> list[socket.socket]:
    """``count`` clients that each send half a request and wait."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(HALF_A_REQUEST)
        socks.append(sock)
    return socks


def test_slow_clients_never_starve_scrapes_or_probes() -> None:
    """40 clients hold half a request on each server (more than its workers and backlog
    together). Every scrape and every probe is still answered: a client that is still
    sending costs a socket, not a worker, with the limits megamon runs with."""
    metrics = MetricsServer("127.0.0.1:0", CollectorRegistry(), limits=METRICS_LIMITS)
    probes = ProbeServer("127.0.0.1:0", lambda: True, lambda: True, limits=PROBE_LIMITS)
    with metrics, probes:
        slow = hold_half_requests(metrics.port, SLOW_CLIENTS)
        slow += hold_half_requests(probes.port, SLOW_CLIENTS)
        try:
            scrapes = [get(f"{metrics.url}/metrics") for _ in range(20)]
            healthz = [get(f"{probes.url}/healthz") for _ in range(20)]
            readyz = [get(f"{probes.url}/readyz") for _ in range(20)]
        finally:
            for sock in slow:
                sock.close()
    assert scrapes == [200] * 20
    assert healthz == [200] * 20 and readyz == [200] * 20
    assert metrics.dropped == 0 and probes.dropped == 0


@pytest.mark.parametrize(
    "server_with",
    [Limits(workers=1, backlog=1, deadline=60, head_timeout=60, pending=8)],
    indirect=True,
)
def test_beyond_the_pending_bound_the_oldest_slow_client_is_closed(
    server_with: MetricsServer,
) -> None:
    """With room for 8 clients still sending, 40 slow ones close each other, oldest first,
    long before their 60 s; the scrapes that follow are answered. (One scrape at a time
    holds at most two slots, its own and the previous one's until its worker lets go.)"""
    slow = hold_half_requests(server_with.port, SLOW_CLIENTS)
    try:
        assert closed_by_server(slow[0])  # within 10 s, not after its 60 s
        assert [get(f"{server_with.url}/metrics") for _ in range(10)] == [200] * 10
    finally:
        for sock in slow:
            sock.close()
    assert server_with.dropped >= SLOW_CLIENTS - 8


@pytest.mark.parametrize("server_with", [Limits(workers=1, backlog=0, deadline=60)], indirect=True)
def test_stop_cuts_clients_still_connected(server_with: MetricsServer) -> None:
    holder = connect(server_with)
    holder.sendall(b"GET /metrics HTTP/1.1\r\n")
    with holder:
        server_with.stop()  # returns without waiting for the holder's deadline
        assert closed_by_server(holder)
