"""Scenarios: steps play in simulated-time order on a compressed clock, stop on request, survive
a failing step, idle or replay; the demo plays to the end in seconds; the CLI serves it."""

from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from google.cloud.container_v1 import ClusterManagerClient

from internal.fleet import Fleet, ScenarioRunner, Step, call, demo_scenario, describe, minutes
from megamon.config import load_config
from test.emulators.fleet.conftest import PARENT

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
FAST = 1_000_000.0  # simulated seconds per real second: half an hour in ~2 ms of waiting


def recorder(log: list[str], label: str) -> Step:
    return Step(timedelta(0), label, lambda _fleet: log.append(label))


def test_minutes_reads_clock_notation() -> None:
    assert minutes("7") == timedelta(minutes=7)
    assert minutes("7:30") == timedelta(minutes=7, seconds=30)
    assert minutes("1:02:03") == timedelta(hours=1, minutes=2, seconds=3)
    with pytest.raises(ValueError, match="expected"):
        minutes("1:2:3:4")


def test_call_makes_a_printable_action_and_refuses_unknown_operations() -> None:
    action = call("add_nodes", "np", 2)

    assert repr(action) == "operator.methodcaller('add_nodes', 'np', 2)"
    with pytest.raises(ValueError, match="no operation 'explode'"):
        call("explode")
    with pytest.raises(ValueError, match="no operation '_pool'"):
        call("_pool", "np")


def test_steps_play_in_order_of_simulated_time_ties_in_list_order(fleet: Fleet) -> None:
    played: list[str] = []
    steps = [
        Step(minutes("2:00"), "late", lambda _f: played.append("late")),
        Step(minutes("1:00"), "early-a", lambda _f: played.append("early-a")),
        Step(minutes("1:00"), "early-b", lambda _f: played.append("early-b")),
    ]

    outcome = ScenarioRunner(fleet, steps, speed=FAST).play(threading.Event())

    assert played == ["early-a", "early-b", "late"]
    assert (outcome.rounds, outcome.played, outcome.failed) == (1, 3, [])
    assert describe(steps).splitlines() == [
        "T+00:01:00  early-a",
        "T+00:01:00  early-b",
        "T+00:02:00  late",
    ]


def test_simulated_time_is_compressed_by_the_speed(fleet: Fleet) -> None:
    steps = [Step(minutes("0:00"), "start", call("now")), Step(minutes("1:00"), "end", call("now"))]
    runner = ScenarioRunner(fleet, steps, speed=600.0)  # a simulated minute in 0.1 s

    start = time.monotonic()
    runner.play(threading.Event())
    elapsed = time.monotonic() - start

    assert 0.09 <= elapsed < 1.0


def test_a_failing_step_is_logged_and_the_scenario_goes_on(
    fleet: Fleet, caplog: pytest.LogCaptureFixture
) -> None:
    played: list[str] = []
    steps = [
        Step(timedelta(0), "add nodes to a pool that does not exist", call("add_nodes", "nope")),
        recorder(played, "after"),
    ]

    with caplog.at_level(logging.INFO, logger="internal.fleet.scenario"):
        outcome = ScenarioRunner(fleet, steps, speed=FAST).play(threading.Event())

    assert played == ["after"]
    assert outcome.failed == ["T+00:00:00  add nodes to a pool that does not exist"]
    assert "no node pool nope" in caplog.text


def test_stop_ends_the_play_before_the_next_step(fleet: Fleet) -> None:
    played: list[str] = []
    stop = threading.Event()
    steps = [
        Step(timedelta(0), "first", lambda _f: (played.append("first"), stop.set())),
        Step(minutes("1:00"), "never", lambda _f: played.append("never")),
    ]

    outcome = ScenarioRunner(fleet, steps, speed=1.0).play(stop)

    assert played == ["first"]
    assert outcome.rounds == 0


