"""Faults injected by the proxy reach the real storage client the way production ones do.

These are the behaviours megamon's event-store tests will build on: retried 503/429
bursts, client timeouts on stalls, uploads cut mid-body that leave nothing (or the
previous generation) behind, and responses lost after the server committed a write.
"""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
import requests
from google.api_core.exceptions import PreconditionFailed, ServiceUnavailable, TooManyRequests
from google.api_core.retry import Retry
from google.cloud.storage.retry import ConditionalRetryPolicy, is_generation_specified

from internal.faultproxy import Action, FaultProxy

pytestmark = pytest.mark.integration

UPLOADS = r"^/upload/"


def test_503_burst_on_upload_is_retried(
    gcs_proxy: FaultProxy,
    gcs_proxy_client: Any,
    gcs_client: Any,
    gcs_bucket: str,
    gcs_fast_retry: Retry,
) -> None:
    gcs_proxy.fail_next(3, status=503, method="POST", path=UPLOADS)

    blob = gcs_proxy_client.bucket(gcs_bucket).blob("seg-1")
    blob.upload_from_string(b"payload", if_generation_match=0, retry=gcs_fast_retry)

    assert gcs_proxy.count("POST", UPLOADS, Action.FAIL) == 3
    assert gcs_proxy.count("POST", UPLOADS, Action.FORWARD) == 1
    assert gcs_client.bucket(gcs_bucket).blob("seg-1").download_as_bytes() == b"payload"


def test_429_burst_on_download_is_retried(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str, gcs_fast_retry: Retry
) -> None:
    gcs_proxy_client.bucket(gcs_bucket).blob("k").upload_from_string(b"v")
    gcs_proxy.fail_next(2, status=429, method="GET")

    data = gcs_proxy_client.bucket(gcs_bucket).blob("k").download_as_bytes(retry=gcs_fast_retry)

    assert data == b"v"
    assert gcs_proxy.count("GET", action=Action.FAIL) == 2


def test_errors_surface_with_google_shape_without_retry(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str
) -> None:
    gcs_proxy.fail_next(1, status=503, message="backend is on fire")
    with pytest.raises(ServiceUnavailable, match="backend is on fire"):
        gcs_proxy_client.bucket(gcs_bucket).blob("x").upload_from_string(b"v", retry=None)

    gcs_proxy.fail_next(1, status=429)
    with pytest.raises(TooManyRequests):
        gcs_proxy_client.bucket(gcs_bucket).blob("x").reload(retry=None)


def test_conditional_policy_retries_only_generation_guarded_writes(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str, gcs_fast_retry: Retry
) -> None:
    policy = ConditionalRetryPolicy(gcs_fast_retry, is_generation_specified, ["query_params"])
    bucket = gcs_proxy_client.bucket(gcs_bucket)

    gcs_proxy.fail_next(2, status=503, path=UPLOADS)
    bucket.blob("guarded").upload_from_string(b"v", if_generation_match=0, retry=policy)
    assert gcs_proxy.count(path=UPLOADS, action=Action.FAIL) == 2

    gcs_proxy.fail_next(2, status=503, path=UPLOADS)
    with pytest.raises(ServiceUnavailable):
        bucket.blob("unguarded").upload_from_string(b"v", retry=policy)
    assert gcs_proxy.count(path=UPLOADS, action=Action.FAIL) == 3


def test_stall_longer_than_timeout_times_out(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str
) -> None:
    gcs_proxy_client.bucket(gcs_bucket).blob("k").upload_from_string(b"v")
    gcs_proxy.stall_next(1, seconds=5.0, method="GET")

    started = time.monotonic()
    with pytest.raises(requests.exceptions.Timeout):
        gcs_proxy_client.bucket(gcs_bucket).blob("k").download_as_bytes(timeout=0.3, retry=None)
    assert time.monotonic() - started < 2.0


def test_stall_then_retry_succeeds(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str, gcs_fast_retry: Retry
) -> None:
    gcs_proxy_client.bucket(gcs_bucket).blob("k").upload_from_string(b"v")
    gcs_proxy.stall_next(1, seconds=5.0, method="GET")

    blob = gcs_proxy_client.bucket(gcs_bucket).blob("k")
    assert blob.download_as_bytes(timeout=0.3, retry=gcs_fast_retry) == b"v"
    assert gcs_proxy.count("GET", action=Action.STALL) == 1


