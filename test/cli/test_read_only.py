"""Read-only commands never write to the history they read, and a corrupt file is their
error: exit 2 with one line naming the file, never a quarantine copy or an empty answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from megamon.cli.main import main
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore

T_NS = timestamps.parse("2026-05-04T18:00:00Z")
COMMANDS = [
    ["events", "show", "nodepool"],
    ["events", "archive", "nodepool"],
    ["report", "--now", "2026-05-04T19:00:00Z"],
]


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def history(root: Path) -> None:
    log = EventLog(LocalEventStore(root), [Kind.NODEPOOL], clock=lambda: T_NS)
    log.load([Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": Observation.build(expected=1, ready=1)}}, T_NS)
    log.close()


@pytest.mark.parametrize("argv", COMMANDS)
def test_reading_a_good_history_writes_nothing(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    history(tmp_path)
    before = tree(tmp_path)
    assert main([*argv, "--events-dir", str(tmp_path)]) == 0
    assert tree(tmp_path) == before


@pytest.mark.parametrize("argv", COMMANDS[::2])
def test_a_corrupt_snapshot_is_an_error_and_is_left_as_it_is(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "node-pools.json").write_bytes(b'{"np": {"upEvents": [garbage')
    before = tree(tmp_path)
    assert main([*argv, "--events-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "node-pools.json: invalid JSON" in err and "Traceback" not in err
    assert tree(tmp_path) == before  # no .corrupt copy, no lock file


@pytest.mark.parametrize("argv", COMMANDS[::2])
def test_a_damaged_segment_is_an_error_and_is_not_quarantined(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    history(tmp_path)
    for snapshot in [*tmp_path.glob("*.json"), *tmp_path.glob("log/snapshots/*.json")]:
        snapshot.unlink()  # the history is in its log only
    (segment,) = tmp_path.glob("log/kind=nodepool/*/*.ndjson")
    segment.write_bytes(segment.read_bytes()[:-7])  # a torn last line
    before = tree(tmp_path)
    assert main([*argv, "--events-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert segment.name in err and "Traceback" not in err
    assert tree(tmp_path) == before
