"""``make demo``: a simulated TPU fleet, megamon watching it, and a live table of what it reports.

Starts the GKE and Kubernetes emulators in this process, plays the demo fleet on them (eight
node pools provisioning, one stuck in ERROR, one interrupted and recovering, one deleted;
JobSets running, completing, failing), runs ``megamon run`` against them with the local
event store under ``.demo/``, and redraws a compact table from ``/metrics`` every two seconds.
Ctrl-C stops all of it. No cluster, no cloud account, nothing to configure.

Each run starts a fresh history (``--keep``, ``make demo KEEP=1``, continues the previous one:
the resources that were up then are seen down while the demo was stopped, so they gain an
interruption). The scenario runs ``--speed`` times faster than real time, and the header says
so: megamon itself measures real time, so its durations are that much shorter than the
scenario's clock.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import FrameType

from internal.demo.table import KINDS, Row, Table, archived_row
from internal.fakegke import FakeGke
from internal.fakekube import FakeKube
from internal.fleet.__main__ import megamon_config
from internal.fleet.demo import CLUSTER, LOCATION, PROJECT, demo_scenario
from internal.fleet.fleet import Fleet
from internal.fleet.scenario import DEFAULT_SPEED, ScenarioRunner, Step
from internal.fleet.times import offset
from megamon.domain.kinds import Kind
from megamon.fleet.resources import read_resources
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import Window, availability_report
from megamon.summary.losses import interruptions

CLEAR = "\x1b[H\x1b[2J"


def _port(preferred: int) -> int:
    """``preferred`` if it is free on 127.0.0.1, else any free port."""
    for candidate in (preferred, 0):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise OSError("no free port on 127.0.0.1")


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path(".demo"))
    parser.add_argument(
        "--speed", type=float, default=DEFAULT_SPEED, help="simulated seconds per real second"
    )
    parser.add_argument(
        "--duration", type=float, default=0.0, help="stop after this many seconds (0: until Ctrl-C)"
    )
    parser.add_argument("--metrics-port", type=int, default=8080)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="continue the previous run's history instead of starting a fresh one",
    )
    return parser.parse_args()


def _history(args: argparse.Namespace) -> Path:
    """The demo's event directory: emptied first unless ``--keep``."""
    history = args.workdir / "megamon-data"
    if history.exists() and not args.keep:
        shutil.rmtree(history)
        print(f"starting a fresh history in {history} (make demo KEEP=1 keeps the previous one)")
    elif history.exists():
        print(f"continuing the history in {history}")
    return history


def _write_config(args: argparse.Namespace, gke: FakeGke, metrics_port: int) -> Path:
    fleet_args = argparse.Namespace(project=PROJECT, location=LOCATION, cluster=CLUSTER)
    config = megamon_config(fleet_args, gke.endpoint)
    config.update(
        {
            "MetricsAddr": f"127.0.0.1:{metrics_port}",
            "ProbeAddr": f"127.0.0.1:{_port(0)}",
            "EventsLocalDir": str(args.workdir / "megamon-data"),
            "Exporters": ["gcs"],
        }
    )
    path = args.workdir / "megamon.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def _scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def archived_rows(history: Path) -> dict[str, dict[str, Row]]:
    """Kind → name → row of every resource retired from the live history (deleted)."""
    store = LocalEventStore(history)
    found: dict[str, dict[str, Row]] = {}
    for kind in KINDS:
        for key in store.archived_keys(Kind(kind)):
            entries = store.read_archive(Kind(kind), key)
            named = archived_row(entries[-1].attrs) if entries else None
            if named is not None:
                found.setdefault(kind, {})[named[0]] = named[1]
    return found


_NAME_ATTRS = {
    "nodepool": "nodePoolName",
    "jobset": "jobsetName",
    "jobset_nodes": "jobsetName",
    "slice": "sliceName",
    "leaderworkerset": "lwsName",
}


def last_reasons(history: Path, now_ns: int) -> dict[tuple[str, str], str]:
    """(kind, name) → the reason of each resource's latest interruption, from the history
    megamon wrote, as ``megamon report`` reads it (``summary.losses``)."""
    store = LocalEventStore(history, read_only=True)
    kinds = [Kind(kind) for kind in KINDS]
    window = Window(now=now_ns)
    found: dict[tuple[str, str], str] = {}
    for figures in availability_report(read_resources(store, kinds, {}, now_ns), window).resources:
        name = figures.resource.attrs.get(_NAME_ATTRS.get(figures.resource.kind.value, ""))
        spans = interruptions(figures, window)
        if isinstance(name, str) and spans:
            found[(figures.resource.kind.value, name)] = spans[-1].reason
    return found


