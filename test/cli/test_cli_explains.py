"""The CLI explains itself: where history is read from and why, a warning when that source
holds nothing, kinds, choices and defaults in ``--help``, and ``summarize`` on an archive entry
saying what to run instead."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from megamon.cli.main import main
from megamon.codec.history import encode_archive_entry
from megamon.domain import timestamps
from megamon.domain.events import ArchiveEntry, EventRecord, UpEvent
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore

T = 1_780_272_000 * 1_000_000_000


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory without ./megamon-data (and no /etc/megamon/config.json is assumed)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


T_NS = timestamps.parse("2026-05-04T18:00:00Z")


@pytest.mark.parametrize("argv", [["report"], ["events", "show", "nodepool"]])
def test_no_source_says_it_reads_the_default_directory_and_that_it_is_missing(
    elsewhere: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    if Path("/etc/megamon/config.json").exists():
        pytest.skip("this machine has /etc/megamon/config.json")
    status, _, err = run(capsys, *argv)
    assert status == 0
    command = "megamon " + " ".join(argv[:2] if argv[0] == "events" else argv[:1])
    lines = err.splitlines()
    default = elsewhere / "megamon-data"
    assert lines[0] == (
        f"{command}: reading history from {default} (the default: no --events-dir, --bucket or "
        "--config-path, and no /etc/megamon/config.json)"
    )
    assert lines[1] == f"{command}: warning: {default} does not exist: there is no history there"


def test_an_empty_directory_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "events", "show", "jobset", "--events-dir", str(tmp_path))
    assert status == 0 and orjson.loads(out) == {}
    assert f"reading history from {tmp_path} (--events-dir)" in err
    assert f"warning: {tmp_path} holds no event files" in err


def test_a_directory_with_history_is_named_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = LocalEventStore(tmp_path)
    store.write(Kind.NODEPOOL, {"np": EventRecord.of([UpEvent(ts=T, up=True)])}, None)
    status, _, err = run(capsys, "events", "show", "nodepool", "--events-dir", str(tmp_path))
    assert status == 0
    assert err == f"megamon events show: reading history from {tmp_path} (--events-dir)\n"


def test_a_history_only_in_its_log_is_not_called_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Between two snapshots a history lives in its log segments only."""
    log = EventLog(LocalEventStore(tmp_path), [Kind.NODEPOOL], clock=lambda: T_NS)
    log.load([Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": Observation.build(expected=1, ready=1)}}, T_NS)
    log.close()
    for snapshot in [*tmp_path.glob("*.json"), *tmp_path.glob("log/snapshots/*.json")]:
        snapshot.unlink()  # as if megamon had not snapshotted yet (the file and its mark)
    assert list((tmp_path / "log").rglob("*")), "the log holds the history"
    status, out, err = run(capsys, "events", "show", "nodepool", "--events-dir", str(tmp_path))
    assert status == 0 and "np" in orjson.loads(out)
    assert "warning" not in err


def test_the_source_of_a_configuration_file_names_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(orjson.dumps({"EventsLocalDir": str(tmp_path / "h")}))
    run(capsys, "events", "show", "slice", "--config-path", str(config))
    _, _, err = run(capsys, "events", "show", "slice", "--config-path", str(config))
    assert f"reading history from {tmp_path / 'h'} (EventsLocalDir in {config})" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run"], ["--log-level {debug,info,warning,error}", "(default: info)"]),
        (["events", "show"], ["a built-in kind (nodepool, jobset, jobset_nodes, slice,"]),
        (["events", "archive"], ["a built-in kind (nodepool, jobset", "list the retired keys"]),
        (["report"], ["a built-in kind (nodepool, jobset", "(default: table)", "EventsLocalDir"]),
    ],
)
def test_help_lists_choices_and_defaults(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: list[str]
) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for fragment in expected:
        assert " ".join(fragment.split()) in text


def test_summarize_on_an_archive_entry_says_what_to_run_instead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = EventRecord.of([UpEvent(ts=T, up=True), UpEvent(ts=T + 60, up=False)])
    entry = ArchiveEntry(kind="nodepool", key="np-old", retired_at=T + 120, attrs={}, record=record)
    path = tmp_path / "np-old.json"
    path.write_bytes(encode_archive_entry(entry))
    status, out, err = run(capsys, "summarize", str(path))
    assert status == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"megamon summarize: {path}: an archive entry (the retired nodepool")
    assert "`megamon events archive nodepool np-old`" in err
    assert "`megamon report --kind nodepool`" in err


def test_summarize_on_other_bad_json_keeps_its_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    status, _, err = run(capsys, "summarize", str(path))
    assert status == 2
    assert "an event file must be a JSON object of records" in err
