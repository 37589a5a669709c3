"""``megamon report``: availability, interruptions, recoveries, MTTR, MTBI and provisioning of
every resource over a window, per resource and per kind/accelerator/topology, as a text
table, one JSON object or a self-contained HTML page with timelines.

This module does the I/O: it reads the live and archived history from the store the shared
history options name, labels live resources from the latest report (live records carry no
attributes; ``reports/latest.json``, written by the ``gcs`` exporter, does), and writes the
rendering. The figures come from ``megamon.summary.availability``, which defines them.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path
from typing import Any

import orjson

from megamon.cli import fleet_render, report_format, report_html
from megamon.cli.history import (
    add_history_options,
    history_config,
    history_kinds,
    history_overrides,
    history_store,
    kinds_help,
    parse_kind,
    parse_now,
    resolve_kind,
)
from megamon.codec import report as report_codec
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.errors import ConfigError, MegamonError
from megamon.fleet.command import EXIT_INCOMPLETE, FleetRequest, is_fleet, run_fleet
from megamon.fleet.resources import Labels, read_resources
from megamon.publishing.exporters.archives import LATEST_NAME, REPORTS_DIR
from megamon.stores.base import Moved, ObjectBackend
from megamon.stores.factory import (
    Location,
    Medium,
    history_location,
    objects_at,
    reports_location,
)
from megamon.summary.availability import AvailabilityReport, Window, availability_report

log = logging.getLogger(__name__)

FORMATS = ("table", "json", "html")
_DURATION = re.compile(r"(?:(\d+)([wdhms]))+")
_DURATION_PART = re.compile(r"(\d+)([wdhms])")
_UNIT_NS = {
    "s": timestamps.NANOS_PER_SECOND,
    "m": 60 * timestamps.NANOS_PER_SECOND,
    "h": 3600 * timestamps.NANOS_PER_SECOND,
    "d": 86_400 * timestamps.NANOS_PER_SECOND,
    "w": 7 * 86_400 * timestamps.NANOS_PER_SECOND,
}
"""The report keys that are attributes (the rest of a report entry is upness or summary)."""


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report",
        help="availability, interruptions, MTTR/MTBI and provisioning over a window",
        description="Per resource and per kind/accelerator/topology, over [--since, --now]: "
        "availability = up / (up + down), expected-down and provisioning time excluded; "
        "interruptions, recoveries, MTTR, MTBI, provisioning. Live and archived history. "
        "Several --events-dir, or --clusters PATTERN, report a fleet: one row per resource "
        "with its cluster, and fleet rows per kind, accelerator and topology. Exit status: 0; "
        "2 for bad options; a fleet report exits 1 when a cluster's history could not be read "
        "(the other clusters are reported, that one is named in the report).",
        epilog="examples:\n"
        "  megamon report --config-path /etc/megamon/config.json --since 7d\n"
        "  megamon report --events-dir .demo/megamon-data --format html -o report.html\n"
        "  megamon report --bucket B --path megamon/clusters/c1 --kind nodepool --format json\n"
        "  megamon report --bucket B --clusters 'megamon/clusters/*' --since 30d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        conflict_handler="resolve",
    )
    add_history_options(parser)
    _add_fleet_options(parser)
    parser.add_argument(
        "--kind",
        metavar="KIND",
        type=parse_kind,
        action="append",
        help=f"only this kind: {kinds_help()} (repeatable; default: every kind)",
    )
    parser.add_argument(
        "--since",
        metavar="RFC3339|DURATION",
        help="start of the window: a timestamp, or a duration before --now such as 7d, 24h, "
        "1d12h (default: all history)",
    )
    parser.add_argument(
        "--now", metavar="RFC3339", help="end of the window (default: the current time)"
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help=f"one of: {', '.join(FORMATS)} (default: table)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    parser.set_defaults(run=run)


def _add_fleet_options(parser: argparse.ArgumentParser) -> None:
    """The fleet report's options; ``--events-dir`` may be given once per cluster."""
    parser.add_argument(
        "--events-dir",
        metavar="DIR",
        action="append",
        default=[],
        help="read history from this directory; several: a fleet report, one cluster each "
        "(named by the directory); once with --clusters: its subdirectories that match",
    )
    parser.add_argument(
        "--clusters",
        metavar="PATTERN",
        help="a fleet report over every history whose path matches, e.g. "
        "'megamon/clusters/*' in --bucket (fetched into --cache-dir) or in --events-dir",
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where histories fetched from --bucket, and their segments converted to Parquet, "
        "are kept between reports (default: $XDG_CACHE_HOME/megamon/fleet); with --events-dir, "
        "keeps the conversions of local histories",
    )


# --- arguments ---------------------------------------------------------------------------


