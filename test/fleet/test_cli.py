"""``megamon report`` over many clusters: the fleet report agrees with each cluster's own
report, in a directory of histories and in a bucket (the emulator, through the cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from megamon.cli.main import main
from megamon.domain import timestamps
from megamon.domain.interruptions import MAINTENANCE, UNKNOWN
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.fleet.cache import HistoryCache
from megamon.publishing.exporters.archives import GcsReportExporter, LocalReportExporter
from megamon.recording.eventlog import EventLog
from megamon.stores.factory import gcs_client
from megamon.stores.gcs import GcsEventStore, GcsObjects
from megamon.stores.local import LocalEventStore
from megamon.stores.readonly import ReadOnlyObjects
from megamon.telemetry import Instruments
from test.cli.report.history import NOW_TEXT, V5P, H, T, fill
from test.fleet.test_written_histories import RESOURCES, T0, S
from test.fleet.written import DOWN, PLANNED, UP, Run, Step, write_runs

COMMON = (
    "kind",
    "key",
    "name",
    "live",
    "retiredAt",
    "accelerator",
    "topology",
    "state",
    "start",
    "end",
    "upTime",
    "downTime",
    "failedTime",
    "expectedDownTime",
    "provisioningTime",
    "unobservedTime",
    "availabilityPercent",
    "interruptionCount",
    "recoveryCount",
    "meanTimeToRecover",
    "meanTimeBetweenInterruptions",
    "provisioningDuration",
    "provisioningState",
)


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["report", "--now", NOW_TEXT, *argv])
    out, err = capsys.readouterr()
    return status, out, err


def report_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status, out, err = report(capsys, "--format", "json", *argv)
    assert status == 0, err
    document: dict[str, Any] = orjson.loads(out)
    return document


@pytest.fixture
def clusters(tmp_path: Path) -> Path:
    """Two clusters' histories (the report tests' known history) under one directory."""
    for name in ("east", "west"):
        directory = tmp_path / "clusters" / name
        fill(LocalEventStore(directory), LocalReportExporter(directory))
    return tmp_path / "clusters"


def _common(resource: dict[str, Any]) -> dict[str, Any]:
    return {k: resource[k] for k in COMMON}


def test_each_clusters_rows_are_its_own_report(
    clusters: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = report_json(
        capsys, "--events-dir", str(clusters / "east"), "--events-dir", str(clusters / "west")
    )
    assert fleet["clusters"] == ["east", "west"]
    for name in ("east", "west"):
        alone = report_json(capsys, "--events-dir", str(clusters / name))
        mine = [_common(r) for r in fleet["resources"] if r["cluster"] == name]
        assert mine == [_common(r) for r in alone["resources"]]
        mine_aggregates = [a for a in fleet["aggregates"] if a["cluster"] == name]
        for got, expected in zip(mine_aggregates, alone["aggregates"], strict=True):
            assert {k: got[k] for k in expected} == expected
    fleet_rows = {(a["kind"], a["accelerator"], a["topology"]): a for a in fleet["fleet"]}
    for a in fleet["aggregates"]:
        row = fleet_rows[(a["kind"], a["accelerator"], a["topology"])]
        assert row["cluster"] == "*"
    one = {(a["kind"], a["accelerator"], a["topology"]): a for a in alone["aggregates"]}
    for shape, row in fleet_rows.items():
        assert row["resourceCount"] == 2 * one[shape]["resourceCount"]
        assert row["upTime"] == 2 * one[shape]["upTime"]
        assert row["availabilityPercent"] == pytest.approx(one[shape]["availabilityPercent"])


def _restarted(root: Path) -> None:
    """A history whose megamon stopped for two hours (T+1h to T+3h, the pool down), written
    by the real recorder: its heartbeats leave a gap."""
    up = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="np", **V5P))
    down = Observation.build(expected=1, ready=0, attrs=Attrs(nodepool_name="np", **V5P))
    first = EventLog(LocalEventStore(root), [Kind.NODEPOOL], holder="first")
    first.append({Kind.NODEPOOL: {"np": up}}, T)
    first.append({Kind.NODEPOOL: {"np": down}}, T + H)
    first.close()
    second = EventLog(LocalEventStore(root), [Kind.NODEPOOL], holder="second")
    second.append({Kind.NODEPOOL: {"np": up}}, T + 3 * H)
    second.append({Kind.NODEPOOL: {"np": up}}, T + 4 * H)
    second.close()


@pytest.mark.parametrize("now", ["2026-06-01T04:00:00Z", "2026-06-01T10:00:00Z"])
def test_unobserved_time_is_the_clusters_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], now: str
) -> None:
    """A restart gap, and megamon stopped since T+4h (at 10:00): the fleet report carves
    the same unobserved time out of availability as the cluster's own report."""
    _restarted(tmp_path / "gappy")
    fill(LocalEventStore(tmp_path / "steady"), LocalReportExporter(tmp_path / "steady"))
    dirs = ("--events-dir", str(tmp_path / "gappy"), "--events-dir", str(tmp_path / "steady"))
    fleet = report_json(capsys, "--now", now, *dirs)
    alone = report_json(capsys, "--now", now, "--events-dir", str(tmp_path / "gappy"))
    mine = [_common(r) for r in fleet["resources"] if r["cluster"] == "gappy"]
    assert mine == [_common(r) for r in alone["resources"]]
    [resource] = mine
    assert resource["unobservedTime"] >= 2 * 3600 * 10**9
    assert resource["availabilityPercent"] == 100.0
    [aggregate] = [a for a in fleet["aggregates"] if a["cluster"] == "gappy"]
    assert {k: aggregate[k] for k in alone["aggregates"][0]} == alone["aggregates"][0]
    steady = [a["unobservedTime"] for a in fleet["aggregates"] if a["cluster"] == "steady"]
    assert steady and set(steady) == {0}


