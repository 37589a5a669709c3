"""pytest plugin: Cloud Storage emulator, per-test buckets, fault proxy and clients.

megamon's event-store tests need a real Cloud Storage API (generations, 412s) and a
way to inject the failures production sees.  Load this module as a plugin
(``pytest_plugins = ["internal.gcsemu.fixtures"]`` in the root conftest, or
``from internal.gcsemu.fixtures import *`` in a nested one) to get:

``gcs_emulator``      session-wide :class:`GcsEmulator` (one process per test run)
``gcs_bucket``        name of a fresh, uniquely named, empty bucket for this test
``gcs_proxy``         a :class:`FaultProxy` in front of the emulator, new per test
``gcs_client``        ``google.cloud.storage.Client`` talking to the emulator directly
``gcs_proxy_client``  the same, but through ``gcs_proxy``
``gcs_emulator_env``  sets ``STORAGE_EMULATOR_HOST`` (monkeypatched) for code that
                      builds its own client, and turns off the client library's
                      background bucket-metadata fetch; returns the endpoint
``gcs_fast_retry``    ``DEFAULT_RETRY`` with millisecond back-off
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core.retry import Retry

from internal.faultproxy import FaultProxy
from internal.gcsemu.client import (
    DEFAULT_PROJECT,
    DISABLE_BUCKET_METADATA_ENV,
    fast_retry,
    make_storage_client,
)
from internal.gcsemu.emulator import GcsEmulator

__all__ = [
    "gcs_bucket",
    "gcs_client",
    "gcs_emulator",
    "gcs_emulator_env",
    "gcs_fast_retry",
    "gcs_proxy",
    "gcs_proxy_client",
    "make_storage_client",
    "unique_bucket_name",
]

_BUCKET_NAME_MAX = 63


def unique_bucket_name(hint: str = "test") -> str:
    """A valid bucket name derived from ``hint`` (e.g. the test name) plus a random suffix."""
    suffix = uuid.uuid4().hex[:10]
    stem = re.sub(r"[^a-z0-9]+", "-", hint.lower()).strip("-") or "test"
    stem = stem[: _BUCKET_NAME_MAX - len(suffix) - 3].rstrip("-")
    return f"t-{stem}-{suffix}"


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[GcsEmulator]:
    """One ``fake-gcs-server`` process for the whole session (in-memory, loopback)."""
    with GcsEmulator() as emulator:
        yield emulator


@pytest.fixture
def gcs_bucket(gcs_emulator: GcsEmulator, request: pytest.FixtureRequest) -> str:
    """Name of a new empty bucket, unique to this test."""
    name = unique_bucket_name(request.node.name)
    gcs_emulator.create_bucket(name)
    return name


@pytest.fixture
def gcs_proxy(gcs_emulator: GcsEmulator) -> Iterator[FaultProxy]:
    """A fault proxy in front of the emulator, with no rules armed; stopped after the test."""
    with FaultProxy(gcs_emulator.endpoint) as proxy:
        yield proxy


@pytest.fixture
def gcs_client(gcs_emulator: GcsEmulator) -> Iterator[Any]:
    """A real storage client talking to the emulator directly."""
    client = make_storage_client(gcs_emulator.endpoint)
    yield client
    client.close()


@pytest.fixture
def gcs_proxy_client(gcs_proxy: FaultProxy) -> Iterator[Any]:
    """A real storage client talking to the emulator through ``gcs_proxy``."""
    client = make_storage_client(gcs_proxy.endpoint)
    yield client
    client.close()


@pytest.fixture
def gcs_emulator_env(gcs_emulator: GcsEmulator, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point ``google.cloud.storage.Client()`` at the emulator via the environment."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator.endpoint)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", DEFAULT_PROJECT)
    monkeypatch.setenv(DISABLE_BUCKET_METADATA_ENV, "true")
    monkeypatch.delenv("API_ENDPOINT_OVERRIDE", raising=False)
    return gcs_emulator.endpoint


@pytest.fixture
def gcs_fast_retry() -> Retry:
    """``DEFAULT_RETRY``'s predicate with millisecond back-off and a 10 s deadline."""
    return fast_retry()
