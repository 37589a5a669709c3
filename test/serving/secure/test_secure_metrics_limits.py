"""The secure metrics server's limits over real TLS against the Kubernetes emulator: a client
that never completes its handshake is cut at the deadline, a spray of distinct bearer tokens
costs the API server at most a client's review burst, not one TokenReview each, and never
locks out the authorised scraper or another client."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from internal.fakekube import FakeKube
from megamon.serving.auth import KubeGuard, Outcome
from megamon.serving.http import Limits, MetricsServer
from megamon.serving.tls import ServingTLS
from test.serving.secure.conftest import Clock
from test.serving.secure.pki import client_context, get

pytestmark = pytest.mark.integration

PROMETHEUS = "system:serviceaccount:monitoring:prometheus"
TOKENREVIEWS = {"verb": "create", "resource": "tokenreviews"}


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


def test_a_spray_of_tokens_costs_the_api_one_clients_burst_of_reviews(
    limited: MetricsServer, self_signed: ServingTLS, guard: KubeGuard
) -> None:
    context: ssl.SSLContext = client_context(self_signed.certificate.pem)
    statuses = [get(f"{limited.url}/metrics", context, token=f"sprayed-{n}")[0] for n in range(60)]
    assert statuses[:10] == [401] * 10  # the client's burst: asked about, refused
    assert set(statuses[10:]) == {503}  # beyond it: not asked (the test clock stands still)
    assert guard.reviews == 10


FLOOD = 60
"""Bogus tokens per flood: more than every budget holds at the test clock's standstill."""


def test_a_flood_of_bogus_tokens_never_locks_the_authorised_scraper_out(
    secure_metrics: MetricsServer,
    self_signed: ServingTLS,
    guard: KubeGuard,
    fake_kube: FakeKube,
    clock: Clock,
) -> None:
    """Prometheus scrapes with its token while a client floods bogus ones from the same
    address. When Prometheus's cached verdict lapses mid-flood, its token, known good, is
    reviewed again outside the spent budgets: every scrape of it is answered."""
    fake_kube.token_reviews.set("prom-token", PROMETHEUS)
    fake_kube.access_reviews.allow(PROMETHEUS, "get", "/metrics")
    context: ssl.SSLContext = client_context(self_signed.certificate.pem)
    url = f"{secure_metrics.url}/metrics"
    scrapes = []
    for round_ in range(3):
        scrapes.append(get(url, context, token="prom-token")[0])
        flood = [get(url, context, token=f"bogus-{round_}-{n}")[0] for n in range(FLOOD)]
        assert set(flood) <= {401, 503} and flood[-1] == 503  # the budgets are spent
        clock.now += 31.0  # the allowed verdict (30 s) lapses, the flood goes on
        flood = [get(url, context, token=f"bogus-{round_}-late-{n}")[0] for n in range(FLOOD)]
        assert set(flood) == {401, 503} and flood[-1] == 503  # refilled, then spent again
        scrapes.append(get(url, context, token="prom-token")[0])
    assert scrapes == [200] * 6
    assert fake_kube.request_count(**TOKENREVIEWS) == guard.reviews


def test_a_client_spraying_tokens_leaves_the_server_budget_to_the_others(
    guard: KubeGuard, fake_kube: FakeKube
) -> None:
    """Reviews of new tokens are limited per client address first: a sprayer exhausts its
    own budget, and a new scraper elsewhere is still reviewed (the test clock stands still)."""
    fake_kube.token_reviews.set("prom-token", PROMETHEUS)
    fake_kube.access_reviews.allow(PROMETHEUS, "get", "/metrics")
    sprayed = [guard.check(f"Bearer sprayed-{n}", "10.0.0.9").outcome for n in range(FLOOD)]
    assert sprayed.count(Outcome.UNAUTHENTICATED) == 10
    assert guard.check("Bearer prom-token", "10.0.0.2").outcome is Outcome.ALLOWED
