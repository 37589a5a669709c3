"""Damaged histories in a fleet report: the report reads every history read-only, names a
cluster it cannot read (in one line, in the report, exit status 1) and reports the others;
a segment DuckDB cannot read is skipped, named and counted, and the rest of its cluster is
reported. Every history here is written by megamon's own recorder."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from megamon.cli.main import main
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.publishing.exporters.archives import LocalReportExporter
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore
from test.cli.report.history import NOW_TEXT, H, T, fill

HUGE = 40 * 2**20
"""An attribute longer than a JSON line DuckDB reads whole (its `maximum_object_size` is
16 MiB; lines up to twice that fit its buffer)."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The exit status, stdout and stderr (``main``'s warnings go to stderr; under pytest,
    to its log capture, ``caplog``)."""
    status = main(["report", "--now", NOW_TEXT, *argv])
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    status, out, err = run(capsys, "--format", "json", *argv)
    document: dict[str, Any] = orjson.loads(out)
    return status, document, err


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (dotfiles too) and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def clusters(tmp_path: Path) -> Path:
    for name in ("east", "west"):
        directory = tmp_path / name
        fill(LocalEventStore(directory), LocalReportExporter(directory))
    return tmp_path


def _cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damaged", ["node-pools.json", "archive/nodepool/np-old.json"])
def test_a_cluster_that_cannot_be_read_is_named_and_the_others_reported(
    clusters: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    damaged: str,
) -> None:
    """A file of east's cut short: east is left out (named on stderr in one line and in the
    report, exit 1), west is reported in full, and east's history is not changed at all —
    no ``.corrupt-*`` copy, no lock file."""
    _, alone, _ = run_json(capsys, "--events-dir", str(clusters / "west"))
    _cut_short(clusters / "east" / damaged)
    before = tree(clusters / "east")
    dirs = ("--events-dir", str(clusters / "east"), "--events-dir", str(clusters / "west"))

    status, fleet, err = run_json(capsys, *dirs)

    assert status == 1
    assert tree(clusters / "east") == before
    [line] = [r.getMessage() for r in caplog.records if "east" in r.getMessage()]
    assert "left out" in line and damaged in line
    assert "Traceback" not in err
    [unreadable] = fleet["unreadableClusters"]
    assert unreadable["cluster"] == "east" and damaged in unreadable["reason"]
    assert fleet["clusters"] == ["west"]
    assert {r["cluster"] for r in fleet["resources"]} == {"west"}
    assert [r["key"] for r in fleet["resources"]] == [r["key"] for r in alone["resources"]]
    assert {a["cluster"] for a in fleet["aggregates"]} == {"west"}

    status, table, _ = run(capsys, *dirs)
    assert status == 1
    assert "1 more could not be read" in table
    assert any(line.startswith("cluster east could not be read") for line in table.splitlines())
    status, page, _ = run(capsys, *dirs, "--format", "html")
    assert status == 1
    assert '<p class="omitted">cluster east could not be read, left out: ' in page


def _append_huge_line(root: Path) -> None:
    """megamon's recorder writes a slice whose topology attribute is 40 MiB long (the other
    kinds' history is not touched): a segment with lines DuckDB cannot read."""
    attrs = Attrs(slice_name="huge", tpu_topology="x" * HUGE)
    log = EventLog(LocalEventStore(root), [Kind.SLICE], holder="huge")
    log.append(
        {Kind.SLICE: {"huge": Observation.build(expected=1, ready=1, attrs=attrs)}}, T + 9 * H
    )
    log.close()


def test_a_segment_too_large_to_read_is_skipped_named_and_counted(
    clusters: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The segment is skipped with a warning naming it and counted in the report; east's
    other kinds are reported as if it were not there (the slice itself is known from the
    snapshot the recorder wrote on closing), west is reported, and
    the report exits 0 (a damaged segment stays in the bucket; the recorder never rewrites
    it)."""
    shutil.copytree(clusters / "east", tmp_path / "without")
    _append_huge_line(clusters / "east")
    [segment] = [
        p.relative_to(clusters / "east").as_posix()
        for p in (clusters / "east" / "log").rglob("*.ndjson")
        if p.stat().st_size > HUGE
    ]
    dirs = ("--events-dir", str(clusters / "east"), "--events-dir", str(clusters / "west"))

    status, fleet, err = run_json(capsys, *dirs)

    assert status == 0, err
    assert "Traceback" not in err
    [line] = [r.getMessage() for r in caplog.records if segment in r.getMessage()]
    assert "east" in line and "skipped" in line
    [skipped] = fleet["skippedSegments"]
    assert (skipped["cluster"], skipped["segment"]) == ("east", segment)
    assert "maximum_object_size" in skipped["reason"]
    assert fleet["clusters"] == ["east", "west"] and fleet["unreadableClusters"] == []
    _, without, _ = run_json(
        capsys, "--events-dir", str(tmp_path / "without"), "--events-dir", str(clusters / "west")
    )
    assert [r for r in fleet["resources"] if (r["cluster"], r["kind"]) == ("east", "nodepool")]
    others = [r for r in fleet["resources"] if r["kind"] != "slice" and r["cluster"] == "east"]
    assert others == [
        {**r, "cluster": "east"} for r in without["resources"] if r["cluster"] == "without"
    ]

    status, table, _ = run(capsys, *dirs)
    assert status == 0
    lines = table.splitlines()
    assert "1 segment could not be read, skipped:" in lines
    assert any(line.strip().startswith(f"east {segment}: ") for line in lines)


def test_a_skipped_segment_is_remembered_by_the_cache_and_tried_again_when_it_changes(
    clusters: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With ``--cache-dir``, the second report does not parse the skipped segment again and
    still counts it; once the segment is readable (here: replaced by a readable copy of
    another), it is converted and no longer skipped."""
    _append_huge_line(clusters / "east")
    dirs = ("--events-dir", str(clusters / "east"), "--events-dir", str(clusters / "west"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _, first, _ = run_json(capsys, *dirs, *cache)
    [skipped] = first["skippedSegments"]

    caplog.clear()
    _, second, _ = run_json(capsys, *dirs, *cache)
    assert second["skippedSegments"] == [skipped]
    assert second["resources"] == first["resources"]
    assert skipped["segment"] in caplog.text

    bad = clusters / "east" / skipped["segment"]
    bad.write_text(bad.read_text().splitlines()[0][:200] + "\n")  # cut to one damaged line
    status, third, _ = run_json(capsys, *dirs, *cache)
    assert status == 0
    assert third["skippedSegments"] == []
    assert third["resources"] == first["resources"]