def parse_duration(text: str) -> int | None:
    """Nanoseconds of ``7d``, ``24h``, ``1d12h``, ``90m``, ``2w``; ``None`` if not one."""
    if not _DURATION.fullmatch(text):
        return None
    return sum(int(n) * _UNIT_NS[unit] for n, unit in _DURATION_PART.findall(text))


def parse_since(text: str | None, now: int) -> int | None:
    """The window start: ``None`` (all history), a timestamp, or ``now`` minus a duration."""
    if text is None:
        return None
    duration = parse_duration(text)
    if duration is not None:
        since = max(timestamps.MIN_NS, now - duration)  # longer than history: all of it
    else:
        try:
            since = timestamps.parse(text)
        except timestamps.TimestampError:
            raise ConfigError(
                f"--since {text!r}: neither an RFC 3339 timestamp nor a duration like 7d, 24h"
            ) from None
    if since >= now:
        raise ConfigError(f"--since {text!r} is not before --now {timestamps.format_ns(now)}")
    return since


def selected_kinds(kinds: list[Kind] | None) -> list[Kind]:
    """The kinds asked for, once each, in the order given; every kind by default."""
    return list(dict.fromkeys(kinds)) if kinds else list(Kind)


def requested_kinds(args: argparse.Namespace) -> list[Kind]:
    """The kinds ``--kind`` names, resolved with the configuration (a described kind's
    history lives where its description says); every kind the history may hold without it.
    One history or a fleet, the same kinds."""
    if args.kind:
        return [resolve_kind(kind, args) for kind in selected_kinds(args.kind)]
    return history_kinds(args)


# --- reading -----------------------------------------------------------------------------


def _report_location(args: argparse.Namespace) -> tuple[ObjectBackend, str] | None:
    """Where the store the options name keeps ``reports/``; ``None`` for the in-memory store
    of a simulation, which keeps none."""
    overrides = history_overrides(args)
    overrides.check()
    config = history_config(args)
    if history_location(config, overrides).medium is Medium.MEMORY:
        return None
    return objects_at(reports_location(config, overrides))


def _download(backend: ObjectBackend, name: str) -> bytes | None:
    for _ in range(3):
        generation = backend.generation(name)
        if generation is None:
            return None
        try:
            return backend.download(name, generation)
        except Moved:
            continue
    return None


def read_labels(args: argparse.Namespace) -> Labels:
    """Attributes of live resources from ``reports/latest.json``; empty when there is none.

    Labels only decorate the figures, so a missing or unreadable report is not an error: the
    live resources are then reported without accelerator and topology.
    """
    location = _report_location(args)
    if location is None:
        return {}
    backend, path = location
    name = "/".join(p for p in (path.strip("/"), REPORTS_DIR, LATEST_NAME) if p)
    try:
        data = _download(backend, name)
        if data is None:
            log.info("no report at %s: live resources are unlabelled", backend.describe(name))
            return {}
        return report_codec.parse_labels(data)
    except (MegamonError, ValueError, TypeError) as err:
        where = backend.describe(name)
        log.warning("report %s unreadable (%s): live resources are unlabelled", where, err)
        return {}


# --- writing -----------------------------------------------------------------------------


def render(report: AvailabilityReport, fmt: str) -> bytes:
    if fmt == "json":
        document = report_format.report_dict(report)
        return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    if fmt == "html":
        return report_html.render_html(report).encode()
    return report_format.render_table(report).encode()


def _write(data: bytes, output: str | None) -> None:
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        Path(output).write_bytes(data)
    except OSError as err:
        raise ConfigError(f"-o {output}: {err.strerror or err}") from None


def _run_fleet(args: argparse.Namespace, window: Window, request: FleetRequest) -> int:
    """The fleet report (``megamon.fleet``): many histories, one report."""

    def bucket_objects(bucket: str) -> ObjectBackend:
        project = history_config(args).GKE.ProjectID
        return objects_at(Location(Medium.GCS, bucket=bucket, project=project))[0]

    detailed = args.format == "html"
    report = run_fleet(request, requested_kinds(args), window, bucket_objects, detailed=detailed)
    _write(fleet_render.render(report, args.format), args.output)
    return EXIT_INCOMPLETE if report.unreadable else 0


def run(args: argparse.Namespace) -> int:
    now = parse_now(args.now)
    window = Window(now=now, since=parse_since(args.since, now))
    request = FleetRequest(args.events_dir, args.clusters, args.bucket, args.cache_dir)
    if is_fleet(request):
        if args.path is not None:
            raise ConfigError("--path names one history: give --clusters PATTERN instead")
        return _run_fleet(args, window, request)
    args.events_dir = args.events_dir[0] if args.events_dir else None
    store = history_store(args)
    kinds = requested_kinds(args)
    resources = list(read_resources(store, kinds, read_labels(args), now))
    _write(render(availability_report(resources, window), args.format), args.output)
    return 0
