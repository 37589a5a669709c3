"""``make demo`` runs on a fresh machine: emulators, the fleet, megamon, the live table."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from internal.demo.__main__ import LAST_SCRAPE, Screen, _history, time_scale
from internal.demo.replay import START_NS, replay
from internal.demo.table import KINDS, Row, render, rows, state
from megamon.cli.main import main
from megamon.config import parse_config
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.stores.local import LocalEventStore
from test.crosssurface import check_history, scrape_time
from test.summary.foldcheck import check_folds


def test_the_demo_shows_the_fleet_and_stops_cleanly(tmp_path: Path) -> None:
    """At 120x the whole half hour plays in 15 s, slowly enough for megamon to see every
    state, the deleted pool included, before the run ends."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "internal.demo",
            "--duration",
            "22",
            "--speed",
            "120",
            "--workdir",
            str(tmp_path),
            "--metrics-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    screen, hints = done.stdout.rsplit("megamon demo —", 1)[-1].split("\nstopped.", 1)
    assert "time runs 120x fast" in screen
    expected = {
        ("nodepool", "v5p-16-stuck"): "failed",
        ("nodepool", "v5e-256-pretrain"): "up",
        ("nodepool", "v6e-64-eval"): "deleted",
        ("jobset", "llm-pretrain"): "up",
        ("jobset", "notebook-eval"): "completed",
        ("jobset", "benchmark-v6e"): "completed",
        ("jobset", "spot-inference"): "failed",
        ("jobset", "rl-rollout"): "suspended",
    }
    kinds = ("nodepool ", "jobset ", "slice ", "leaderworkerset ")
    shown = {
        tuple(line.split()[:2]): line.split()[4]
        for line in screen.splitlines()
        if line.startswith(kinds)
    }
    for resource, word in expected.items():
        assert shown.get(resource) == word, (resource, screen)
    nameless = [resource for resource in shown if resource[1] == "?"]
    assert not nameless, screen  # fleet-wide series are no resource of their own
    assert (tmp_path / "megamon-data" / "node-pools.json").exists()
    log = (tmp_path / "megamon.log").read_text()
    assert " ERROR " not in log, log[:2000]  # the cluster is there before megamon polls it
    assert (tmp_path / "megamon-data" / "reports" / "latest.json").exists()

    commands = [line.strip() for line in hints.splitlines() if line.startswith("  ")]
    assert len(commands) == 3
    for command in commands:  # each works as printed, from where the demo was run
        ran = subprocess.run(shlex.split(command), capture_output=True, timeout=120, check=False)
        assert ran.returncode == 0, (command, ran.stderr[-2000:])
    shown_pools = subprocess.run(shlex.split(commands[0]), capture_output=True, check=True)
    assert "v5e-256-pretrain" in orjson.loads(shown_pools.stdout)

    # The history the demo leaves gives the same figures on every surface.
    config = parse_config((tmp_path / "megamon.json").read_bytes(), "megamon.json")
    last_scrape = (tmp_path / LAST_SCRAPE).read_text()
    check_history(
        tmp_path / "megamon-data",
        scrape_time(last_scrape),
        metrics=last_scrape,
        cycle_ns=int(config.AggregationIntervalSeconds * 10**9),
    )
    kinds = [*Kind, *(d.kind for d in config.WorkloadKinds)]
    check_folds(tmp_path / "megamon-data", kinds, scrape_time(last_scrape))


def test_each_run_starts_a_fresh_history_unless_kept(tmp_path: Path) -> None:
    history = tmp_path / "megamon-data"
    history.mkdir()
    (history / "node-pools.json").write_text("{}")
    assert _history(argparse.Namespace(workdir=tmp_path, keep=True)) == history
    assert (history / "node-pools.json").exists()
    assert _history(argparse.Namespace(workdir=tmp_path, keep=False)) == history
    assert not history.exists()


def test_the_header_says_how_fast_time_runs() -> None:
    screen = Screen("http://x/metrics", Path("log"), Path("h"), 60.0, 1800.0)
    assert time_scale(90.0, screen) == (
        "scenario T+00:30:00 of T+00:30:00, finished: nothing changes any more — time runs "
        "60x fast, so megamon (which measures real time) shows durations 60x shorter than "
        "the scenario's"
    )
    assert time_scale(10.0, screen).startswith("scenario T+00:10:00 of T+00:30:00 — time runs")


