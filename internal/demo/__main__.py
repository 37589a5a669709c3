"""``make demo``: a simulated TPU fleet, megamon watching it, and a live table of what it reports.

Starts the GKE and Kubernetes emulators in this process, plays the demo fleet on them (eight
node pools provisioning, one stuck in ERROR, one interrupted and recovering, one deleted;
JobSets running, completing, failing), runs ``megamon run`` against them with the local
event store under ``.demo/``, and redraws a compact table from ``/metrics`` every two seconds.
Ctrl-C stops all of it. No cluster, no cloud account, nothing to configure.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType

from internal.demo.table import render
from internal.fakegke import FakeGke
from internal.fakekube import FakeKube
from internal.fleet.__main__ import megamon_config
from internal.fleet.demo import demo_scenario
from internal.fleet.fleet import Fleet
from internal.fleet.scenario import DEFAULT_SPEED, ScenarioRunner

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
    return parser.parse_args()


def _write_config(args: argparse.Namespace, gke: FakeGke, metrics_port: int) -> Path:
    fleet_args = argparse.Namespace(
        project="megamon-demo", location="us-east5", cluster="tpu-fleet"
    )
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


def _show(url: str, started: float, tty: bool, log_path: Path) -> None:
    text = _scrape(url)
    elapsed = int(time.monotonic() - started)
    head = f"megamon demo — {elapsed}s — metrics at {url} — log {log_path} — Ctrl-C stops"
    body = render(text) if text else "(waiting for megamon's first report…)"
    print((CLEAR if tty else "\n") + head + "\n\n" + body, flush=True)


def main() -> int:
    args = _args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    metrics_port = _port(args.metrics_port)
    with FakeGke() as gke, FakeKube() as kube:
        kubeconfig = kube.write_kubeconfig(args.workdir / "kubeconfig")
        config = _write_config(args, gke, metrics_port)
        fleet = Fleet(gke, kube, "megamon-demo", "us-east5", "tpu-fleet")
        runner = ScenarioRunner(fleet, demo_scenario(), speed=args.speed)
        player = threading.Thread(target=runner.run, args=(stop,), daemon=True)
        player.start()
        log_path = args.workdir / "megamon.log"
        with log_path.open("wb") as log:
            megamon = subprocess.Popen(
                [sys.executable, "-m", "megamon", "run", "--config-path", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            )
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        started = time.monotonic()
        try:
            while not stop.wait(2.0):
                if megamon.poll() is not None:
                    print(f"megamon exited ({megamon.returncode}); see {log_path}")
                    return 1
                _show(url, started, sys.stdout.isatty(), log_path)
                if args.duration and time.monotonic() - started > args.duration:
                    break
        finally:
            stop.set()
            megamon.send_signal(signal.SIGTERM)
            megamon.wait(timeout=30)
            player.join(timeout=10)
    print(f"\nstopped. History kept in {args.workdir / 'megamon-data'}:")
    print(f"  megamon events show nodepool --events-dir {args.workdir / 'megamon-data'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