def test_reset_mid_upload_leaves_no_object(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_client: Any, gcs_bucket: str
) -> None:
    rule = gcs_proxy.reset_next_upload()

    blob = gcs_proxy_client.bucket(gcs_bucket).blob("seg")
    with pytest.raises(requests.exceptions.ConnectionError):
        blob.upload_from_string(b"e" * 200_000, if_generation_match=0, retry=None)

    assert rule.fired == 1
    assert not gcs_client.bucket(gcs_bucket).blob("seg").exists()


def test_reset_mid_upload_keeps_previous_generation(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_client: Any, gcs_bucket: str
) -> None:
    original = gcs_client.bucket(gcs_bucket).blob("index")
    original.upload_from_string(b"old", if_generation_match=0)
    gcs_proxy.reset_next_upload(after_bytes=10)

    with pytest.raises(requests.exceptions.ConnectionError):
        gcs_proxy_client.bucket(gcs_bucket).blob("index").upload_from_string(
            b"new" * 50_000, if_generation_match=original.generation, retry=None
        )

    current = gcs_client.bucket(gcs_bucket).get_blob("index")
    assert current.generation == original.generation
    assert current.download_as_bytes() == b"old"


def test_reset_mid_upload_then_retry_writes_once(
    gcs_proxy: FaultProxy,
    gcs_proxy_client: Any,
    gcs_client: Any,
    gcs_bucket: str,
    gcs_fast_retry: Retry,
) -> None:
    gcs_proxy.reset_next_upload()
    payload = b"r" * 100_000

    gcs_proxy_client.bucket(gcs_bucket).blob("seg").upload_from_string(
        payload, if_generation_match=0, retry=gcs_fast_retry
    )

    assert [r.action for r in gcs_proxy.records if r.method == "POST"] == [
        Action.RESET,
        Action.FORWARD,
    ]
    assert gcs_client.bucket(gcs_bucket).blob("seg").download_as_bytes() == payload


def test_reset_mid_resumable_chunk_leaves_no_object(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_client: Any, gcs_bucket: str
) -> None:
    gcs_proxy.reset_next_upload(method="PUT", path="upload_id=")
    blob = gcs_proxy_client.bucket(gcs_bucket).blob("big", chunk_size=256 * 1024)

    with pytest.raises(requests.exceptions.ConnectionError):
        # Unknown size forces a resumable session; the first chunk PUT is cut.
        blob.upload_from_file(io.BytesIO(b"b" * 600_000), retry=None)

    assert gcs_proxy.count("POST", r"uploadType=resumable") == 1
    assert not gcs_client.bucket(gcs_bucket).blob("big").exists()


def test_lost_response_makes_retry_see_own_write(
    gcs_proxy: FaultProxy,
    gcs_proxy_client: Any,
    gcs_client: Any,
    gcs_bucket: str,
    gcs_fast_retry: Retry,
) -> None:
    gcs_proxy.drop_next_response(method="POST", path=UPLOADS)

    with pytest.raises(PreconditionFailed):
        gcs_proxy_client.bucket(gcs_bucket).blob("seg").upload_from_string(
            b"mine", if_generation_match=0, retry=gcs_fast_retry
        )

    assert gcs_client.bucket(gcs_bucket).blob("seg").download_as_bytes() == b"mine"


def test_precondition_failure_passes_through(
    gcs_proxy_client: Any, gcs_bucket: str, gcs_fast_retry: Retry
) -> None:
    bucket = gcs_proxy_client.bucket(gcs_bucket)
    bucket.blob("once").upload_from_string(b"1", if_generation_match=0)
    with pytest.raises(PreconditionFailed):
        bucket.blob("once").upload_from_string(b"2", if_generation_match=0, retry=gcs_fast_retry)


def test_links_from_metadata_lead_back_through_proxy(
    gcs_proxy: FaultProxy, gcs_proxy_client: Any, gcs_bucket: str
) -> None:
    gcs_proxy_client.bucket(gcs_bucket).blob("k").upload_from_string(b"v")
    blob = gcs_proxy_client.bucket(gcs_bucket).blob("k")
    blob.reload()
    assert blob.media_link.startswith(gcs_proxy.endpoint + "/")

    gcs_proxy.fail_next(1, status=503, path=r"^/download/")
    with pytest.raises(ServiceUnavailable):
        blob.download_as_bytes(retry=None)
    assert blob.download_as_bytes() == b"v"