def test_run_idles_after_the_last_step_until_stopped(fleet: Fleet) -> None:
    played: list[str] = []
    stop = threading.Event()
    runner = ScenarioRunner(fleet, [recorder(played, "only")], speed=FAST)
    thread = threading.Thread(target=runner.run, args=(stop,))
    thread.start()

    _wait_for(lambda: runner.outcome.rounds == 1)
    time.sleep(0.05)
    assert thread.is_alive()
    assert played == ["only"]
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_run_with_loop_clears_the_fleet_and_replays(
    fleet: Fleet, gke_client: ClusterManagerClient
) -> None:
    """Each round starts from an empty fleet (creating the pool again never fails). The run
    is stopped by its own last step in the third round, so where it stops does not depend on
    when this thread gets to run."""
    stop = threading.Event()
    create = call("create_pool", "v6e", "tpu-v6e-slice", "ct6e-standard-4t", "4x4")

    def stop_in_third_round(_: Fleet) -> None:
        if runner.outcome.rounds == 2:
            stop.set()

    steps = [
        Step(timedelta(0), "create", create),
        Step(minutes("0:10"), "add", call("add_nodes", "v6e", 4)),
        Step(minutes("0:11"), "stop in the third round", stop_in_third_round),
    ]
    runner = ScenarioRunner(fleet, steps, speed=FAST, loop=True)
    thread = threading.Thread(target=runner.run, args=(stop,))
    thread.start()
    thread.join(timeout=30)

    assert not thread.is_alive()
    assert runner.outcome.failed == []
    assert (runner.outcome.rounds, runner.outcome.played) == (3, 9)
    assert [p.name for p in gke_client.list_node_pools(parent=PARENT).node_pools] == ["v6e"]


def test_the_demo_plays_to_the_end_in_a_few_seconds(fleet: Fleet) -> None:
    steps = demo_scenario()

    start = time.monotonic()
    outcome = ScenarioRunner(fleet, steps, speed=FAST).play(threading.Event())

    assert time.monotonic() - start < 10
    assert outcome.failed == []
    assert (outcome.rounds, outcome.played) == (1, len(steps))
    assert len(fleet.pools) == 7  # eight created, one deleted
    assert steps[-1].at == minutes("30:00")


def test_the_demo_mixes_eight_pools_of_different_shapes() -> None:
    created = [s.name for s in demo_scenario() if ": create pool" in s.name]

    assert len(created) == 8
    shapes = {name.split("(")[1] for name in created}
    assert len(shapes) == 8
    assert any("spot" in shape for shape in shapes)
    assert {"16x16", "2x4", "4x4", "2x2x2", "2x2x4"} <= {s.split()[1] for s in shapes}


@pytest.fixture
def demo_cli(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [
            sys.executable, "-m", "internal.fleet", "--speed", "100000",
            "--kubeconfig", str(tmp_path / "kubeconfig"),
            "--megamon-config", str(tmp_path / "megamon.json"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def test_the_cli_serves_the_demo_until_sigterm(
    demo_cli: subprocess.Popen[str], tmp_path: Path
) -> None:
    lines = _read_until(demo_cli, "scenario complete")
    output = "\n".join(lines)
    gke_endpoint = re.search(r"fake GKE:\s+(\S+)", output)
    assert gke_endpoint is not None
    assert f"export KUBECONFIG={tmp_path / 'kubeconfig'}" in output
    assert "v5p-16-stuck: GKE ERROR" in output
    config = load_config(tmp_path / "megamon.json")
    assert config.GKE.Endpoint == gke_endpoint.group(1)
    assert config.SliceEnabled
    assert config.LeaderWorkerSetSupport
    assert json.loads((tmp_path / "kubeconfig").read_text())["clusters"]

    demo_cli.send_signal(signal.SIGTERM)

    assert demo_cli.wait(timeout=10) == 0
    assert demo_cli.stdout is not None
    assert "0 failed" in demo_cli.stdout.read()


def test_the_cli_lists_the_scenario() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "internal.fleet", "--list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    lines = done.stdout.splitlines()
    assert lines == describe(demo_scenario()).splitlines()
    assert lines[0].startswith("T+00:00:00  v5e-256-pretrain: create pool")


def _read_until(process: subprocess.Popen[str], marker: str, timeout: float = 30.0) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    raise AssertionError(f"{marker!r} not printed; got:\n" + "\n".join(lines))


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)
