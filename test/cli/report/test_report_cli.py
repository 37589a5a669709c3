"""``megamon report --format table|json`` against history written by the real event log, in
a directory, a bucket (the emulator) and through a configuration file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from internal.tools.scripted_history import DOWN, UP, ScriptedResource, record
from megamon.cli.main import main
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.publishing.exporters.archives import GcsReportExporter, LocalReportExporter
from megamon.stores.factory import gcs_client
from megamon.stores.gcs import GcsEventStore
from megamon.stores.local import LocalEventStore
from megamon.summary.summarizing import summarize
from test.cli.report.history import NOW, NOW_TEXT, V5P, H, M, T, fill


@pytest.fixture
def events_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "history"
    fill(LocalEventStore(directory), LocalReportExporter(directory))
    return directory


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status, out, err = run(capsys, "report", "--format", "json", "--now", NOW_TEXT, *argv)
    assert status == 0, err
    document: dict[str, Any] = orjson.loads(out)
    return document


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in document["resources"]}


def test_json_reports_every_resource_live_and_archived(
    events_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    resources = by_name(run_json(capsys, "--events-dir", str(events_dir)))
    assert list(resources) == ["np-a", "np-b", "np-old", "team/train"]
    np_a = resources["np-a"]
    assert (np_a["accelerator"], np_a["topology"], np_a["live"]) == ("tpu-v5p-slice", "2x2x1", True)
    assert (np_a["upTime"], np_a["downTime"], np_a["provisioningTime"]) == (8 * H, H, H)
    assert np_a["availabilityPercent"] == pytest.approx(100 * 8 / 9)
    assert (np_a["interruptionCount"], np_a["recoveryCount"]) == (1, 1)
    assert (np_a["meanTimeToRecover"], np_a["meanTimeBetweenInterruptions"]) == (H, 8 * H)
    np_b = resources["np-b"]
    assert (np_b["upTime"], np_b["downTime"], np_b["failedTime"]) == (6 * H + 30 * M, 2 * H, 2 * H)
    assert np_b["expectedDownTime"] == H
    assert (np_b["interruptionCount"], np_b["recoveryCount"], np_b["state"]) == (1, 0, "failed")
    assert np_b["meanTimeToRecover"] is None
    old = resources["np-old"]
    assert (old["live"], old["retiredAt"], old["end"]) == (
        False,
        "2026-06-01T04:00:00Z",
        "2026-06-01T04:00:00Z",
    )
    assert (old["accelerator"], old["upTime"], old["availabilityPercent"]) == (
        "tpu-v6e-slice",
        2 * H,
        100.0,
    )
    job = resources["team/train"]
    assert (job["kind"], job["key"], job["start"]) == ("jobset", "js-1", "2026-06-01T01:00:00Z")


def test_the_log_alone_reports_the_retired_resources_too(
    events_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of the segments without ``archive/`` and the event files (what an engine over
    the log has) still reports np-old, retired, with its figures; with ``archive/`` back, once."""
    everything = run_json(capsys, "--events-dir", str(events_dir))["resources"]
    log_only = events_dir.parent / "log-only"
    shutil.copytree(
        events_dir / "log", log_only / "log", ignore=shutil.ignore_patterns("snapshots")
    )
    assert run_json(capsys, "--events-dir", str(log_only))["resources"] == everything
    shutil.copytree(events_dir / "archive", log_only / "archive")
    assert run_json(capsys, "--events-dir", str(log_only))["resources"] == everything