def _latest(history: Path) -> dict[str, object] | None:
    """The report the ``gcs`` exporter last wrote (locally: no bucket), for the statuses."""
    try:
        document = json.loads((history / "reports" / "latest.json").read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


@dataclass(frozen=True)
class Screen:
    """What every redraw shows besides the table."""

    url: str
    log_path: Path
    history: Path
    speed: float
    length: float
    """Simulated seconds of the scenario."""


def time_scale(elapsed: float, screen: Screen) -> str:
    """The scenario's clock and how it relates to the real one megamon measures."""
    simulated = min(elapsed * screen.speed, screen.length)
    clock = offset(timedelta(seconds=int(simulated)))
    done = "" if simulated < screen.length else ", finished: nothing changes any more"
    return (
        f"scenario {clock} of {offset(timedelta(seconds=int(screen.length)))}{done} — time runs "
        f"{screen.speed:g}x fast, so megamon (which measures real time) shows durations "
        f"{screen.speed:g}x shorter than the scenario's"
    )


def _show(table: Table, screen: Screen, started: float, tty: bool) -> None:
    text = _scrape(screen.url)
    elapsed = time.monotonic() - started
    head = (
        f"megamon demo — {int(elapsed)}s — metrics at {screen.url} — log {screen.log_path} — "
        f"Ctrl-C stops\n{time_scale(elapsed, screen)}"
    )
    if text and "megamon_last_report_timestamp_seconds" in text:
        reasons = last_reasons(screen.history, time.time_ns())
        body = table.render(text, _latest(screen.history), archived_rows(screen.history), reasons)
    else:
        body = "(waiting for megamon's first report…)"
    print((CLEAR if tty else "\n") + head + "\n\n" + body, flush=True)


LAST_SCRAPE = "last-scrape.prom"
"""In the work directory: ``/metrics`` as megamon served it just before it was stopped."""

SERVING_TIMEOUT = 120.0
"""Seconds megamon may take to start serving /metrics (imports on a busy machine)."""


def _serving(url: str, megamon: subprocess.Popen[bytes], stop: threading.Event) -> bool:
    """Wait until megamon serves ``/metrics``, so that it watches the fleet from the
    scenario's first step; false if megamon exits first or does not start."""
    deadline = time.monotonic() + SERVING_TIMEOUT
    while not stop.wait(0.2) and time.monotonic() < deadline:
        if megamon.poll() is not None:
            return False
        text = _scrape(url)
        if text and "megamon_build_info" in text:
            return True
    return stop.is_set()


def megamon_command() -> str:
    """How to run this venv's ``megamon`` from the current directory, as a shell word."""
    script = Path(sys.executable).with_name("megamon")
    if not script.exists():
        return f"{sys.executable} -m megamon"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def closing_hints(history: Path) -> list[str]:
    """Commands to look at what megamon recorded; each works as printed, from here."""
    megamon = megamon_command()
    return [
        f"stopped. History kept in {history} (the next `make demo` starts afresh, "
        "`make demo KEEP=1` continues it):",
        f"  {megamon} events show nodepool --events-dir {history}",
        f"  {megamon} report --events-dir {history}",
        f"  {megamon} report --events-dir {history} --format html -o {history.parent}/report.html",
    ]


def _length(steps: list[Step]) -> float:
    return max((step.at.total_seconds() for step in steps), default=0.0)


def main() -> int:
    args = _args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    history = _history(args)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    metrics_port = _port(args.metrics_port)
    with FakeGke() as gke, FakeKube() as kube:
        kubeconfig = kube.write_kubeconfig(args.workdir / "kubeconfig")
        config = _write_config(args, gke, metrics_port)
        gke.create_cluster(PROJECT, LOCATION, CLUSTER)  # before megamon polls it: no 404
        fleet = Fleet(gke, kube, PROJECT, LOCATION, CLUSTER)
        steps = demo_scenario()
        runner = ScenarioRunner(fleet, steps, speed=args.speed)
        player = threading.Thread(target=runner.run, args=(stop,), daemon=True)
        log_path = args.workdir / "megamon.log"
        with log_path.open("wb") as log:
            megamon = subprocess.Popen(
                [sys.executable, "-m", "megamon", "run", "--config-path", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            )
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        screen = Screen(url, log_path, history, args.speed, _length(steps))
        table = Table()
        try:
            print("waiting for megamon to start, then the scenario starts…", flush=True)
            if not _serving(url, megamon, stop):
                print(f"megamon exited ({megamon.returncode}); see {log_path}")
                return 1
            player.start()
            started = time.monotonic()
            while not stop.wait(2.0):
                if megamon.poll() is not None:
                    print(f"megamon exited ({megamon.returncode}); see {log_path}")
                    return 1
                _show(table, screen, started, sys.stdout.isatty())
                if args.duration and time.monotonic() - started > args.duration:
                    break
        finally:
            stop.set()
            last = _scrape(url)  # what megamon published last, beside the history it wrote
            if last is not None:
                (args.workdir / LAST_SCRAPE).write_text(last)
            megamon.send_signal(signal.SIGTERM)
            megamon.wait(timeout=30)
            if player.is_alive():
                player.join(timeout=10)
    print("\n" + "\n".join(closing_hints(history)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
