"""The fleet report's cache of a bucket: object names are untrusted paths. A name that climbs
out (``..``), is absolute or has an empty part is refused with a warning naming it; every
write and delete is proven inside the cache (a symlink out of it is never written or deleted
through); a history that cannot be copied is left out alone; nothing is ever written to the
bucket. Histories are written by megamon's own recorder and report exporter."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest

from megamon.cli.main import main
from megamon.domain.kinds import Kind
from megamon.fleet.cache import MANIFEST, HistoryCache, refusal
from megamon.fleet.command import FleetRequest, run_fleet
from megamon.fleet.model import FleetReport
from megamon.publishing.exporters.archives import GcsReportExporter, ObjectReportExporter
from megamon.stores.factory import gcs_client
from megamon.stores.gcs import GcsEventStore
from megamon.stores.memory import MemoryEventStore, MemoryObjects
from megamon.summary.availability import Window
from test.cli.report.history import NOW, NOW_TEXT, fill

BUCKET = "fleet-bucket"
PATTERN = "megamon/clusters/*"
CLIMBING = "megamon/clusters/east/archive/nodepool/" + "../" * 7 + "x/victim.json"
"""From ``<cache>/<bucket>/megamon/clusters/east/archive/nodepool``, seven parts up is the
directory holding ``<cache>``: the name lands at ``<cache>/../x/victim.json``."""
OPERATORS = b'{"the operator": "file"}'


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("a/b/../c.json", "'.' or '..'"),
        ("a/./c.json", "'.' or '..'"),
        ("..", "'.' or '..'"),
        ("/etc/passwd.json", "absolute"),
        ("a//c.json", "empty part"),
        ("a/b/", "empty part"),
        ("", "empty name"),
        ("a/\x00.json", "NUL"),
        (f"{MANIFEST}/node-pools.json", "manifest"),
    ],
)
def test_names_that_are_not_plain_relative_paths_are_refused(name: str, reason: str) -> None:
    assert reason in (refusal(name) or "")


@pytest.mark.parametrize(
    "name", ["megamon/clusters/east/archive/nodepool/team%2F..%2Ftrain.json", "a/..b/c..json"]
)
def test_names_megamon_writes_are_accepted(name: str) -> None:
    """An archive's key is percent-quoted, so ``/`` and ``..`` in a key never make a part."""
    assert refusal(name) is None


# --- the bucket in memory (the stores' MemoryObjects) -------------------------------------


@pytest.fixture
def objects() -> MemoryObjects:
    """Two clusters' histories (the report tests' known history) in one bucket."""
    shared = MemoryObjects()
    for name in ("east", "west"):
        path = f"megamon/clusters/{name}"
        fill(MemoryEventStore(path, objects=shared), ObjectReportExporter(shared, path))
    return shared


def fleet(objects: MemoryObjects, cache: Path) -> FleetReport:
    request = FleetRequest((), PATTERN, BUCKET, str(cache))
    return run_fleet(request, list(Kind), Window(now=NOW), lambda _: objects)


