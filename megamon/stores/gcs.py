"""``GcsEventStore``: the event store in a Google Cloud Storage bucket (production).

Every write carries ``if_generation_match`` (0 to create), which makes it a compare-and-swap
and also makes it safe to retry: a retried upload that already landed fails its precondition
instead of landing twice. Retries use google-cloud-storage's own policy (429, 5xx, timeouts,
connection resets) with exponential backoff, bounded by an overall deadline; each call has its
own timeout. ``STORAGE_EMULATOR_HOST`` is honoured by the client library.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import requests
from google.api_core import exceptions as api_exceptions
from google.api_core.retry import Retry
from google.auth import exceptions as auth_exceptions
from google.cloud.storage import Client as StorageClient
from google.cloud.storage.retry import (
    DEFAULT_RETRY,
    ConditionalRetryPolicy,
    is_generation_specified,
)

from megamon.errors import Conflict, StoreError
from megamon.stores.base import Listed, Moved, ObjectBackend
from megamon.stores.objects import ObjectEventStore
from megamon.stores.readonly import ReadOnlyObjects
from megamon.telemetry import Instruments

DEFAULT_TIMEOUT = (5.0, 30.0)
"""Seconds to connect and to wait for each read of one call."""
DEFAULT_DEADLINE = 10.0
"""Seconds one operation may take, retries included. Short on purpose: history waiting to
be written is held in memory and the persist loop tries again a second later, with fresh
state, so a long retry inside one call would only delay everything queued behind it."""
STORE_RETRY: Retry = DEFAULT_RETRY.with_delay(initial=0.25, maximum=2.0, multiplier=2.0)
"""The library's retry policy (429, 5xx, timeouts, resets) with a quicker backoff."""

_TRANSIENT = (
    api_exceptions.GoogleAPIError,
    requests.exceptions.RequestException,
    auth_exceptions.TransportError,
    OSError,
)


class GcsObjects:
    """The objects of one bucket, through the real google-cloud-storage client."""

    def __init__(
        self,
        client: StorageClient,
        bucket: str,
        *,
        instruments: Instruments,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        retry: Retry = STORE_RETRY,
    ) -> None:
        self._bucket = client.bucket(bucket)
        self._bucket_name = bucket
        self._latency = instruments.gcs_latency
        self._timeout = timeout
        self._deadline = deadline
        self._retry: Retry = retry.with_timeout(deadline)
        self._conditional = ConditionalRetryPolicy(
            self._retry, is_generation_specified, ["query_params"]
        )

    def describe(self, name: str) -> str:
        return f"gs://{self._bucket_name}/{name}"

    @contextmanager
    def _call(self, operation: str, name: str) -> Iterator[None]:
        """Time one operation and turn library errors into ``StoreError``s naming the object."""
        start = time.perf_counter()
        try:
            yield
        except api_exceptions.PreconditionFailed as err:
            raise Conflict(f"{self.describe(name)}: {operation}: precondition failed") from err
        except api_exceptions.RetryError as err:
            raise StoreError(
                f"{self.describe(name)}: {operation} gave up after {self._deadline:g}s of "
                f"retries: {err.cause or err}"
            ) from err
        except _TRANSIENT as err:
            raise StoreError(f"{self.describe(name)}: {operation} failed: {err}") from err
        finally:
            self._latency.labels(operation=operation).observe(time.perf_counter() - start)

    def generation(self, name: str) -> int | None:
        with self._call("stat", name):
            blob = self._bucket.get_blob(name, timeout=self._timeout, retry=self._retry)
        return None if blob is None else int(blob.generation)

    def download(self, name: str, generation: int) -> bytes:
        blob = self._bucket.blob(name)
        try:
            with self._call("download", name):
                data: bytes = blob.download_as_bytes(
                    if_generation_match=generation, timeout=self._timeout, retry=self._retry
                )
        except Conflict as err:
            raise Moved(str(err)) from err
        except StoreError as err:
            if isinstance(err.__cause__, api_exceptions.NotFound):
                raise Moved(f"{self.describe(name)} was deleted while being read") from err
            raise
        return data

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        blob = self._bucket.blob(name)
        with self._call("upload", name):
            blob.upload_from_string(
                data,
                content_type="application/json",
                if_generation_match=if_generation,
                timeout=self._timeout,
                retry=self._conditional,
            )
        return int(blob.generation)

    def copy(self, name: str, new_name: str, generation: int) -> None:
        with self._call("copy", name):
            self._bucket.copy_blob(
                self._bucket.blob(name),
                self._bucket,
                new_name,
                source_generation=generation,
                if_generation_match=0,
                timeout=self._timeout,
                retry=self._conditional,
            )

    def list(self, prefix: str, start: str = "") -> list[str]:
        with self._call("list", prefix):
            return sorted(
                blob.name
                for blob in self._bucket.list_blobs(
                    prefix=prefix,
                    start_offset=start or None,
                    timeout=self._timeout,
                    retry=self._retry,
                )
            )

    def listing(self, prefix: str) -> Sequence[Listed]:
        with self._call("list", prefix):
            found = [
                Listed(blob.name, int(blob.generation), int(blob.size or 0))
                for blob in self._bucket.list_blobs(
                    prefix=prefix, timeout=self._timeout, retry=self._retry
                )
            ]
        return sorted(found, key=lambda listed: listed.name)


class GcsEventStore(ObjectEventStore):
    """Event history at ``gs://<bucket>/<path>``, the Go megamon's layout."""

    def __init__(
        self,
        client: StorageClient,
        bucket: str,
        path: str,
        *,
        instruments: Instruments | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        retry: Retry = STORE_RETRY,
        read_only: bool = False,
    ) -> None:
        """``retry`` says which errors to retry and how to back off (the library's policy by
        default); ``deadline`` bounds the retries of one operation; ``read_only``: the
        read-only commands' view (``megamon/stores/readonly.py``)."""
        instruments = instruments or Instruments.unregistered()
        objects = GcsObjects(
            client,
            bucket,
            instruments=instruments,
            timeout=timeout,
            deadline=deadline,
            retry=retry,
        )
        backend: ObjectBackend = ReadOnlyObjects(objects) if read_only else objects
        super().__init__(backend, path, instruments=instruments, read_only=read_only)
