"""``megamon summarize FILE [--now RFC3339]``: read an event file after an incident and print
every key's summary, exactly as the running service would compute it at that ``now``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from megamon.cli.history import parse_now
from megamon.codec import history as codec
from megamon.codec import report as report_codec
from megamon.errors import EventFileError
from megamon.summary.summarizing import anomalies, summarize_all

log = logging.getLogger(__name__)


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "summarize",
        help="summarize an event file (durations in integer nanoseconds)",
        description="Print one JSON object: key → summary, with the Go megamon's keys and "
        "durations in integer nanoseconds.",
        epilog="examples:\n"
        "  megamon summarize megamon-data/node-pools.json\n"
        "  megamon summarize jobsets.json --now 2026-06-01T00:00:00Z",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file",
        metavar="FILE",
        help="an event file in the durable format (node-pools.json, jobsets.json, …; "
        "not an archive entry of archive/)",
    )
    parser.add_argument(
        "--now",
        metavar="RFC3339",
        help="the moment to summarize at (default: the current time)",
    )
    parser.set_defaults(run=run)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise EventFileError(path, f"cannot read: {err.strerror or err}") from None


def archive_hint(data: bytes, path: str) -> str | None:
    """What to run instead when ``data`` is an archive entry (one retired resource), not an
    event file; ``None`` when it is not one."""
    try:
        entry = codec.decode_archive_entry(data, path)
    except EventFileError:
        return None
    return (
        f"an archive entry (the retired {entry.kind} {entry.key!r}), not an event file: "
        f"`megamon events archive {entry.kind} {entry.key}` prints every retirement of it, "
        f"`megamon report --kind {entry.kind}` summarizes live and archived history"
    )


def run(args: argparse.Namespace) -> int:
    now = parse_now(args.now)
    data = _read(args.file)
    try:
        records = codec.decode_event_file(data, args.file)
    except EventFileError:
        hint = archive_hint(data, args.file)
        if hint is None:
            raise
        raise EventFileError(args.file, hint) from None
    for key, record in records.items():
        for problem in anomalies(record):
            log.warning('%s: key "%s": %s', args.file, key, problem)
    sys.stdout.buffer.write(report_codec.encode_summaries(summarize_all(records, now), indent=True))
    sys.stdout.buffer.write(b"\n")
    return 0
