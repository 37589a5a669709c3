"""``megamon run --config-path PATH [--log-level LEVEL]``: the service SREs deploy."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import Any

from megamon import app
from megamon.config import DEFAULT_CONFIG_PATH, load_config

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="observe the cluster, record history, serve metrics",
        description="The service: watch the cluster's TPU node pools (GKE) and workloads "
        "(Kubernetes), record every up/down transition in the history (EventsBucketName or "
        "EventsLocalDir), and serve the summaries on /metrics (MetricsAddr) with probes on "
        "ProbeAddr, until SIGTERM or SIGINT. Check a configuration first with "
        "'megamon config check'.",
        epilog="examples:\n"
        "  megamon run --config-path /etc/megamon/config.json\n"
        "  megamon run --config-path config.json --log-level debug",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config-path",
        metavar="PATH",
        default=DEFAULT_CONFIG_PATH,
        help=f"the configuration file (default: {DEFAULT_CONFIG_PATH})",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help=f"one of: {', '.join(LOG_LEVELS)} (default: info)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT, force=True)
    config = load_config(args.config_path)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    service = app.start(config)
    try:
        stop.wait()
    finally:
        logging.getLogger("megamon").info("stopping")
        service.stop()
    return 0