def test_provisioning_is_summarizes(events_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    resources = run_json(capsys, "--events-dir", str(events_dir))["resources"]
    store = LocalEventStore(events_dir)
    for resource in resources:
        kind = Kind(resource["kind"])
        if resource["live"]:
            summary = summarize(store.read(kind).records[resource["key"]], NOW)
        else:
            (entry,) = store.read_archive(kind, resource["key"])
            summary = summarize(entry.record, entry.retired_at)
        assert resource["provisioningDuration"] == summary.provisioning_duration
        assert resource["provisioningState"] == summary.provisioning_state.value


def test_json_aggregates_per_kind_accelerator_and_topology(
    events_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    aggregates = run_json(capsys, "--events-dir", str(events_dir))["aggregates"]
    shapes = [(a["kind"], a["accelerator"], a["topology"], a["resourceCount"]) for a in aggregates]
    assert shapes == [
        ("nodepool", "tpu-v5p-slice", "2x2x1", 2),
        ("nodepool", "tpu-v6e-slice", "4x4", 1),
        ("jobset", "tpu-v5p-slice", "2x2x1", 1),
    ]
    v5p = aggregates[0]
    assert (v5p["upTime"], v5p["downTime"]) == (14 * H + 30 * M, 3 * H)
    assert v5p["availabilityPercent"] == pytest.approx(100 * 14.5 / 17.5)
    assert (v5p["interruptionCount"], v5p["recoveryCount"]) == (2, 1)
    assert (v5p["meanTimeToRecover"], v5p["meanTimeBetweenInterruptions"]) == (H, 7 * H + 15 * M)
    assert v5p["provisioningStates"] == {"success": 2, "provisioning": 0, "failed": 0}
    assert v5p["meanProvisioningDuration"] == 45 * M


def test_since_clips_the_window_and_drops_what_ended_before(
    events_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = run_json(capsys, "--events-dir", str(events_dir), "--since", "2026-06-01T04:30:00Z")
    assert document["window"]["since"] == "2026-06-01T04:30:00Z"
    resources = by_name(document)
    assert list(resources) == ["np-a", "np-b", "team/train"]  # np-old retired at 4h
    assert (resources["np-a"]["upTime"], resources["np-a"]["downTime"]) == (4 * H + 30 * M, H)
    assert resources["np-b"]["expectedDownTime"] == 0
    relative = run_json(capsys, "--events-dir", str(events_dir), "--since", "5h30m")
    assert relative["window"] == document["window"]


def test_kind_selects_kinds(events_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "--events-dir", str(events_dir), "--kind", "jobset")
    assert [r["name"] for r in document["resources"]] == ["team/train"]
    both = run_json(
        capsys, "--events-dir", str(events_dir), "--kind", "jobset", "--kind", "nodepool"
    )
    assert len(both["resources"]) == 4


def test_without_a_report_live_resources_are_named_from_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No exporter configured (no reports/latest.json): the attributes the log recorded name
    every live resource all the same."""
    fill(LocalEventStore(tmp_path))
    resources = by_name(run_json(capsys, "--events-dir", str(tmp_path)))
    assert resources["np-a"]["accelerator"] == "tpu-v5p-slice"
    assert "team/train" in resources  # the JobSet's name, not its UID
    assert resources["np-old"]["accelerator"] == "tpu-v6e-slice"  # archives keep their attrs


def test_an_unreadable_report_warns_and_goes_on(
    events_dir: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    latest = events_dir / "reports" / "latest.json"
    latest.write_text("{not json")
    status, out, _ = run(
        capsys, "report", "--events-dir", str(events_dir), "--now", NOW_TEXT, "--format", "json"
    )
    assert status == 0
    assert f"report {latest} unreadable" in caplog.text
    assert by_name(orjson.loads(out))["np-a"]["accelerator"] == "tpu-v5p-slice"  # from the log


def test_the_table(events_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "report", "--events-dir", str(events_dir), "--now", NOW_TEXT)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        "megamon report: window 2026-06-01T00:00:00Z .. 2026-06-01T10:00:00Z, 10h00m (all history)"
    )
    rows = {line.split()[1]: line.split() for line in lines if line.startswith("nodepool  np-")}
    assert rows["np-a"][4:9] == ["up", "88.88%", "8h00m", "1h00m", "0s"]
    assert rows["np-b"][4:14] == [
        *("failed", "76.47%", "6h30m", "2h00m", "1h00m", "1", "0", "-", "6h30m", "success"),
    ]
    assert rows["np-old"][4:6] == ["retired", "100.00%"]
    aggregates = lines[lines.index("By kind, accelerator and topology:") + 1 :]
    assert aggregates[1].split()[:8] == [
        *("nodepool", "tpu-v5p-slice", "2x2x1", "2", "82.85%", "14h30m", "3h00m", "1h00m"),
    ]


def test_output_to_a_file(
    events_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.json"
    status, out, _ = run(
        capsys, "report", "--events-dir", str(events_dir), "--format", "json", "-o", str(target)
    )
    assert (status, out) == (0, "")
    assert len(orjson.loads(target.read_bytes())["resources"]) == 4


def test_from_a_bucket_with_its_report(
    gcs_emulator_env: str, gcs_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = "megamon/clusters/c1"
    client = gcs_client("megamon-test")
    fill(GcsEventStore(client, gcs_bucket, path), GcsReportExporter(client, gcs_bucket, path))
    resources = by_name(run_json(capsys, "--bucket", gcs_bucket, "--path", path))
    assert list(resources) == ["np-a", "np-b", "np-old", "team/train"]
    assert resources["np-a"]["accelerator"] == "tpu-v5p-slice"


def test_from_the_configuration_file(
    events_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"EventsLocalDir": str(events_dir)}).decode())
    resources = by_name(run_json(capsys, "--config-path", str(config)))
    assert resources["np-a"]["topology"] == "2x2x1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday': neither an RFC 3339"),
        (["--since", "2026-06-02T00:00:00Z"], "is not before --now"),
        (["--now", "noon"], "--now: not an RFC 3339 timestamp"),
        (["--events-dir", "/nonexistent"], "no such directory"),
        (["--path", "p"], "--path needs --bucket"),
        (["-o", "/nonexistent/dir/report.html"], "-o /nonexistent/dir/report.html"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    events_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    args = ["report", "--now", NOW_TEXT, *argv]
    if "--events-dir" not in argv and "--path" not in argv:
        args += ["--events-dir", str(events_dir)]
    status, _, err = run(capsys, *args)
    assert status == 2
    # The error is one line; the line saying where history is read from may come first.
    err = "".join(line for line in err.splitlines(True) if "reading history from" not in line)
    assert err.startswith("megamon report: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kind", "Pods!"], "'Pods!' is not a kind's noun"),
        (["--format", "pdf"], "invalid choice: 'pdf'"),
    ],
)
def test_argparse_refuses_unknown_choices(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["report", *argv])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_a_name_cannot_split_or_reverse_its_row_in_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "evil\nnodepool  np-fake  \u202eeurt\\n"
    resources = [
        ScriptedResource(
            Kind.JOBSET,
            "js-x",
            Attrs(jobset_name=hostile, jobset_namespace="team", jobset_uid="js-x", **V5P),
            ((T, DOWN), (T + H, UP)),
        )
    ]
    directory = tmp_path / "history"
    record(LocalEventStore(directory), resources, NOW)
    status, out, err = run(capsys, "report", "--events-dir", str(directory), "--now", NOW_TEXT)
    assert status == 0, err
    (row,) = [line for line in out.splitlines() if "team/" in line]
    assert "team/evil\\nnodepool  np-fake  \\u202eeurt\\\\n" in row
    assert "\u202e" not in out and not any(line.startswith("nodepool") for line in out.splitlines())
    document = run_json(capsys, "--events-dir", str(directory))
    assert by_name(document)[f"team/{hostile}"]["key"] == "js-x"  # JSON keeps the name itself
