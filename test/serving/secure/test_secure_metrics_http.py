"""Secure ``/metrics`` end to end over real TLS on 127.0.0.1, the Kubernetes emulator answering
TokenReview and SubjectAccessReview: who gets 401, 403, 503 or the metrics, what the reviews
ask, how the cache spares the API, and that the probes stay plain HTTP."""

from __future__ import annotations

import logging
import ssl
import urllib.error

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from internal.fakekube import AccessRequest, FakeKube
from megamon.serving.auth import KubeGuard
from megamon.serving.http import MetricsServer, ProbeServer
from megamon.serving.tls import ServingTLS
from test.serving.secure.conftest import Clock, Latest
from test.serving.secure.pki import CA, client_context, get

pytestmark = pytest.mark.integration

TOKENREVIEWS = {"verb": "create", "resource": "tokenreviews"}
ACCESSREVIEWS = {"verb": "create", "resource": "subjectaccessreviews"}


@pytest.fixture
def trusted(self_signed: ServingTLS) -> ssl.SSLContext:
    return client_context(self_signed.certificate.pem)


@pytest.fixture
def prometheus(fake_kube: FakeKube) -> str:
    """A token whose user the emulator lets ``get /metrics``, as Prometheus's ClusterRole."""
    fake_kube.token_reviews.set("prom-token", "system:serviceaccount:monitoring:prometheus")
    fake_kube.access_reviews.allow("system:serviceaccount:monitoring:prometheus", "get", "/metrics")
    return "prom-token"


def metrics_url(server: MetricsServer) -> str:
    assert server.url.startswith("https://127.0.0.1:")
    return server.url + "/metrics"


def test_no_token_is_401_with_a_bearer_challenge(
    secure_metrics: MetricsServer, trusted: ssl.SSLContext, fake_kube: FakeKube
) -> None:
    status, headers, body = get(metrics_url(secure_metrics), trusted)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert "error=" not in headers["WWW-Authenticate"]
    assert b"bearer token is required" in body
    assert fake_kube.request_count(**TOKENREVIEWS) == 0


def test_another_scheme_is_401_too(secure_metrics: MetricsServer, trusted: ssl.SSLContext) -> None:
    basic = {"Authorization": "Basic cHJvbTpwYXNz"}
    status, headers, _ = get(metrics_url(secure_metrics), trusted, headers=basic)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")


def test_a_bad_token_is_401_invalid_token(
    secure_metrics: MetricsServer, trusted: ssl.SSLContext, fake_kube: FakeKube
) -> None:
    fake_kube.token_reviews.set("revoked", "bob", authenticated=False)
    for token in ("not-a-token", "revoked"):
        status, headers, body = get(metrics_url(secure_metrics), trusted, token)
        assert status == 401
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert 'error="invalid_token"' in headers["WWW-Authenticate"]
        assert b"megamon_" not in body
    assert [r["spec"]["token"] for r in fake_kube.token_reviews.received] == [
        "not-a-token",
        "revoked",
    ]
    assert fake_kube.request_count(**ACCESSREVIEWS) == 0


def test_an_authenticated_but_unauthorised_token_is_403(
    secure_metrics: MetricsServer, trusted: ssl.SSLContext, fake_kube: FakeKube, latest: Latest
) -> None:
    latest.publish()
    fake_kube.token_reviews.set("alice-token", "alice", ["developers"])
    fake_kube.token_reviews.set("mallory-token", "mallory", ["viewers"])
    fake_kube.access_reviews.allow("alice", "get", "/healthz")  # another path: not enough
    fake_kube.access_reviews.allow("group:viewers", "get", "/metrics")
    fake_kube.access_reviews.deny("mallory", "*", "*")  # deny wins over the group's allow
    status, _, body = get(metrics_url(secure_metrics), trusted, "alice-token")
    assert status == 403
    assert body == b"forbidden: user 'alice' may not get /metrics\n"
    assert get(metrics_url(secure_metrics), trusted, "mallory-token")[0] == 403
    assert fake_kube.access_reviews.received == [
        AccessRequest("alice", ("developers",), "get", "/metrics"),
        AccessRequest("mallory", ("viewers",), "get", "/metrics"),
    ]


def test_an_authorised_token_gets_the_metrics(
    secure_metrics: MetricsServer,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    prometheus: str,
) -> None:
    latest.publish()
    status, headers, body = get(metrics_url(secure_metrics), trusted, prometheus)
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    [up] = families["megamon_nodepool_up"].samples
    assert up.labels == {"nodepool_name": "tpu-pool-a"} and up.value == 1.0
    assert fake_kube.access_reviews.received == [
        AccessRequest("system:serviceaccount:monitoring:prometheus", (), "get", "/metrics")
    ]


def test_authorisation_through_a_group(
    secure_metrics: MetricsServer, trusted: ssl.SSLContext, fake_kube: FakeKube, latest: Latest
) -> None:
    latest.publish()
    fake_kube.token_reviews.set("t", "carol", ["system:authenticated", "monitoring"], uid="u-9")
    fake_kube.access_reviews.allow("group:monitoring", "get", "/metrics")
    assert get(metrics_url(secure_metrics), trusted, "t")[0] == 200
    head = get(metrics_url(secure_metrics), trusted, "t", method="HEAD")
    assert head[0] == 200 and head[2] == b""


def test_before_the_first_report_an_authorised_scrape_gets_megamons_own_series_only(
    secure_metrics: MetricsServer, trusted: ssl.SSLContext, prometheus: str
) -> None:
    status, _, body = get(metrics_url(secure_metrics), trusted, prometheus)
    assert status == 200
    assert b"\nmegamon_leader 1.0\n" in body
    assert b"megamon_last_report_timestamp_seconds" not in body
    assert get(metrics_url(secure_metrics), trusted)[0] == 401
    assert get(metrics_url(secure_metrics), trusted, "stranger")[0] == 401


