"""``megamon`` entry point: parse arguments, dispatch to a subcommand, turn user errors into
one line on stderr and exit status 2 — never a traceback."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from megamon.build import build_identity
from megamon.cli import config_check, events, report, run, summarize
from megamon.errors import MegamonError

EXIT_USAGE = 2
PROG = "megamon"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Up/down history, provisioning, MTTR and MTBI of GKE TPU node pools "
        "and training workloads.",
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {build_identity().describe()}"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run.register(commands)
    summarize.register(commands)
    events.register(commands)
    report.register(commands)
    config_check.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the return value is the process exit status."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except MegamonError as err:
        command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
        print(f"{PROG} {command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return status


def entry() -> None:
    """Console-script entry: exit with ``main``'s status."""
    sys.exit(main())
