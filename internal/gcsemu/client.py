"""Build real ``google.cloud.storage`` clients that talk to a local endpoint.

Tests must exercise the same client library megamon uses in production, but pointed
at the emulator (or at a fault proxy in front of it) without real credentials and
without changing process-wide environment variables that would leak between tests.
google-cloud-storage 3.x takes the endpoint from ``client_options["api_endpoint"]``
first, so passing it explicitly together with anonymous credentials and a project is
enough; ``STORAGE_EMULATOR_HOST`` is not needed.

google-cloud-storage 3.17 also fetches bucket metadata (``GET /storage/v1/b/NAME``)
in a background thread the first time a client touches a bucket, and again after a
404.  That request races with the test's own requests and can consume an armed
fault, so clients built here switch it off unless asked not to.
"""

from __future__ import annotations

from typing import Any, cast

from google.api_core.retry import Retry
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from google.cloud.storage.retry import DEFAULT_RETRY

DEFAULT_PROJECT = "megamon-test"
# Read by google-cloud-storage on every call; "true" disables the background bucket fetch.
DISABLE_BUCKET_METADATA_ENV = "DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA"


def make_storage_client(
    endpoint: str, project: str = DEFAULT_PROJECT, *, background_bucket_fetch: bool = False
) -> Any:
    """Return a ``google.cloud.storage.Client`` for ``endpoint`` (e.g. ``http://127.0.0.1:N``).

    The client uses anonymous credentials, the given project, ignores HTTP proxy
    settings from the environment (the endpoint is always on loopback), and by default
    makes no background bucket-metadata requests, so every request it sends is one
    the test caused.
    """
    client = storage.Client(
        project=project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": endpoint},
    )
    client._http.trust_env = False
    if not background_bucket_fetch:
        # The library checks this attribute for truthiness before every cache use.
        client._bucket_metadata_cache = None
    return client


def fast_retry(deadline: float = 10.0) -> Retry:
    """``DEFAULT_RETRY`` (same retryable errors) with millisecond back-off, for tests.

    The production policy starts at 1 s and doubles, which would make a test that
    injects a burst of 503s take many seconds.
    """
    retry = DEFAULT_RETRY.with_delay(initial=0.01, maximum=0.05, multiplier=2.0)
    return cast(Retry, retry.with_timeout(deadline))