def test_a_down_resource_says_why() -> None:
    def row(up: float, intr: float = 0, rec: float = 0, prov: str = "success") -> Row:
        values = {"up": up, "interruption_count": intr, "recovery_count": rec}
        return Row({}, values, (prov, 1.0))

    assert state(row(1), "") == "up"
    assert state(row(0), "Completed") == "completed"
    assert state(row(0, 1), "Failed") == "failed"
    assert state(row(0, 1), "Suspended") == "suspended"
    assert state(row(0), "ERROR") == "failed"
    assert state(row(0), "STOPPING") == "deleting"
    assert state(row(0, prov="provisioning"), "") == "provisioning"
    assert state(row(0, 2, 1), "") == "interrupted"


def test_fleet_wide_series_are_not_rows_of_the_table() -> None:
    text = (
        'megamon_nodepool_up{nodepool_name="a",tpu_accelerator="tpu-v6e-slice"} 1\n'
        'megamon_nodepool_down_chip_seconds{tpu_accelerator="tpu-v6e-slice",reason="error"} 60\n'
        'megamon_nodepool_time_to_recover_seconds_bucket{le="+Inf",reason="error"} 1\n'
    )
    assert {kind: sorted(by_name) for kind, by_name in rows(text).items()} == {"nodepool": ["a"]}


def _columns(table: str) -> list[tuple[str, str, str, str, str, str]]:
    """Kind, name, state, first up in, interruptions, last reason of every resource row."""
    found = []
    for line in table.splitlines():
        words = line.split()
        if words and words[0] in KINDS:
            kind, name, _accelerator, _topology, state_, first_up, intr = words[:7]
            reason = words[9] if len(words) > 9 else "-"
            found.append((kind, name, state_, first_up, intr, reason))
    return found


def _readme_table() -> str:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    try_it = readme[readme.index("## Try it") :]
    start = try_it.index("```\nkind ") + len("```\n")
    return try_it[start : try_it.index("```", start)]


@pytest.mark.integration
def test_the_demo_scenario_ends_with_the_readme_table(tmp_path: Path) -> None:
    """The whole demo scenario, played against megamon's loops in lockstep (no waiting, no
    timing): the table's kind, name, state, first-up and interruption columns are README's.
    The deleted pool's nodes are seen gone a cycle before GKE's answer, yet it is deleted
    with no interruption — in the history megamon wrote and in ``megamon report``."""
    replayed = replay(tmp_path / "megamon-data")

    assert _columns(replayed.table) == _columns(_readme_table()), replayed.table
    store = LocalEventStore(replayed.history)
    [entry] = store.read_archive(Kind.NODEPOOL, "v6e-64-eval")
    assert entry.record.events[-1].expected_down
    out = tmp_path / "report.json"
    now = timestamps.format_ns(START_NS + 3600 * 10**9)
    argv = ["report", "--events-dir", str(replayed.history), "--format", "json"]
    assert main([*argv, "--kind", "nodepool", "--now", now, "-o", str(out)]) == 0
    [pool] = [r for r in orjson.loads(out.read_bytes())["resources"] if r["key"] == "v6e-64-eval"]
    assert (pool["interruptionCount"], pool["state"], pool["live"]) == (0, "expected-down", False)
    # Every surface gives the same figures for the history the demo leaves.
    check_history(replayed.history, scrape_time(replayed.scrape), metrics=replayed.scrape)


def test_a_failed_resource_reads_failed_as_in_megamon_report() -> None:
    """A failed Slice (``SliceCreationFailed``) has no status that explains it and never
    provisioned: the table says ``failed``, never ``down``."""
    report = {"slicesUp": {"s": {"sliceName": "s", "status": "", "failed": True}}}
    never_up = Row({"slice_name": "s"}, {"up": 0.0}, ("failed", 0.0))
    assert state(never_up, "", failed=True) == "failed"
    text = 'megamon_slice_up{slice_name="s"} 0\n'
    [row] = [line for line in render(text, report).splitlines() if line.startswith("slice ")]
    assert row.split()[2] == "failed"


def test_a_name_cannot_split_or_reverse_its_row() -> None:
    text = 'megamon_nodepool_up{nodepool_name="a\\nnodepool b\u202ex",tpu_topology="2x2"} 1\n'
    lines = render(text).splitlines()
    assert len(lines) == 3  # header, rule, one row
    assert lines[2].startswith("nodepool        a\\nnodepool b\\u202ex ")
