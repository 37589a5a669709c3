"""``megamon config check``: every problem of a configuration at once, one line each (exit
2), or what ``megamon run`` would do with it (exit 0) — and every command says what it does."""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson
import pytest

from megamon.cli.main import build_parser, main


def check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object
) -> tuple[int, str, list[str]]:
    path = tmp_path / "config.json"
    path.write_bytes(document if isinstance(document, bytes) else orjson.dumps(document))
    status = main(["config", "check", "--config-path", str(path)])
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


def test_every_problem_is_listed_at_once_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, lines = check(
        tmp_path,
        capsys,
        {
            "EventBucketName": "b",
            "AggregationIntervalSeconds": "10",
            "Exporters": ["stdout", "bogus"],
            "GKE": {"ClusterNme": "c"},
            "UnknownCountThreshold": 2,
        },
    )
    assert status == 2 and out == ""
    where = f"megamon config check: {tmp_path / 'config.json'}: "
    assert lines[:-1] == [
        where + "unknown key EventBucketName: did you mean EventsBucketName?",
        where + "unknown key GKE.ClusterNme: did you mean GKE.ClusterName?",
        where + 'AggregationIntervalSeconds: Input should be a valid integer (got "10")',
        where + "Exporters: unknown exporter 'bogus' (known: stdout, configmap, gcs, otlp)"
        ' (got ["stdout","bogus"])',
        where + "UnknownCountThreshold: Input should be less than or equal to 1 (got 2)",
    ]
    refused = "5 problems: megamon run would refuse " + str(tmp_path / "config.json")
    assert lines[-1].endswith(refused)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (b"", "the configuration file is empty"),
        (b"{", "invalid JSON"),
        (b"[]", "must be a JSON object"),
        ({"MetricsAddr": "nope"}, "MetricsAddr: listen address 'nope': missing port"),
    ],
)
def test_a_file_megamon_run_refuses_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object, problem: str
) -> None:
    status, _, lines = check(tmp_path, capsys, document)
    assert status == 2
    assert problem in lines[0] and "Traceback" not in "\n".join(lines)


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", "--config-path", str(tmp_path / "none.json")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith("none.json: cannot read the configuration: No such file or directory")


def test_a_valid_file_says_what_would_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, lines = check(
        tmp_path,
        capsys,
        {
            "EventsBucketName": "history",
            "GKE": {"ProjectID": "p", "ClusterLocation": "us-east5", "ClusterName": "c1"},
            "Exporters": ["gcs"],
            "SliceEnabled": True,
            "WorkloadKinds": ["trainjob"],
            "SecureMetrics": True,
        },
    )
    assert status == 0 and lines == []
    assert "valid; megamon run would start with:" in out.splitlines()[0]
    assert "kinds:       nodepool, jobset, slice; described: trainjob" in out
    assert "GKE ListNodePools of projects/p/locations/us-east5/clusters/c1, every 10 s" in out
    assert "history:     gs://history/megamon/clusters/c1 (GCS), snapshots every 900 s" in out
    assert "metrics:     :8080 /metrics (http)" in out  # SecureMetrics is the Go megamon's
    assert "exporters:   gcs" in out


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*path, name))
                found.extend(_commands(sub, (*path, name)))
    return found


def test_every_command_has_a_description_and_every_leaf_examples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    commands = _commands(build_parser())
    assert ("config", "check") in commands and ("events", "show") in commands
    for command in commands:
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        _, _, rest = text.partition("\n\n")
        assert rest.strip() and not rest.startswith(("positional", "options")), command
        leaf = not any(other[: len(command)] == command for other in commands if other != command)
        if leaf:
            assert "examples:" in text and f"megamon {' '.join(command)}" in text, command
