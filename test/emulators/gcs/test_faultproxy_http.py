"""The fault proxy is a faithful HTTP/1.1 reverse proxy when no fault is armed.

If the proxy itself changed status codes, dropped headers, buffered streams or broke
keep-alive, tests using it would fail (or pass) for the wrong reasons.  These tests
speak raw HTTP through ``http.client`` to check framing and pass-through, using the
emulator as upstream, plus a tiny local server for a slow chunked stream.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from google.api_core.exceptions import NotFound

from internal.faultproxy import Action, FaultProxy
from internal.gcsemu import GcsEmulator

pytestmark = pytest.mark.integration


def _connect(endpoint: str, timeout: float = 5.0) -> http.client.HTTPConnection:
    host, port = endpoint.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=timeout)


def _fetch(
    endpoint: str, method: str, target: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[http.client.HTTPResponse, bytes]:
    conn = _connect(endpoint)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def _upload_target(bucket: str, name: str) -> str:
    return f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}"


def _multipart(name: str, data: bytes) -> tuple[bytes, dict[str, str]]:
    """Body and headers of a multipart upload (the only kind that honours preconditions)."""
    body = b"".join(
        [
            b"--B\r\nContent-Type: application/json\r\n\r\n",
            json.dumps({"name": name}).encode(),
            b"\r\n--B\r\nContent-Type: application/octet-stream\r\n\r\n",
            data,
            b"\r\n--B--\r\n",
        ]
    )
    return body, {"Content-Type": "multipart/related; boundary=B"}


def test_headers_and_partial_content_pass_through(
    gcs_emulator: GcsEmulator, gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str
) -> None:
    gcs_client.bucket(gcs_bucket).blob("obj").upload_from_string(b"0123456789")
    target = f"/download/storage/v1/b/{gcs_bucket}/o/obj?alt=media"
    headers = {"Range": "bytes=2-5"}

    direct, direct_body = _fetch(gcs_emulator.endpoint, "GET", target, headers=headers)
    proxied, proxied_body = _fetch(gcs_proxy.endpoint, "GET", target, headers=headers)

    assert (proxied.status, proxied_body) == (direct.status, direct_body) == (206, b"2345")
    for name in ("Content-Range", "X-Goog-Generation", "X-Goog-Stored-Content-Length", "Etag"):
        assert proxied.getheader(name) == direct.getheader(name), name
    assert proxied.getheader("X-Goog-Generation")


def test_early_upstream_answer_to_big_upload_is_relayed(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any
) -> None:
    blob = gcs_proxy_client.bucket("t-no-such-bucket").blob("x")
    with pytest.raises(NotFound):
        # fake-gcs-server answers 404 before reading the 5 MB body, then stops reading.
        blob.upload_from_string(b"z" * 5_000_000, retry=None)
    with pytest.raises(NotFound):
        blob.upload_from_string(b"z" * 5_000_000, retry=None)
    assert gcs_proxy.connections_accepted == 1


def test_412_status_and_body_pass_through(gcs_proxy: FaultProxy, gcs_bucket: str) -> None:
    target = f"/upload/storage/v1/b/{gcs_bucket}/o?uploadType=multipart&ifGenerationMatch=0"
    body, headers = _multipart("once", b"a")
    first, _ = _fetch(gcs_proxy.endpoint, "POST", target, body, headers)
    second, body = _fetch(gcs_proxy.endpoint, "POST", target, body, headers)

    assert first.status == 200
    assert second.status == 412
    assert json.loads(body)["error"]["code"] == 412


def test_keep_alive_with_head_and_injected_errors(gcs_proxy: FaultProxy, gcs_bucket: str) -> None:
    gcs_proxy.fail_next(1, status=503, method="GET")
    conn = _connect(gcs_proxy.endpoint)
    try:
        statuses = []
        for method, target, body in [
            ("POST", _upload_target(gcs_bucket, "k"), b"value"),
            ("HEAD", f"/storage/v1/b/{gcs_bucket}/o/k", None),
            ("GET", f"/storage/v1/b/{gcs_bucket}/o/k", None),
            ("GET", f"/download/storage/v1/b/{gcs_bucket}/o/k?alt=media", None),
        ]:
            conn.request(method, target, body=body)
            response = conn.getresponse()
            payload = response.read()
            statuses.append(response.status)
        assert payload == b"value"
    finally:
        conn.close()
    assert statuses == [200, 200, 503, 200]
    assert gcs_proxy.connections_accepted == 1


def test_storage_client_reuses_one_connection(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str
) -> None:
    bucket = gcs_proxy_client.bucket(gcs_bucket)
    for i in range(5):
        bucket.blob(f"k{i}").upload_from_string(b"v", if_generation_match=0)
        assert bucket.blob(f"k{i}").download_as_bytes() == b"v"
    assert len(list(gcs_proxy_client.list_blobs(gcs_bucket))) == 5
    assert {r.connection for r in gcs_proxy.records} == {1}
    assert gcs_proxy.connections_accepted == 1


def test_chunked_request_body_is_forwarded(
    gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str
) -> None:
    pieces = [b"alpha-", b"beta-" * 20_000, b"gamma"]
    response, _ = _fetch(
        gcs_proxy.endpoint, "POST", _upload_target(gcs_bucket, "chunky"), body=iter(pieces)
    )

    assert response.status == 200
    assert gcs_client.bucket(gcs_bucket).blob("chunky").download_as_bytes() == b"".join(pieces)


def test_reset_cuts_chunked_upload(gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str) -> None:
    gcs_proxy.reset_next_upload(after_bytes=10)
    with pytest.raises((OSError, http.client.HTTPException)):
        _fetch(
            gcs_proxy.endpoint,
            "POST",
            _upload_target(gcs_bucket, "cut"),
            body=iter([b"x" * 1000, b"y" * 1000]),
        )
    assert not gcs_client.bucket(gcs_bucket).blob("cut").exists()


def test_injected_error_shape_and_extra_headers(gcs_proxy: FaultProxy) -> None:
    gcs_proxy.fail_next(1, status=429, headers={"Retry-After": "1"})
    response, body = _fetch(gcs_proxy.endpoint, "POST", "/upload/anything", body=b"ignored")

    assert response.status == 429
    assert response.getheader("Retry-After") == "1"
    assert response.getheader("Content-Type", "").startswith("application/json")
    error = json.loads(body)["error"]
    assert error["code"] == 429
    assert error["errors"][0]["reason"] == "rateLimitExceeded"
    assert error["message"]


def test_rule_filters_and_counters(gcs_proxy: FaultProxy, gcs_bucket: str) -> None:
    rule = gcs_proxy.fail_next(1, status=500, method="GET", path=r"/o/target$")
    other = f"/storage/v1/b/{gcs_bucket}/o/other"
    target = f"/storage/v1/b/{gcs_bucket}/o/target"

    assert _fetch(gcs_proxy.endpoint, "POST", _upload_target(gcs_bucket, "target"), b"v")[
        0
    ].status == (200)
    assert _fetch(gcs_proxy.endpoint, "GET", other)[0].status == 404
    assert _fetch(gcs_proxy.endpoint, "GET", target)[0].status == 500
    assert _fetch(gcs_proxy.endpoint, "GET", target)[0].status == 200

    assert (rule.fired, rule.remaining) == (1, 0)
    assert gcs_proxy.counts()[("GET", target)] == 2
    assert gcs_proxy.count("GET") == 3
    assert gcs_proxy.count(action=Action.FAIL) == 1
    gcs_proxy.reset()
    assert gcs_proxy.records == []


class _SlowChunks(BaseHTTPRequestHandler):
    """Sends one chunk, waits for the test to release it, then sends the rest."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Goog-Hash", "crc32c=AAAAAA==")
        self.end_headers()
        self.wfile.write(b"5\r\nfirst\r\n")
        self.release.wait(10)
        self.wfile.write(b"6\r\nsecond\r\n0\r\n\r\n")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def slow_upstream() -> Iterator[str]:
    _SlowChunks.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowChunks)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    _SlowChunks.release.set()
    server.shutdown()
    server.server_close()


