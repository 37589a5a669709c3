"""``megamon events show`` / ``megamon events archive`` against a directory, a bucket (the
emulator) and a configuration file."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from megamon.cli.main import main
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.base import EventStore
from megamon.stores.factory import gcs_client
from megamon.stores.gcs import GcsEventStore
from megamon.stores.local import LocalEventStore

T = 1_780_272_000 * 10**9


def _fill(store: EventStore) -> None:
    log = EventLog(store, [Kind.NODEPOOL])
    a = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="a"))
    b = Observation.build(expected=1, ready=0, attrs=Attrs(nodepool_name="b"))
    log.append({Kind.NODEPOOL: {"a": a, "b": b}}, T)
    log.append({Kind.NODEPOOL: {"a": a}}, T + 1)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, object, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, orjson.loads(out) if out else None, err


def test_show_and_archive_from_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(LocalEventStore(tmp_path))
    status, doc, _ = run(capsys, "events", "show", "nodepool", "--events-dir", str(tmp_path))
    assert status == 0
    assert doc == {
        "a": {
            "upEvents": [
                {"up": False, "ts": "2026-06-01T00:00:00Z"},
                {"up": True, "ts": "2026-06-01T00:00:00Z"},
            ]
        }
    }
    status, doc, _ = run(capsys, "events", "archive", "nodepool", "--events-dir", str(tmp_path))
    assert (status, doc) == (0, ["b"])
    status, doc, _ = run(
        capsys, "events", "archive", "nodepool", "b", "--events-dir", str(tmp_path)
    )
    assert status == 0
    assert isinstance(doc, list) and doc[0]["retiredAt"] == "2026-06-01T00:00:00.000000001Z"
    assert doc[0]["attrs"]["nodePoolName"] == "b"


def test_show_from_a_bucket(
    gcs_emulator_env: str, gcs_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(GcsEventStore(gcs_client("megamon-test"), gcs_bucket, "megamon/clusters/c1"))
    status, doc, err = run(
        capsys,
        "events",
        "show",
        "nodepool",
        "--bucket",
        gcs_bucket,
        "--path",
        "megamon/clusters/c1",
    )
    assert status == 0, err
    assert isinstance(doc, dict) and set(doc) == {"a"}


def test_show_from_the_configuration_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(LocalEventStore(tmp_path / "data"))
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"eventslocaldir": str(tmp_path / "data")}).decode())
    status, doc, _ = run(capsys, "events", "show", "nodepool", "--config-path", str(config))
    assert status == 0 and isinstance(doc, dict) and set(doc) == {"a"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["events", "show", "nodepool", "--events-dir", "/nonexistent"], "no such directory"),
        (["events", "show", "nodepool", "--path", "p"], "--path needs --bucket"),
        (["events", "show", "nodepool", "--config-path", "/nonexistent.json"], "cannot read"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert err.startswith("megamon events show: ") and message in err and err.count("\n") == 1


def test_an_unknown_kind_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Refused before anything is read, in one line naming the kinds there are."""
    assert main(["events", "show", "pods", "--events-dir", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("megamon events show: unknown kind 'pods': neither built in")
    assert "known: nodepool, jobset, jobset_nodes, slice, leaderworkerset" in line
    with pytest.raises(SystemExit) as caught:
        main(["events", "show", "Pods!"])
    assert caught.value.code == 2
    assert "'Pods!' is not a kind's noun" in capsys.readouterr().err


def test_compact_writes_the_go_format_file_and_refuses_while_another_writer_holds_the_lease(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = LocalEventStore(tmp_path)
    running = EventLog(store, [Kind.NODEPOOL], holder="megamon-0/1")
    running.append({Kind.NODEPOOL: {"a": Observation.build(expected=1, ready=1)}}, T)
    status, _, err = run(capsys, "events", "compact", "--events-dir", str(tmp_path))
    assert status == 2 and "writer lease is held" in err
    assert store.read(Kind.NODEPOOL).version is None  # nothing written by the refused run
    running._lease.release()  # megamon stopped without its shutdown snapshot
    status, doc, _ = run(capsys, "events", "compact", "--events-dir", str(tmp_path))
    assert status == 0 and doc == {"compacted": ["nodepool"]}
    assert set(store.read(Kind.NODEPOOL).records) == {"a"}
