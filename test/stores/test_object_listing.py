"""``ObjectBackend.listing``: every backend lists the objects under a prefix with the
generation ``generation()`` reports and their size, sorted by name — what the fleet report's
cache relies on to fetch an object only when it changed. One suite for memory, a local
directory (locked and read-only), and GCS (the real client against fake-gcs-server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from megamon.stores.base import Listed, ObjectBackend
from megamon.stores.gcs import GcsObjects
from megamon.stores.local import LocalObjects
from megamon.stores.memory import MemoryObjects
from megamon.stores.readonly import ReadOnlyObjects
from megamon.telemetry import Instruments

Opened = tuple[ObjectBackend, ObjectBackend]
"""A backend to write with, and the backend under test (the same, or a read-only view)."""


@pytest.fixture(params=["memory", "local", "local-read-only", "gcs"])
def backends(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    if request.param == "memory":
        memory = MemoryObjects()
        yield memory, memory
    elif request.param == "local":
        local = LocalObjects(tmp_path / "objects")
        yield local, local
    elif request.param == "local-read-only":
        writer = LocalObjects(tmp_path / "objects")
        yield writer, ReadOnlyObjects(LocalObjects(tmp_path / "objects", locking=False))
    else:
        client: Any = request.getfixturevalue("gcs_client")
        bucket: str = request.getfixturevalue("gcs_bucket")
        gcs = GcsObjects(client, bucket, instruments=Instruments.unregistered())
        yield gcs, ReadOnlyObjects(gcs)


def _expected(backend: ObjectBackend, data: dict[str, bytes]) -> list[Listed]:
    return [Listed(n, backend.generation(n) or 0, len(data[n])) for n in sorted(data)]


def test_listing_gives_each_objects_generation_and_size(backends: Opened) -> None:
    writer, backend = backends
    data = {
        "h/east/node-pools.json": b'{"np-a":{"upEvents":[]}}',
        "h/east/log/kind=nodepool/date=2026-06-01/0000000000000001.ndjson": b"{}\n" * 5,
        "h/west/jobsets.json": b"{}",
        "other/x.json": b"x",
    }
    for name, content in data.items():
        writer.upload(name, content, 0)
    under = {n: d for n, d in data.items() if n.startswith("h/")}

    assert list(backend.listing("h/")) == _expected(backend, under)
    assert [i.name for i in backend.listing("h/east/")] == sorted(
        n for n in data if n.startswith("h/east/")
    )
    assert list(backend.listing("nothing/")) == []


def test_a_rewritten_object_lists_at_its_new_generation(backends: Opened) -> None:
    writer, backend = backends
    first = writer.upload("h/east/node-pools.json", b"{}", 0)
    [before] = backend.listing("h/")
    assert before.generation == first
    second = writer.upload("h/east/node-pools.json", b'{"np-a":{"upEvents":[]}}', first)
    [after] = backend.listing("h/")
    assert after.generation == second != first
    assert after.size == len(b'{"np-a":{"upEvents":[]}}')
    assert backend.download(after.name, after.generation) == b'{"np-a":{"upEvents":[]}}'


def test_a_directory_not_written_yet_lists_nothing_and_is_not_created(tmp_path: Path) -> None:
    backend = ReadOnlyObjects(LocalObjects(tmp_path / "absent", locking=False))
    assert list(backend.listing("")) == []
    assert not (tmp_path / "absent").exists()
