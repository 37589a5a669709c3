"""``megamon config check --config-path PATH``: is this configuration one ``megamon run``
would start with, and what would it do?

An SRE changing a ConfigMap should not learn of a typo from a crash-looping pod. The check
reads the file as ``megamon run`` reads it and lists every problem at once, one line each,
naming the file and the key (exit 2); a valid file is answered with what would run: the kinds,
where node pools come from, where history goes, what is served and exported (exit 0). It
contacts nothing: no cluster, no bucket, no metadata server.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from megamon import app
from megamon.config import DEFAULT_CONFIG_PATH, Config, check_config
from megamon.domain.kinds import Kind
from megamon.serving.http import parse_addr
from megamon.stores.factory import Medium, history_location

EXIT_INVALID = 2
PROG = "megamon config check"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "config",
        help="check a configuration file without starting megamon",
        description="Work with megamon's configuration file (the Go megamon's config.json).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="list every problem of a configuration, or say what it would run",
        description="Read the configuration as 'megamon run' does and print every problem, "
        "one line each (exit 2), or a summary of what megamon would run with it (exit 0). "
        "Contacts no cluster, bucket or metadata server.",
        epilog="examples:\n"
        "  megamon config check --config-path /etc/megamon/config.json\n"
        "  kubectl -n megamon-system get configmap megamon-config "
        "-o jsonpath='{.data.config\\.json}' > c.json && megamon config check --config-path c.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "--config-path",
        metavar="PATH",
        default=DEFAULT_CONFIG_PATH,
        help=f"the configuration file (default: {DEFAULT_CONFIG_PATH})",
    )
    check.set_defaults(run=run_check)


def problems_of(config: Config) -> list[str]:
    """What ``megamon run`` refuses at start beyond the file's own checks: the addresses."""
    found = []
    for key in app.LISTEN_KEYS:
        try:
            parse_addr(getattr(config, key))
        except ValueError as err:
            found.append(f"{key}: {err}")
    return found


def summary_lines(config: Config) -> list[str]:
    """What ``megamon run`` would do with ``config``, one line per part."""
    kinds = app.enabled_kinds(config)
    builtin = [kind.value for kind in Kind if kind in kinds]
    described = sorted(kind.value for kind in kinds if not kind.builtin)
    kind_text = ", ".join(builtin) + (f"; described: {', '.join(described)}" if described else "")
    if config.EnableSimulation:
        pools = "inferred from the nodes (EnableSimulation; no GKE API)"
    else:
        ref = config.GKE.cluster_ref()
        gke = config.GKE
        named = all((gke.ProjectID, gke.ClusterLocation, gke.ClusterName))
        missing = "" if named else " (missing parts from the metadata server)"
        pools = f"GKE ListNodePools of {ref}{missing}, every {config.polling_interval_seconds} s"
    history = history_location(config)
    kept = {
        Medium.MEMORY: "in memory (EnableSimulation): nothing survives a restart",
        Medium.LOCAL: f"the local directory {history.describe()}",
        Medium.GCS: f"{history.describe()} (GCS)",
    }[history.medium]
    scheme = "https, bearer tokens the Kubernetes API authorises" if config.MetricsTLS else "http"
    leadership = (
        "a Lease decides (EnableLeaderElection)"
        if config.EnableLeaderElection
        else "this replica alone"
    )
    return [
        f"kinds:       {kind_text}",
        f"node pools:  {pools}",
        f"history:     {kept}, snapshots every {config.SnapshotIntervalSeconds} s",
        f"cycle:       every {config.AggregationIntervalSeconds} s",
        f"metrics:     {config.MetricsAddr} /metrics ({scheme}), prefix {config.metric_prefix}_",
        f"probes:      {config.ProbeAddr} /healthz /readyz",
        f"exporters:   {', '.join(config.Exporters) or 'none'}",
        f"leadership:  {leadership}",
    ]


def run_check(args: argparse.Namespace) -> int:
    path = Path(args.config_path)
    try:
        data = path.read_bytes()
    except OSError as err:
        print(f"{PROG}: {path}: cannot read the configuration: {err.strerror}", file=sys.stderr)
        return EXIT_INVALID
    config, problems = check_config(data, str(path))
    if config is not None:
        problems = [f"{path}: {problem}" for problem in problems_of(config)]
    if problems:
        for problem in problems:
            print(f"{PROG}: {problem}", file=sys.stderr)
        noun = "problem" if len(problems) == 1 else "problems"
        print(f"{PROG}: {len(problems)} {noun}: megamon run would refuse {path}", file=sys.stderr)
        return EXIT_INVALID
    assert config is not None
    print(f"{path}: valid; megamon run would start with:")
    for line in summary_lines(config):
        print(f"  {line}")
    return 0