def test_a_symlink_out_of_the_cache_is_never_written_or_deleted_through(
    objects: MemoryObjects, tmp_path: Path
) -> None:
    """east's copy of ``archive/`` replaced by a symlink to the operator's directory: the
    archive rewritten in the bucket is not copied through it, then its deletion deletes
    nothing through it; east is left out, named, and west is reported."""
    cache = tmp_path / "cache"
    assert fleet(objects, cache).unreadable == ()
    outside = tmp_path / "operator"
    outside.mkdir()
    (outside / "nodepool").mkdir()
    (outside / "nodepool" / "np-old.json").write_bytes(OPERATORS)
    copy = cache / BUCKET / "megamon/clusters/east/archive"
    for path in sorted(copy.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    copy.rmdir()
    copy.symlink_to(outside, target_is_directory=True)

    archive = "megamon/clusters/east/archive/nodepool/np-old.json"
    data = objects.download(archive, objects.generation(archive) or 0)
    objects.put_raw(archive, data)  # a new generation: to be copied again
    report = fleet(objects, cache)
    [unreadable] = report.unreadable
    assert unreadable.cluster == "east" and "outside the cache" in unreadable.reason
    assert report.clusters == ("west",)
    assert (outside / "nodepool" / "np-old.json").read_bytes() == OPERATORS

    objects.delete(archive)
    assert fleet(objects, cache).unreadable[0].cluster == "east"
    assert (outside / "nodepool" / "np-old.json").read_bytes() == OPERATORS


def test_a_history_that_cannot_be_copied_is_left_out_alone(
    objects: MemoryObjects, tmp_path: Path
) -> None:
    """An object named under another object (a file where a directory would have to be):
    east cannot be mirrored and is left out with the reason; west is reported in full."""
    objects.put_raw("megamon/clusters/east/archive/nodepool/np-old.json/x.json", b"{}")
    report = fleet(objects, tmp_path / "cache")
    [unreadable] = report.unreadable
    assert unreadable.cluster == "east"
    assert "np-old.json" in unreadable.reason and "copying into the cache" in unreadable.reason
    assert report.clusters == ("west",)
    assert {r.resource.cluster for r in report.resources} == {"west"}
    assert {r.resource.key for r in report.resources} == {"np-a", "np-b", "np-old", "js-1"}


def test_a_corrupt_object_is_never_quarantined_into_the_bucket_or_the_cache(
    objects: MemoryObjects, tmp_path: Path
) -> None:
    names = objects.list("")
    events = "megamon/clusters/east/node-pools.json"
    data = objects.download(events, objects.generation(events) or 0)
    objects.put_raw(events, data[: len(data) // 2])
    report = fleet(objects, tmp_path / "cache")
    assert [u.cluster for u in report.unreadable] == ["east"]
    assert events in report.unreadable[0].reason
    assert objects.list("") == names
    assert not [p for p in (tmp_path / "cache").rglob("*") if ".corrupt" in p.name]


def test_an_object_rewritten_or_deleted_while_being_copied(
    objects: MemoryObjects, tmp_path: Path
) -> None:
    """Listed at one generation, rewritten before its download: copied at the new one (and
    not again the next time); listed, then deleted: no copy, and no error."""
    cache = HistoryCache(objects, tmp_path / "cache")
    roots, listed = cache.discover(PATTERN)
    events = "megamon/clusters/east/node-pools.json"
    rewritten = objects.download(events, objects.generation(events) or 0) + b"\n"
    objects.put_raw(events, rewritten)
    archive = "megamon/clusters/west/archive/nodepool/np-old.json"
    objects.delete(archive)

    mirrored = cache.refresh(roots, listed)

    assert [m.error for m in mirrored] == [None, None]
    assert (tmp_path / "cache" / events).read_bytes() == rewritten
    assert not (tmp_path / "cache" / archive).exists()
    again = HistoryCache(objects, tmp_path / "cache")
    again.refresh(*again.discover(PATTERN))
    assert again.downloaded == 0


def test_folder_markers_are_ignored_without_a_warning(
    objects: MemoryObjects, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The empty ``…/`` objects a console's "create folder" leaves are not names to refuse."""
    objects.put_raw("megamon/clusters/", b"")
    objects.put_raw("megamon/clusters/east/", b"")
    report = fleet(objects, tmp_path / "cache")
    assert report.clusters == ("east", "west") and report.unreadable == ()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_old_manifest_naming_a_path_outside_is_forgotten_not_deleted(
    objects: MemoryObjects, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A manifest an older megamon wrote, holding a climbing name whose object is gone: the
    entry is dropped with a warning naming it, and the file it points to stays."""
    cache = tmp_path / "cache"
    fleet(objects, cache)
    victim = tmp_path / "x" / "victim.json"
    victim.parent.mkdir()
    victim.write_bytes(OPERATORS)
    manifest_path = cache / BUCKET / MANIFEST
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest_path.write_bytes(orjson.dumps({**manifest, CLIMBING: 7}))

    assert fleet(objects, cache).unreadable == ()

    assert victim.read_bytes() == OPERATORS
    assert CLIMBING not in orjson.loads(manifest_path.read_bytes())
    [warning] = [r.getMessage() for r in caplog.records if CLIMBING in r.getMessage()]
    assert "refused" in warning


# --- a real bucket (fake-gcs-server) through megamon report -------------------------------


@pytest.mark.integration
def test_a_bucket_object_that_climbs_out_writes_and_deletes_nothing_outside_the_cache(
    gcs_emulator_env: str,
    gcs_bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Anyone who can write one cluster's prefix uploads ``…/../../x/victim.json`` (and
    names with ``.`` and empty parts): ``megamon report --bucket`` refuses each with a
    warning naming it, writes nothing outside ``--cache-dir`` (the operator's file keeps
    its bytes, no other file appears), reports both clusters, and when the object is
    deleted deletes nothing either."""
    client = gcs_client(None)
    for name in ("east", "west"):
        path = f"megamon/clusters/{name}"
        fill(GcsEventStore(client, gcs_bucket, path), GcsReportExporter(client, gcs_bucket, path))
    bucket = client.bucket(gcs_bucket)
    hostile = [
        CLIMBING,
        "megamon/clusters/east/archive/nodepool/./np-evil.json",
        "megamon/clusters/east/archive//nodepool/np-evil.json",
    ]
    for name in hostile:
        bucket.blob(name).upload_from_string(b'{"np-evil": {"upEvents": []}}')
    victim = tmp_path / "x" / "victim.json"
    victim.parent.mkdir()
    victim.write_bytes(OPERATORS)
    cache = tmp_path / "cache"
    outside_before = _outside(tmp_path, cache)
    argv = ["report", "--now", NOW_TEXT, "--format", "json"]
    argv += ["--bucket", gcs_bucket, "--clusters", PATTERN, "--cache-dir", str(cache)]

    status = main(argv)
    out, err = capsys.readouterr()

    assert status == 0, err
    assert _outside(tmp_path, cache) == outside_before
    document = orjson.loads(out)
    assert document["clusters"] == ["east", "west"]
    assert "np-evil" not in {r["key"] for r in document["resources"]}
    for name in hostile:
        [warning] = [r.getMessage() for r in caplog.records if name in r.getMessage()]
        assert f"gs://{gcs_bucket}/{name}" in warning and "refused" in warning
    mirror = cache / gcs_bucket
    copied = {p.relative_to(mirror).as_posix() for p in mirror.rglob("*.json")}
    assert not [name for name in copied if ".." in name or "np-evil" in name]

    bucket.blob(CLIMBING).delete()
    assert main(argv) == 0
    capsys.readouterr()
    assert _outside(tmp_path, cache) == outside_before


def _outside(top: Path, cache: Path) -> dict[str, bytes]:
    """Every file under ``top`` but not under ``cache``, with its bytes."""
    return {
        str(p.relative_to(top)): p.read_bytes()
        for p in top.rglob("*")
        if p.is_file() and not p.is_relative_to(cache)
    }
