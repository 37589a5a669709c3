"""The certificate secure ``/metrics`` presents: a self-signed one made at start (names,
fingerprint in the log, what a client sees), or one from files signed by a CA the test makes,
reloaded when the files change — including the kubelet's atomic swap of a mounted Secret —
and refused at start, naming the files, when they do not load."""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import socket
import ssl
import urllib.error
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from internal.fakekube import FakeKube
from megamon.errors import ConfigError
from megamon.serving.auth import KubeGuard
from megamon.serving.http import MetricsServer
from megamon.serving.tls import ServingTLS, serving_tls
from test.serving.secure.conftest import Latest
from test.serving.secure.pki import CA, client_context, get

pytestmark = pytest.mark.integration


def presented(server: MetricsServer, context: ssl.SSLContext, name: str = "127.0.0.1") -> bytes:
    """The DER certificate the server presents to a client verifying ``name``."""
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=name) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def colon_sha256(der: bytes) -> str:
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def write_pair(directory: Path, cert: bytes, key: bytes) -> tuple[Path, Path]:
    """Write both files by atomic rename, as a careful renewal does."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "tls.crt", directory / "tls.key"
    for path, data in zip(paths, (cert, key), strict=True):
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return paths


@pytest.fixture
def authorised(fake_kube: FakeKube) -> str:
    fake_kube.token_reviews.set("prom-token", "prometheus")
    fake_kube.access_reviews.allow("prometheus", "get", "/metrics")
    return "prom-token"


def serve(
    tls: ServingTLS, registry: CollectorRegistry, latest: Latest, guard: KubeGuard
) -> MetricsServer:
    return MetricsServer("127.0.0.1:0", registry, tls=tls.context, guard=guard)


def test_self_signed_names_and_logged_fingerprint(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="megamon.serving.tls"):
        tls = ServingTLS.self_signed()
    certificate = tls.certificate
    assert certificate.names[:2] == ("localhost", socket.gethostname())
    assert {"127.0.0.1", "::1"} <= set(certificate.names)
    [record] = caplog.records
    message = record.getMessage()
    assert "self-signed certificate" in message
    assert f"SHA-256 fingerprint {certificate.fingerprint}" in message
    assert b"PRIVATE KEY" not in message.encode()
    assert len(certificate.fingerprint) == 32 * 3 - 1


def test_self_signed_certificate_is_what_clients_see(
    self_signed: ServingTLS,
    registry: CollectorRegistry,
    latest: Latest,
    guard: KubeGuard,
    authorised: str,
) -> None:
    latest.publish()
    trusted = client_context(self_signed.certificate.pem)
    with serve(self_signed, registry, latest, guard) as server:
        der = presented(server, trusted)
        assert colon_sha256(der) == self_signed.certificate.fingerprint
        assert presented(server, trusted, name=socket.gethostname()) == der
        # A client that connects by name verifies "localhost".
        connection = http.client.HTTPSConnection("localhost", server.port, context=trusted)
        try:
            connection.request("GET", "/metrics", headers={"Authorization": f"Bearer {authorised}"})
            response = connection.getresponse()
            assert response.status == 200 and b"megamon_build_info" in response.read()
            assert response.getheader("Content-Type", "").startswith("text/plain")
        finally:
            connection.close()
        with pytest.raises(ssl.SSLCertVerificationError):
            presented(server, trusted, name="elsewhere.example")


def test_certificate_and_key_from_files(
    tmp_path: Path,
    registry: CollectorRegistry,
    latest: Latest,
    guard: KubeGuard,
    authorised: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest.publish()
    ca = CA.create()
    cert_file, key_file = write_pair(tmp_path / "certs", *ca.issue(["metrics.megamon.svc"]))
    with caplog.at_level(logging.INFO, logger="megamon.serving.tls"):
        tls = serving_tls(str(cert_file), str(key_file))
    assert f"certificate from {cert_file}" in caplog.records[0].getMessage()
    assert tls.certificate.names == ("metrics.megamon.svc", "127.0.0.1")
    trusted = client_context(ca.pem)
    with serve(tls, registry, latest, guard) as server:
        status, _, body = get(server.url + "/metrics", trusted, authorised)
        assert status == 200 and b"megamon_nodepool_up" in body
        assert get(server.url + "/metrics", trusted)[0] == 401
        assert colon_sha256(presented(server, trusted)) == tls.certificate.fingerprint
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            get(server.url + "/metrics", client_context(CA.create().pem), authorised)


def test_renewed_files_are_served_without_a_restart(
    tmp_path: Path, registry: CollectorRegistry, latest: Latest, guard: KubeGuard, authorised: str
) -> None:
    latest.publish()
    old_ca, new_ca = CA.create("old CA"), CA.create("new CA")
    directory = tmp_path / "certs"
    tls = ServingTLS.from_files(*write_pair(directory, *old_ca.issue()))
    with serve(tls, registry, latest, guard) as server:
        url = server.url + "/metrics"
        assert get(url, client_context(old_ca.pem), authorised)[0] == 200
        write_pair(directory, *new_ca.issue())
        assert get(url, client_context(new_ca.pem), authorised)[0] == 200
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            get(url, client_context(old_ca.pem), authorised)
        assert colon_sha256(presented(server, client_context(new_ca.pem))) == (
            tls.certificate.fingerprint
        )


def test_a_mounted_secret_swapped_by_the_kubelet_is_reloaded(
    tmp_path: Path, registry: CollectorRegistry, latest: Latest, guard: KubeGuard, authorised: str
) -> None:
    """The kubelet writes a new timestamped directory and renames the ``..data`` link."""
    latest.publish()
    mount = tmp_path / "secret"
    first, second = CA.create("first"), CA.create("second")
    write_pair(mount / "..2026_06_01_00_00_00.1", *first.issue())
    (mount / "..data").symlink_to("..2026_06_01_00_00_00.1")
    for name in ("tls.crt", "tls.key"):
        (mount / name).symlink_to(f"..data/{name}")
    tls = ServingTLS.from_files(mount / "tls.crt", mount / "tls.key")
    with serve(tls, registry, latest, guard) as server:
        url = server.url + "/metrics"
        assert get(url, client_context(first.pem), authorised)[0] == 200
        write_pair(mount / "..2026_06_02_00_00_00.2", *second.issue())
        (mount / "..data_tmp").symlink_to("..2026_06_02_00_00_00.2")
        os.replace(mount / "..data_tmp", mount / "..data")
        assert get(url, client_context(second.pem), authorised)[0] == 200


def test_a_renewal_that_does_not_load_keeps_the_previous_certificate(
    tmp_path: Path,
    registry: CollectorRegistry,
    latest: Latest,
    guard: KubeGuard,
    authorised: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    latest.publish()
    ca = CA.create()
    directory = tmp_path / "certs"
    tls = ServingTLS.from_files(*write_pair(directory, *ca.issue()))
    old_fingerprint = tls.certificate.fingerprint
    cert, _ = ca.issue()
    _, other_key = ca.issue()
    write_pair(directory, cert, other_key)  # a key that does not match
    with (
        caplog.at_level(logging.WARNING, logger="megamon.serving.tls"),
        serve(tls, registry, latest, guard) as server,
    ):
        for _ in range(3):
            assert get(server.url + "/metrics", client_context(ca.pem), authorised)[0] == 200
    assert tls.certificate.fingerprint == old_fingerprint
    [record] = caplog.records  # logged once, not at every handshake
    assert "keeping the previous certificate" in record.getMessage()
    good = ca.issue()
    write_pair(directory, *good)
    assert tls.reload_if_changed()
    assert tls.certificate.pem == good[0]


@pytest.mark.parametrize("problem", ["missing", "garbage", "mismatched", "half"])
def test_files_that_do_not_load_stop_the_start(tmp_path: Path, problem: str) -> None:
    ca = CA.create()
    cert, key = ca.issue()
    if problem == "garbage":
        cert = b"not a certificate\n"
    if problem == "mismatched":
        key = ca.issue()[1]
    cert_file, key_file = write_pair(tmp_path, cert, key)
    if problem == "missing":
        key_file.unlink()
    if problem == "half":
        with pytest.raises(ConfigError, match="both a certificate and a key"):
            serving_tls(str(cert_file), None)
        return
    with pytest.raises(ConfigError) as caught:
        serving_tls(str(cert_file), str(key_file))
    message = str(caught.value)
    assert str(cert_file) in message and str(key_file) in message
    assert "\n" not in message


def test_an_expired_certificate_is_served_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ca = CA.create()
    with caplog.at_level(logging.WARNING, logger="megamon.serving.tls"):
        ServingTLS.from_files(*write_pair(tmp_path, *ca.issue(expired=True)))
    assert any("expired" in r.getMessage() for r in caplog.records)


def test_no_files_means_self_signed() -> None:
    tls = serving_tls(None, None)
    assert "localhost" in tls.certificate.names
    assert tls.reload_if_changed() is False
