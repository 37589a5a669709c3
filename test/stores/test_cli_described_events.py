"""``megamon events`` and ``megamon report`` on a described kind's history: where it lives
comes from the configuration's ``WorkloadKinds`` (docs/kinds.md)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from megamon.cli.main import main
from megamon.config import parse_config
from megamon.domain.observations import Observation, WorkloadAttrs
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore

T = 1_780_272_000 * 10**9


def _config(tmp_path: Path, kinds: list[str]) -> Path:
    config = tmp_path / "config.json"
    document = {"EventsLocalDir": str(tmp_path / "data"), "WorkloadKinds": kinds}
    config.write_bytes(orjson.dumps(document))
    return config


def _fill(tmp_path: Path) -> None:
    (trainjob,) = parse_config(_config(tmp_path, ["trainjob"]).read_bytes(), "c").WorkloadKinds
    log = EventLog(LocalEventStore(tmp_path / "data"), [trainjob.kind])
    attrs = WorkloadAttrs(workload_name="t", workload_namespace="ml", workload_uid="uid-t")
    running = Observation.build(expected=2, ready=2, attrs=attrs)
    log.append({trainjob.kind: {"uid-t": running}}, T)
    log.append({trainjob.kind: {}}, T + 1)
    log.close()  # the shutdown snapshot: the kind's own event file


def test_a_described_kinds_history_is_in_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tmp_path)
    assert (tmp_path / "data" / "trainjobs.json").exists()
    config = str(_config(tmp_path, ["trainjob"]))
    assert main(["events", "archive", "trainjob", "--config-path", config]) == 0
    assert orjson.loads(capsys.readouterr().out) == ["uid-t"]
    assert main(["events", "archive", "trainjob", "uid-t", "--config-path", config]) == 0
    (entry,) = orjson.loads(capsys.readouterr().out)
    assert entry["kind"] == "trainjob"
    assert (entry["attrs"]["workloadName"], entry["attrs"]["workloadUID"]) == ("t", "uid-t")
    now = "2026-06-02T00:00:00Z"
    assert main(["report", "--config-path", config, "--format", "json", "--now", now]) == 0
    (resource,) = orjson.loads(capsys.readouterr().out)["resources"]
    assert (resource["kind"], resource["name"], resource["key"]) == ("trainjob", "ml/t", "uid-t")


def test_a_kind_the_configuration_does_not_describe_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(_config(tmp_path, []))
    assert main(["events", "show", "trainjob", "--config-path", config]) == 2
    err = capsys.readouterr().err
    assert "unknown kind 'trainjob': neither built in nor declared" in err
    assert "known: nodepool, jobset, jobset_nodes, slice, leaderworkerset;" in err
    assert err.count("\n") == 1


def _declared(tmp_path: Path) -> Path:
    """A configuration declaring a kind of its own (not shipped): ``pytorchjob``."""
    description = orjson.loads(
        (Path(__file__).parents[2] / "megamon/domain/shipped_kinds/trainjob.json").read_bytes()
    )
    description.update(
        Noun="pytorchjob",
        Title="PyTorchJob",
        ReportKey="pyTorchJobs",
        Group="kubeflow.org",
        Version="v1",
        Resource="pytorchjobs",
        EventFile="pytorchjobs.json",
        Labels={"Name": "pytorchjob_name", "Namespace": "pytorchjob_namespace",
                "UID": "pytorchjob_uid"},
    )  # fmt: skip
    config = tmp_path / "config.json"
    document = {"EventsLocalDir": str(tmp_path / "data"), "WorkloadKinds": [description]}
    config.write_bytes(orjson.dumps(document))
    return config


def test_a_kind_declared_in_the_configuration_is_read_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _declared(tmp_path)
    (declared,) = parse_config(config.read_bytes(), "c").WorkloadKinds
    log = EventLog(LocalEventStore(tmp_path / "data"), [declared.kind])
    attrs = WorkloadAttrs(workload_name="p", workload_namespace="ml", workload_uid="uid-p")
    log.append({declared.kind: {"uid-p": Observation.build(expected=1, ready=1, attrs=attrs)}}, T)
    log.close()
    assert (tmp_path / "data" / "pytorchjobs.json").exists()
    assert main(["events", "show", "pytorchjob", "--config-path", str(config)]) == 0
    shown = capsys.readouterr()
    assert list(orjson.loads(shown.out)) == ["uid-p"]
    assert "warning" not in shown.err, "a history of described kinds alone is a history"
    now = "2026-06-02T00:00:00Z"
    argv = ["report", "--kind", "pytorchjob", "--config-path", str(config), "--format", "json"]
    assert main([*argv, "--now", now]) == 0
    reported = capsys.readouterr()
    (resource,) = orjson.loads(reported.out)["resources"]
    assert (resource["kind"], resource["name"]) == ("pytorchjob", "ml/p")
    assert "warning" not in reported.err
    assert main(["events", "archive", "pytorchjob", "--config-path", str(config)]) == 0
    assert orjson.loads(capsys.readouterr().out) == []


def test_a_fleet_report_reads_a_kind_declared_in_the_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several histories (``--events-dir`` twice) and ``--kind`` of a declared kind: its rows
    from each; without the configuration, refused in one line rather than a traceback."""
    config = _declared(tmp_path)
    (declared,) = parse_config(config.read_bytes(), "c").WorkloadKinds
    dirs = []
    for cluster in ("east", "west"):
        log = EventLog(LocalEventStore(tmp_path / cluster), [declared.kind])
        attrs = WorkloadAttrs(workload_name="p", workload_namespace="ml", workload_uid="u")
        log.append({declared.kind: {"u": Observation.build(expected=1, ready=1, attrs=attrs)}}, T)
        log.close()
        dirs += ["--events-dir", str(tmp_path / cluster)]
    argv = ["report", *dirs, "--kind", "pytorchjob", "--format", "json"]
    now = ["--now", "2026-06-02T00:00:00Z", "--cache-dir", str(tmp_path / "cache")]
    assert main([*argv, *now, "--config-path", str(config)]) == 0
    rows = orjson.loads(capsys.readouterr().out)["resources"]
    assert sorted((row["cluster"], row["kind"]) for row in rows) == [
        ("east", "pytorchjob"),
        ("west", "pytorchjob"),
    ]
    assert main([*argv, *now]) == 2
    err = capsys.readouterr().err
    assert "unknown kind 'pytorchjob'" in err and "a described kind needs --config-path" in err
    assert err.count("\n") == 1


def test_every_kind_list_comes_from_one_registry(capsys: pytest.CaptureFixture[str]) -> None:
    """The help of every KIND argument lists the same kinds, the built-in ones among them."""
    helps = []
    for argv in (
        ["events", "show", "--help"],
        ["events", "archive", "--help"],
        ["report", "--help"],
    ):
        with pytest.raises(SystemExit):
            main(argv)
        helps.append(" ".join(capsys.readouterr().out.split()))
    for text in helps:
        assert "a built-in kind (nodepool, jobset, jobset_nodes, slice, leaderworkerset)" in text
        assert "shipped: kueue_workload, rayjob, trainjob" in text