def test_clusters_pattern_in_a_directory(
    clusters: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = report_json(capsys, "--events-dir", str(clusters), "--clusters", "w*")
    assert fleet["clusters"] == ["west"]
    assert {r["cluster"] for r in fleet["resources"]} == {"west"}


def test_table_and_html_name_the_clusters(
    clusters: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, table, err = report(capsys, "--events-dir", str(clusters), "--clusters", "*")
    assert status == 0, err
    assert "2 clusters" in table
    lines = table.splitlines()
    assert any(line.startswith("CLUSTER") for line in lines)
    assert any(line.startswith("east ") for line in lines)
    fleet_rows = lines[lines.index("Fleet (every cluster), by kind, accelerator and topology:") :]
    assert any(line.startswith("*") and "tpu-v5p-slice" in line for line in fleet_rows)
    assert err == ""  # not a terminal: no progress
    status, page, _ = report(
        capsys, "--events-dir", str(clusters), "--clusters", "*", "--format", "html"
    )
    assert status == 0
    assert page.startswith("<!DOCTYPE html>") and "east" in page and "west" in page
    assert "<script" not in page and "http" not in page


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--events-dir", "{base}", "--clusters", "nothing-*"], "matches"),
        (["--events-dir", "{base}/east", "--events-dir", "{base}/missing"], "no such directory"),
        (["--events-dir", "{base}/east", "--events-dir", "{base}/east"], "two histories"),
        (["--clusters", "*"], "--clusters needs --bucket or --events-dir"),
        (["--bucket", "b", "--path", "p", "--clusters", "*"], "--path names one history"),
        (["--bucket", "b", "--events-dir", "{base}", "--clusters", "*"], "not both"),
        (["--bucket", "b", "--clusters", "megamon/../*"], "none of them empty, '.' or '..'"),
        (["--bucket", "b", "--clusters", "megamon//*"], "none of them empty, '.' or '..'"),
        (["--bucket", "..", "--clusters", "megamon/*"], "not a bucket name"),
    ],
)
def test_bad_fleet_options_exit_2(
    clusters: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, out, err = report(capsys, *(a.format(base=clusters) for a in argv))
    assert status == 2
    assert message in err and "Traceback" not in err
    assert out == ""


def test_progress_on_a_terminal(
    clusters: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("megamon.fleet.command._show_progress", lambda: True)
    status, out, err = report(capsys, "--events-dir", str(clusters), "--clusters", "*")
    assert status == 0
    assert "reading histories" in err
    assert "reading histories" not in out


# --- a bucket -----------------------------------------------------------------------------


@pytest.fixture
def bucket_clusters(gcs_emulator_env: str, gcs_bucket: str) -> str:
    client = gcs_client(None)
    for name in ("east", "west"):
        path = f"megamon/clusters/{name}"
        fill(
            GcsEventStore(client, gcs_bucket, path),
            GcsReportExporter(client, gcs_bucket, path),
        )
    return gcs_bucket


@pytest.mark.integration
def test_a_bucket_reports_like_its_directories(
    bucket_clusters: str,
    clusters: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache = tmp_path / "cache"
    args = ("--bucket", bucket_clusters, "--clusters", "megamon/clusters/*")
    from_bucket = report_json(capsys, *args, "--cache-dir", str(cache))
    from_dirs = report_json(capsys, "--events-dir", str(clusters), "--clusters", "*")
    assert from_bucket["clusters"] == ["east", "west"]
    assert [_common(r) for r in from_bucket["resources"]] == [
        _common(r) for r in from_dirs["resources"]
    ]
    assert from_bucket["fleet"] == from_dirs["fleet"]
    assert (cache / bucket_clusters / "megamon/clusters/east/node-pools.json").exists()


@pytest.mark.integration
def test_the_cache_never_downloads_an_object_twice(bucket_clusters: str, tmp_path: Path) -> None:
    client = gcs_client(None)
    objects = ReadOnlyObjects(
        GcsObjects(client, bucket_clusters, instruments=Instruments.unregistered())
    )
    cache = HistoryCache(objects, tmp_path / "cache")
    roots, infos = cache.discover("megamon/clusters/*")
    assert roots == ["megamon/clusters/east", "megamon/clusters/west"]
    cache.refresh(roots, infos)
    first = cache.downloaded
    assert first == len(infos) > 0

    again = HistoryCache(objects, tmp_path / "cache")
    again.refresh(*again.discover("megamon/clusters/*"))
    assert again.downloaded == 0

    # A rewritten snapshot is fetched again (new generation); a deleted object is dropped.
    bucket = client.bucket(bucket_clusters)
    name = "megamon/clusters/east/node-pools.json"
    data = bucket.blob(name).download_as_bytes()
    bucket.blob(name).upload_from_string(data)
    archives = [i.name for i in infos if "/archive/" in i.name]
    bucket.blob(archives[0]).delete()
    third = HistoryCache(objects, tmp_path / "cache")
    third.refresh(*third.discover("megamon/clusters/*"))
    assert third.downloaded == 1
    assert not (tmp_path / "cache" / archives[0]).exists()
    assert (tmp_path / "cache" / name).read_bytes() == data


def test_a_damaged_segment_keeps_its_whole_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Garbage, a line missing its flags and a line cut short are skipped; the rest counts."""
    segment = tmp_path / "east" / "log" / "kind=nodepool" / "date=2026-06-01"
    segment.mkdir(parents=True)
    line = (
        '{{"type":"event","cluster":"east","kind":"nodepool","key":"np-a","tsNs":{ts},'
        '"up":{up},"ed":false,"f":false,"attrs":{{"nodePoolName":"np-a"}},"since":null}}\n'
    )
    t = 1_780_272_000_000_000_000
    hour = 3_600_000_000_000
    (segment / "0000000000000001.ndjson").write_text(
        line.format(ts=t, up="false")
        + "GARBAGE{\n"
        + '{"type":"event","kind":"nodepool","key":"np-a","tsNs":1780272000000000001}\n'
        + line.format(ts=t + hour, up="true")
        + line.format(ts=t + 2 * hour, up="false")[:40]
    )
    (tmp_path / "west").mkdir()
    fleet = report_json(
        capsys, "--events-dir", str(tmp_path / "east"), "--events-dir", str(tmp_path / "west")
    )
    (pool,) = fleet["resources"]
    assert pool["name"] == "np-a"
    assert pool["provisioningState"] == "success"
    assert pool["provisioningDuration"] == hour
    assert pool["state"] == "up"
    assert pool["downTime"] == 0


def test_the_fleet_table_has_each_clusters_own_rows(
    clusters: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fleet table's resource rows, after the cluster, read as the cluster's own
    report's (one set of columns for both)."""
    status, fleet, _ = report(capsys, "--events-dir", str(clusters), "--clusters", "*")
    assert status == 0
    status, alone, _ = report(capsys, "--events-dir", str(clusters / "east"))
    assert status == 0

    def rows(table: str, until: str) -> list[list[str]]:
        lines = table.splitlines()
        heads = (["KIND", "RESOURCE", "ACCELERATOR"], ["CLUSTER", "KIND", "RESOURCE"])
        start = next(i for i, line in enumerate(lines) if line.split()[:3] in heads)
        body = lines[start : lines.index(until, start)]
        return [line.split() for line in body if line]

    fleet_rows = rows(fleet, "By cluster, kind, accelerator and topology:")
    mine = [r[1:] for r in fleet_rows if r[0] in ("CLUSTER", "east")]
    own = rows(alone, "By kind, accelerator and topology:")
    # the cluster's own table adds each resource's REASONS after the shared columns
    assert [row[: len(shared)] for row, shared in zip(own, mine, strict=True)] == mine


def test_histories_with_reasons_archives_and_snapshots_read_as_each_clusters_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two histories written by the recorder as ``make demo`` leaves them (down events with
    reasons in the snapshot files, an archived node pool, heartbeats, a planned stop): each
    cluster's rows and aggregates are its own ``megamon report``'s, field for field."""
    np_a, np_b, job = (Kind.NODEPOOL, "np-a"), (Kind.NODEPOOL, "np-b"), (Kind.JOBSET, "uid-1")
    script = [
        Step(0, {np_a: (DOWN, UNKNOWN), np_b: (DOWN, UNKNOWN), job: (DOWN, UNKNOWN)}),
        Step(20 * S, {np_a: (UP, ""), np_b: (UP, ""), job: (UP, "")}),
        Step(60 * S, {np_a: (DOWN, MAINTENANCE), np_b: (UP, ""), job: (UP, "")}),
        Step(30 * S, {np_a: (UP, ""), np_b: (UP, ""), job: (PLANNED, "")}),
        Step(30 * S, {np_a: (UP, ""), job: (PLANNED, "")}),
    ]
    roots = [tmp_path / "clusters" / name for name in ("east", "west")]
    ends = [write_runs(root, T0, [Run(0, script, 3600.0)], RESOURCES) for root in roots]
    now = ["--now", timestamps.format_ns(max(ends) + 60 * S)]
    fleet = report_json(capsys, *now, "--events-dir", str(roots[0]), "--events-dir", str(roots[1]))
    for root in roots:
        alone = report_json(capsys, *now, "--events-dir", str(root))
        mine = [_common(r) for r in fleet["resources"] if r["cluster"] == root.name]
        assert mine == [_common(r) for r in alone["resources"]]
        assert any(r["retiredAt"] for r in mine)
        mine_aggregates = [a for a in fleet["aggregates"] if a["cluster"] == root.name]
        pairs = zip(mine_aggregates, alone["aggregates"], strict=True)
        assert [{k: got[k] for k in expected} for got, expected in pairs] == alone["aggregates"]
    jobs = [r for r in fleet["resources"] if r["kind"] == "jobset"]
    assert {(r["state"], r["availabilityPercent"], r["recoveryCount"]) for r in jobs} == {
        ("expected-down", 100.0, 0)
    }
