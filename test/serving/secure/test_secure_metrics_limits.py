"""The secure metrics server's limits over real TLS against the Kubernetes emulator: a client
that never completes its handshake is cut at the deadline, and a spray of distinct bearer
tokens costs the API server at most the review burst, not one TokenReview each."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from megamon.serving.auth import KubeGuard
from megamon.serving.http import Limits, MetricsServer
from megamon.serving.tls import ServingTLS
from test.serving.secure.pki import client_context, get

pytestmark = pytest.mark.integration


@pytest.fixture
def limited(
    registry: CollectorRegistry, self_signed: ServingTLS, guard: KubeGuard
) -> Iterator[MetricsServer]:
    server = MetricsServer(
        "127.0.0.1:0",
        registry,
        tls=self_signed.context,
        guard=guard,
        limits=Limits(workers=2, backlog=2, deadline=0.5),
    )
    with server:
        yield server


def test_a_client_that_never_finishes_its_handshake_is_cut_off(limited: MetricsServer) -> None:
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
        sock.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, and nothing more
        try:
            closed = sock.recv(1024) == b""
        except ConnectionResetError:
            closed = True
        assert closed  # by the deadline, well before the 10 s this client would wait


def test_a_spray_of_tokens_costs_the_api_one_burst_of_reviews(
    limited: MetricsServer, self_signed: ServingTLS, guard: KubeGuard
) -> None:
    context: ssl.SSLContext = client_context(self_signed.certificate.pem)
    statuses = [get(f"{limited.url}/metrics", context, token=f"sprayed-{n}")[0] for n in range(60)]
    assert statuses[:20] == [401] * 20  # the burst: asked about, refused
    assert set(statuses[20:]) == {503}  # beyond it: not asked (the test clock stands still)
    assert guard.reviews == 20
