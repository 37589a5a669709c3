"""The servers' limits over real sockets on 127.0.0.1: a slow or silent client is cut off at
its deadline however it trickles, a flood of connections beyond the workers and backlog is
closed at once instead of costing a thread each, and the server serves again afterwards."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from megamon.serving.http import Limits, MetricsServer

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


def status(server: MetricsServer) -> int:
    try:
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


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


@pytest.mark.parametrize("server_with", [Limits(workers=1, backlog=0, deadline=60)], indirect=True)
def test_connections_beyond_the_workers_are_closed_at_once(server_with: MetricsServer) -> None:
    holder = connect(server_with)  # accepted first: takes the only worker for up to 60 s
    holder.sendall(b"GET /metrics HTTP/1.1\r\n")
    extra = connect(server_with)
    with extra:
        assert closed_by_server(extra)  # within 10 s, not after the holder's 60 s
    assert server_with.dropped >= 1
    holder.close()  # the worker is free again
    deadline = time.monotonic() + 10
    while status(server_with) != 200:
        assert time.monotonic() < deadline, "the server did not serve again"
        time.sleep(0.05)


@pytest.mark.parametrize("server_with", [Limits(workers=1, backlog=0, deadline=60)], indirect=True)
def test_stop_cuts_clients_still_connected(server_with: MetricsServer) -> None:
    holder = connect(server_with)
    holder.sendall(b"GET /metrics HTTP/1.1\r\n")
    with holder:
        server_with.stop()  # returns without waiting for the holder's deadline
        assert closed_by_server(holder)