def test_the_cache_spares_the_api_within_the_ttl(
    secure_metrics: MetricsServer,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    prometheus: str,
    clock: Clock,
) -> None:
    latest.publish()
    for _ in range(3):
        assert get(metrics_url(secure_metrics), trusted, prometheus)[0] == 200
    assert fake_kube.request_count(**TOKENREVIEWS) == 1
    assert fake_kube.request_count(**ACCESSREVIEWS) == 1
    clock.now += 29
    assert get(metrics_url(secure_metrics), trusted, prometheus)[0] == 200
    assert fake_kube.request_count(**TOKENREVIEWS) == 1
    clock.now += 1  # the allowed answer has expired: ask again
    assert get(metrics_url(secure_metrics), trusted, prometheus)[0] == 200
    assert fake_kube.request_count(**TOKENREVIEWS) == 2
    assert fake_kube.request_count(**ACCESSREVIEWS) == 2


def test_refusals_are_cached_briefly(
    secure_metrics: MetricsServer,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    clock: Clock,
) -> None:
    latest.publish()
    fake_kube.token_reviews.set("dave-token", "dave")
    assert get(metrics_url(secure_metrics), trusted, "dave-token")[0] == 403
    fake_kube.access_reviews.allow("dave", "get", "/metrics")  # the role is granted
    assert get(metrics_url(secure_metrics), trusted, "dave-token")[0] == 403
    assert fake_kube.request_count(**TOKENREVIEWS) == 1
    clock.now += 5
    assert get(metrics_url(secure_metrics), trusted, "dave-token")[0] == 200


def test_api_errors_are_503_with_one_log_line_and_not_cached(
    secure_metrics: MetricsServer,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    prometheus: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest.publish()
    fake_kube.fail_next(status=500, path_prefix="/apis/authentication.k8s.io/")
    fake_kube.fail_next(status=429, path_prefix="/apis/authorization.k8s.io/", retry_after=1)
    with caplog.at_level(logging.WARNING, logger="megamon.serving"):
        first = get(metrics_url(secure_metrics), trusted, prometheus)
        second = get(metrics_url(secure_metrics), trusted, prometheus)
    assert first[0] == second[0] == 503
    assert first[1]["Retry-After"] == "5"
    assert b"megamon_" not in first[2]
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "metrics auth: TokenReview failed: HTTP 500 Internal Server Error; answering 503",
        "metrics auth: SubjectAccessReview failed: HTTP 429 Too Many Requests; answering 503",
    ]
    assert all(r.exc_info is None for r in caplog.records)
    assert get(metrics_url(secure_metrics), trusted, prometheus)[0] == 200


def test_a_slow_api_is_503_not_a_hung_scrape(
    secure_metrics: MetricsServer,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    prometheus: str,
) -> None:
    latest.publish()
    fake_kube.faults.delay_next(4.0, path_prefix="/apis/authentication.k8s.io/")
    status, _, _ = get(metrics_url(secure_metrics), trusted, prometheus)  # guard timeout: 2 s
    assert status == 503


def test_an_unreachable_api_is_503(
    secure_metrics: MetricsServer,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    prometheus: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest.publish()
    fake_kube.stop()
    try:
        with caplog.at_level(logging.WARNING, logger="megamon.serving"):
            status, _, _ = get(metrics_url(secure_metrics), trusted, prometheus)
    finally:
        fake_kube.start()
    assert status == 503
    [record] = [r for r in caplog.records if r.name.startswith("megamon.")]
    message = record.getMessage()
    assert message.startswith("metrics auth: TokenReview failed: NewConnectionError: ")
    assert message.endswith("Connection refused; answering 503")
    assert "prom-token" not in message


def test_tls_only_and_verified(
    secure_metrics: MetricsServer, latest: Latest, prometheus: str
) -> None:
    latest.publish()
    plain = secure_metrics.url.replace("https://", "http://") + "/metrics"
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        get(plain, token=prometheus)
    stranger = client_context(CA.create().pem)  # does not trust the self-signed certificate
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        get(metrics_url(secure_metrics), stranger, prometheus)


def test_the_probes_stay_plain_http_next_to_secure_metrics(
    secure_metrics: MetricsServer, trusted: ssl.SSLContext
) -> None:
    with ProbeServer("127.0.0.1:0", lambda: True, lambda: False) as probes:
        assert probes.url.startswith("http://")
        assert get(probes.url + "/healthz")[::2] == (200, b"ok\n")
        assert get(probes.url + "/readyz")[0] == 503
        with pytest.raises(urllib.error.URLError):
            get(probes.url.replace("http://", "https://") + "/healthz", trusted)
    assert get(metrics_url(secure_metrics), trusted)[0] == 401


def test_the_insecure_server_is_unchanged(registry: CollectorRegistry, latest: Latest) -> None:
    latest.publish()
    with MetricsServer("127.0.0.1:0", registry) as server:
        assert server.url.startswith("http://")
        assert get(server.url + "/metrics")[0] == 200  # no token needed


def test_a_guard_shared_between_servers_reuses_its_cache(
    self_signed: ServingTLS,
    guard: KubeGuard,
    trusted: ssl.SSLContext,
    fake_kube: FakeKube,
    latest: Latest,
    prometheus: str,
    registry: CollectorRegistry,
) -> None:
    latest.publish()
    for _ in range(2):
        server = MetricsServer("127.0.0.1:0", registry, tls=self_signed.context, guard=guard)
        with server:
            assert get(metrics_url(server), trusted, prometheus)[0] == 200
    assert fake_kube.request_count(**TOKENREVIEWS) == 1
