"""``megamon events show KIND`` and ``megamon events archive KIND [KEY]``: print the history
megamon keeps, as JSON, for an operator after an incident."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from megamon.cli.history import (
    KINDS_HELP,
    add_history_options,
    history_store,
    parse_kind,
    resolve_kind,
)
from megamon.codec import history as codec


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "events", help="print the stored event history as JSON"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    show = actions.add_parser("show", help="the live records of one kind")
    show.add_argument("kind", metavar="KIND", type=parse_kind, help=f"one of: {KINDS_HELP}")
    add_history_options(show)
    show.set_defaults(run=run_show)

    archive = actions.add_parser(
        "archive", help="the keys retired from a kind, or every retirement of one key"
    )
    archive.add_argument("kind", metavar="KIND", type=parse_kind, help=f"one of: {KINDS_HELP}")
    archive.add_argument(
        "key", metavar="KEY", nargs="?", help="a retired key (default: list the retired keys)"
    )
    add_history_options(archive)
    archive.set_defaults(run=run_archive)


def _print(document: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def run_show(args: argparse.Namespace) -> int:
    kind = resolve_kind(args.kind, args)  # a wrong kind is refused before anything is read
    snapshot = history_store(args).read(kind)
    _print(orjson.loads(codec.encode_event_file(snapshot.records)))
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
