"""``megamon summarize`` and ``megamon --version``: what an SRE runs after an incident."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from freezegun import freeze_time

from megamon.cli.main import main

FILE = (
    b'{"np-a":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24.123456789Z"},'
    b'{"up":false,"f":true,"ts":"2026-05-04T18:30:00Z"},'
    b'{"up":true,"ts":"2026-05-04T18:41:00Z"},'
    b'{"up":false,"ts":"2026-05-05T02:00:00Z"},'
    b'{"up":true,"ts":"2026-05-05T02:10:00.000000001Z"}]},'
    b'"np-b":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"}]},'
    b'"np-c":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"},'
    b'{"up":false,"f":true,"ts":"2026-05-04T18:05:00Z"}]}}'
)


@pytest.fixture
def event_file(tmp_path: Path) -> Path:
    path = tmp_path / "node-pools.json"
    path.write_bytes(FILE)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_summarize_prints_every_key_in_nanoseconds(
    event_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "summarize", str(event_file), "--now", "2026-05-05T03:10:00Z")
    assert status == 0, err
    doc = orjson.loads(out)
    a = doc["np-a"]
    assert a["downTimeProvisioned"] == 1_055_876_543_211
    assert a["provisioningState"] == "success"
    assert a["interruptionCount"] == 1 and a["recoveryCount"] == 1
    assert a["latestDownTimeBetweenRecovery"] == 600_000_000_001
    assert a["upTime"] == 26_340_000_000_000 + 3_599_999_999_999
    assert doc["np-b"]["provisioningState"] == "provisioning"
    assert doc["np-b"]["provisioningDuration"] == 33_000 * 10**9
    assert doc["np-c"]["provisioningState"] == "failed"
    assert doc["np-c"]["provisioningDuration"] == 300 * 10**9


def test_now_defaults_to_the_current_time(
    event_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with freeze_time("2026-05-04T19:00:00Z"):
        status, out, _ = run(capsys, "summarize", str(event_file))
    assert status == 0
    assert orjson.loads(out)["np-b"]["provisioningDuration"] == 3600 * 10**9


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "invalid JSON"),
        (b'{"np":{"upEvents":[{"up":false,"ts":"yesterday"}]}}', "key \"np\", event 0: 'ts'"),
        (b'{"np":{"upEvents":"x"}}', "key \"np\": 'upEvents' must be a list"),
        (b"[1]", "must be a JSON object of records"),
    ],
)
def test_bad_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    status, out, err = run(capsys, "summarize", str(path), "--now", "2026-05-05T00:00:00Z")
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    assert str(path) in err and expected in err


def test_missing_file_and_bad_now_exit_2(
    tmp_path: Path, event_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "summarize", str(tmp_path / "nope.json"))
    assert status == 2 and "nope.json: cannot read" in err
    status, _, err = run(capsys, "summarize", str(event_file), "--now", "tomorrow")
    assert status == 2 and "--now" in err and "tomorrow" in err


def test_invalid_history_is_logged_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b'{"x":{"upEvents":[{"up":true,"ts":"2026-05-04T18:00:00Z"}]}}')
    status, out, _ = run(capsys, "summarize", str(path), "--now", "2026-05-05T00:00:00Z")
    assert status == 0
    assert orjson.loads(out)["x"]["provisioningState"] == ""
    assert 'key "x": first event is up' in caplog.text


def test_the_installed_command_never_prints_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"np":{"upEvents":[{"up":1,"ts":"x"}]}}')
    done = subprocess.run(
        [sys.executable, "-m", "megamon", "summarize", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("megamon summarize: ")
