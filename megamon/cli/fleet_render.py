"""Renderings of a ``FleetReport`` (``megamon report --clusters …`` or several
``--events-dir``): a text table, one JSON object, or a self-contained HTML page.

The same conventions as the one-history report (``megamon.cli.report_format``): durations for
people in the table and the page, integer nanoseconds and RFC 3339 in JSON, percentages
floored to two decimals for people and exact for programs. Every resource row names its
cluster; the fleet rows (cluster ``*``) sum every cluster per kind, accelerator and topology.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import orjson

from megamon.cli import report_format
from megamon.cli.report_format import (
    AVAILABILITY_DEFINITION,
    Column,
    aggregate_dict,
    percent_text,
    text_table,
    window_dict,
)
from megamon.cli.report_format import window_text as history_window_text
from megamon.domain import timestamps
from megamon.fleet.model import FleetReport
from megamon.summary.availability import Aggregate, ResourceAvailability
from megamon.summary.chips import chips_of

NANOS_PER_HOUR = 3600 * timestamps.NANOS_PER_SECOND
CHIP_DEFINITION = (
    "chip-weighted: each resource's time times its TPU chips (resources without a chip "
    "count are left out of CHIP-* columns)"
)


def chip_hours(chip_ns: int) -> str:
    return f"{chip_ns / NANOS_PER_HOUR:,.1f}"


RESOURCE_COLUMNS: tuple[Column[ResourceAvailability], ...] = (
    Column("CLUSTER", lambda f: f.resource.cluster),
    *report_format.RESOURCE_COLUMNS,
)
"""The one-history report's resource columns (``megamon.cli.report_format``), after the
cluster."""


def aggregate_columns(report: FleetReport) -> tuple[Column[Aggregate], ...]:
    """The one-history report's aggregate columns between the cluster and the report's
    chip-weighted figures."""
    return (
        Column("CLUSTER", lambda a: a.cluster),
        *report_format.AGGREGATE_COLUMNS,
        Column("CHIPS", lambda a: str(report.chip_time(a).chips), right=True),
        Column("CHIP-AVAIL", lambda a: percent_text(report.chip_time(a).availability), right=True),
        Column("CHIP-H-DOWN", lambda a: chip_hours(report.chip_time(a).down), right=True),
    )


def window_text(report: FleetReport) -> str:
    clusters = f"{len(report.clusters)} cluster{'s' if len(report.clusters) != 1 else ''}"
    return f"{history_window_text(report)}; {clusters}"


def render_table(report: FleetReport) -> str:
    lines = [
        f"megamon fleet report: {window_text(report)}",
        AVAILABILITY_DEFINITION,
        CHIP_DEFINITION,
        "",
    ]
    if not report.resources:
        lines.append("no resources in the window")
        return "\n".join(lines) + "\n"
    columns = aggregate_columns(report)
    lines += text_table(RESOURCE_COLUMNS, report.resources)
    lines += ["", "By cluster, kind, accelerator and topology:"]
    lines += text_table(columns, report.cluster_aggregates)
    lines += ["", "Fleet (every cluster), by kind, accelerator and topology:"]
    lines += text_table(columns, report.fleet_aggregates)
    return "\n".join(lines) + "\n"


# --- JSON ------------------------------------------------------------------------------------


def resource_dict(figures: ResourceAvailability) -> dict[str, Any]:
    """The one-history report's resource object with the cluster and the chips (``null``
    without a chip count); not the attributes, which the SQL reduces to those figures."""
    document = report_format.resource_dict(figures)
    del document["attrs"]
    return {
        "cluster": figures.resource.cluster,
        **document,
        "chips": chips_of(figures) or None,
    }


def fleet_aggregate_dict(report: FleetReport, aggregate: Aggregate) -> dict[str, Any]:
    """The one-history report's aggregate object with the cluster and the chip-weighted
    figures."""
    chips = report.chip_time(aggregate)
    return {
        "cluster": aggregate.cluster,
        **aggregate_dict(aggregate),
        "chips": chips.chips,
        "chipUpTime": chips.up,
        "chipDownTime": chips.down,
        "chipFailedTime": chips.failed,
        "chipAvailabilityPercent": chips.availability,
    }


def report_dict(report: FleetReport) -> dict[str, Any]:
    """The window, the clusters, ``resources``, ``aggregates`` (per cluster), ``fleet``."""
    return {
        "window": window_dict(report),
        "availabilityDefinition": AVAILABILITY_DEFINITION,
        "chipDefinition": CHIP_DEFINITION,
        "clusters": list(report.clusters),
        "resources": [resource_dict(r) for r in report.resources],
        "aggregates": [fleet_aggregate_dict(report, a) for a in report.cluster_aggregates],
        "fleet": [fleet_aggregate_dict(report, a) for a in report.fleet_aggregates],
    }


def render_json(report: FleetReport) -> bytes:
    return orjson.dumps(report_dict(report), option=orjson.OPT_INDENT_2) + b"\n"


# --- HTML ------------------------------------------------------------------------------------

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#212529}
table{border-collapse:collapse;margin:8px 0 24px}
th,td{padding:3px 8px;border-bottom:1px solid #dee2e6;white-space:nowrap}
th{background:#f1f3f5;text-align:left}td.r{text-align:right}
tr.fleet td{font-weight:600;background:#f8f9fa}
"""


def _html_table(columns: Sequence[Column[Any]], rows: Sequence[Any], css: str = "") -> str:
    head = "".join(f"<th>{html.escape(c.header)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = "".join(
            f"<td{' class=r' if c.right else ''}>{html.escape(c.cell(row))}</td>" for c in columns
        )
        body.append(f"<tr{f' class={css}' if css else ''}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_html(report: FleetReport) -> str:
    """One page, no script and no URL: the fleet rows, the per-cluster rows, the resources."""
    parts = [
        "<!doctype html><html><head><meta charset=utf-8>",
        "<title>megamon fleet report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>megamon fleet report</h1>",
        f"<p>{html.escape(window_text(report))}</p>",
        f"<p>{html.escape(AVAILABILITY_DEFINITION)}; {html.escape(CHIP_DEFINITION)}</p>",
        f"<p>Clusters: {html.escape(', '.join(report.clusters))}</p>",
    ]
    if not report.resources:
        parts.append("<p>No resources in the window.</p>")
    else:
        columns = aggregate_columns(report)
        parts += [
            "<h2>Fleet, by kind, accelerator and topology</h2>",
            _html_table(columns, report.fleet_aggregates, "fleet"),
            "<h2>By cluster</h2>",
            _html_table(columns, report.cluster_aggregates),
            "<h2>Resources</h2>",
            _html_table(RESOURCE_COLUMNS, report.resources),
        ]
    parts.append("</body></html>\n")
    return "".join(parts)


def render(report: FleetReport, fmt: str) -> bytes:
    if fmt == "json":
        return render_json(report)
    if fmt == "html":
        return render_html(report).encode()
    return render_table(report).encode()
