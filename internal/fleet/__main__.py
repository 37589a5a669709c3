"""Play the demo fleet until Ctrl-C: ``python -m internal.fleet [--gke-port N] [--kube-port M]``.

Why: ``make demo`` needs a cluster that changes over time for megamon to watch. This command
starts the fake GKE and the fake Kubernetes API *in this process* — the fleet steers them
through their Python APIs, which a separately started emulator does not offer, so it never
attaches to running ones. ``--gke-port`` and ``--kube-port`` choose where they listen (0, the
default, picks free ports). It writes a kubeconfig for the Kubernetes API and, on request, a
megamon config pointing at both, prints the endpoints, then plays the demo scenario (one
simulated minute per second by default) and idles — or replays with ``--loop`` — until Ctrl-C
or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from internal.fakegke import FakeGke
from internal.fakekube import FakeKube
from internal.fleet.demo import demo_scenario
from internal.fleet.fleet import Fleet
from internal.fleet.scenario import DEFAULT_SPEED, ScenarioRunner, describe

_LOG = logging.getLogger("internal.fleet")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m internal.fleet",
        description="Start fake GKE and Kubernetes APIs and play the demo TPU fleet on them.",
    )
    parser.add_argument("--gke-port", type=int, default=0, help="fake GKE port (0: any free)")
    parser.add_argument("--kube-port", type=int, default=0, help="fake Kubernetes port (0: any)")
    parser.add_argument(
        "--speed",
        type=float,
        default=DEFAULT_SPEED,
        help="simulated seconds per real second (default 60: a simulated minute per second)",
    )
    parser.add_argument("--loop", action="store_true", help="replay the scenario when it ends")
    parser.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig")
    parser.add_argument("--megamon-config", type=Path, help="write a megamon config here")
    parser.add_argument("--project", default="megamon-demo")
    parser.add_argument("--location", default="us-east5")
    parser.add_argument("--cluster", default="tpu-fleet")
    parser.add_argument(
        "--realistic-nodes", action="store_true", help="full-size (~9 KB) node objects"
    )
    parser.add_argument("--list", action="store_true", help="print the scenario and exit")
    args = parser.parse_args(argv)
    if args.speed <= 0:
        parser.error("--speed must be positive")
    return args


def megamon_config(args: argparse.Namespace, gke_endpoint: str) -> dict[str, object]:
    """A megamon config that watches the fake cluster with every workload kind enabled."""
    return {
        "GKE": {
            "ProjectID": args.project,
            "ClusterLocation": args.location,
            "ClusterName": args.cluster,
            "Endpoint": gke_endpoint,
            "ComputeEndpoint": gke_endpoint,
        },
        "AggregationIntervalSeconds": 1,
        "SliceEnabled": True,
        "LeaderWorkerSetSupport": True,
    }


def _announce(args: argparse.Namespace, gke: FakeGke, kube: FakeKube) -> None:
    kubeconfig = args.kubeconfig or Path(tempfile.mkdtemp(prefix="megamon-fleet-")) / "kubeconfig"
    kube.write_kubeconfig(kubeconfig)
    print(f"fake GKE:        {gke.endpoint}", flush=True)
    print(f"fake Kubernetes: {kube.endpoint}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)
    if args.megamon_config:
        args.megamon_config.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(megamon_config(args, gke.endpoint), indent=2)
        args.megamon_config.write_text(text + "\n")
        print(f"megamon config:  {args.megamon_config}", flush=True)


def _stop_on_signals(stop: threading.Event) -> None:
    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(describe(demo_scenario()))
        return 0
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stdout
    )
    stop = threading.Event()
    _stop_on_signals(stop)
    with FakeGke(port=args.gke_port) as gke, FakeKube(port=args.kube_port) as kube:
        _announce(args, gke, kube)
        fleet = Fleet(
            gke,
            kube,
            args.project,
            args.location,
            args.cluster,
            realistic_nodes=args.realistic_nodes,
        )
        runner = ScenarioRunner(fleet, demo_scenario(), speed=args.speed, loop=args.loop)
        outcome = runner.run(stop)
    print(f"fleet stopped: {outcome.played} steps played, {len(outcome.failed)} failed")
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
