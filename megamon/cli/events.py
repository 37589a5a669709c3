"""``megamon events show KIND``, ``megamon events archive KIND [KEY]``: print the history
megamon keeps (snapshot + log), as JSON, for an operator after an incident;
``megamon events compact``: write the snapshots now (docs/history.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from megamon.cli.history import (
    add_history_options,
    history_kinds,
    history_store,
    kinds_help,
    parse_kind,
    parse_now,
    resolve_kind,
)
from megamon.codec import history as codec
from megamon.errors import ConfigError
from megamon.recording.eventlog import EventLog
from megamon.recording.loading import load_kind


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "events",
        help="print the stored event history as JSON",
        description="Read the history megamon keeps (snapshot + log, archives) as JSON, for "
        "an operator after an incident, or write its snapshots now.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    show = actions.add_parser(
        "show",
        help="the live records of one kind",
        description="Print the live records of KIND (its snapshot and the log after it), in "
        "the Go megamon's event-file format: key → events.",
        epilog="examples:\n"
        "  megamon events show nodepool --events-dir .demo/megamon-data\n"
        "  megamon events show jobset --bucket B --path megamon/clusters/c1\n"
        "  megamon events show trainjob --config-path config.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument("kind", metavar="KIND", type=parse_kind, help=kinds_help())
    add_history_options(show)
    show.set_defaults(run=run_show)

    compact = actions.add_parser(
        "compact",
        help="fold the log into the Go-format event files now (refused while megamon runs)",
        description="Take the writer lease, fold every kind's log into its Go-format event "
        "file (the snapshot) and release the lease. Refused while a megamon writes the "
        "history. Run it before a Go megamon reads a history after megamon crashed.",
        epilog="examples:\n"
        "  megamon events compact --events-dir ./megamon-data\n"
        "  megamon events compact --bucket B --path megamon/clusters/c1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_history_options(compact)
    compact.set_defaults(run=run_compact)

    archive = actions.add_parser(
        "archive",
        help="the keys retired from a kind, or every retirement of one key",
        description="Without KEY: the keys of KIND that were retired (deleted, or no longer "
        "observed). With KEY: every retired lifetime of that key, with its events and last "
        "attributes.",
        epilog="examples:\n"
        "  megamon events archive nodepool --events-dir .demo/megamon-data\n"
        "  megamon events archive nodepool v6e-64-eval --events-dir .demo/megamon-data",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    archive.add_argument("kind", metavar="KIND", type=parse_kind, help=kinds_help())
    archive.add_argument(
        "key", metavar="KEY", nargs="?", help="a retired key (default: list the retired keys)"
    )
    add_history_options(archive)
    archive.set_defaults(run=run_archive)


def _print(document: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def run_show(args: argparse.Namespace) -> int:
    kind = resolve_kind(args.kind, args)  # a wrong kind is refused before anything is read
    loaded = load_kind(history_store(args), kind, parse_now(None))
    _print(orjson.loads(codec.encode_event_file(loaded.history.records)))
    return 0


def run_compact(args: argparse.Namespace) -> int:
    """Take the writer lease, read every kind, write each snapshot that is behind the log."""
    store = history_store(args, writable=True)
    log = EventLog(store, [])
    if not log.load(history_kinds(args)):
        raise ConfigError(
            f"the history in {store.describe()} is being written by another process "
            "(its writer lease is held); it snapshots by itself"
        )
    try:
        written = log.compact()
    finally:
        log.close()
    _print({"compacted": [kind.value for kind in written]})
    return 0


def run_archive(args: argparse.Namespace) -> int:
    kind = resolve_kind(args.kind, args)
    store = history_store(args)
    if args.key is None:
        _print(store.archived_keys(kind))
    else:
        entries = store.read_archive(kind, args.key)
        _print([orjson.loads(codec.encode_archive_entry(e)) for e in entries])
    return 0