def test_streaming_response_is_not_buffered(slow_upstream: str) -> None:
    with FaultProxy(slow_upstream) as proxy:
        conn = _connect(proxy.endpoint, timeout=3.0)
        conn.request("GET", "/stream")
        response = conn.getresponse()
        assert response.getheader("X-Goog-Hash") == "crc32c=AAAAAA=="
        assert response.read(5) == b"first"  # arrives while the upstream is still waiting
        _SlowChunks.release.set()
        assert response.read() == b"second"
        conn.close()


def test_stop_interrupts_stall_and_idle_connections(gcs_emulator: GcsEmulator) -> None:
    proxy = FaultProxy(gcs_emulator.endpoint).start()
    idle = _connect(proxy.endpoint)
    idle.request("GET", "/storage/v1/b")
    assert idle.getresponse().read()
    proxy.stall_next(1, seconds=60.0)
    errors: list[BaseException] = []

    def stalled_request() -> None:
        try:
            _fetch(proxy.endpoint, "GET", "/storage/v1/b")
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)

    worker = threading.Thread(target=stalled_request)
    worker.start()
    while proxy.count(action=Action.STALL) == 0:
        time.sleep(0.01)
    started = time.monotonic()
    proxy.stop()
    worker.join(5)
    idle.close()

    assert time.monotonic() - started < 2.0
    assert not worker.is_alive()
    assert len(errors) == 1
