"""Renderings of a ``FleetReport`` (``megamon report --clusters …`` or several
``--events-dir``): a text table, one JSON object, or a self-contained HTML page.

The same conventions as the one-history report (``megamon.cli.report_format``): durations for
people in the table and the page, integer nanoseconds and RFC 3339 in JSON, percentages
floored to two decimals for people and exact for programs. Every resource row names its
cluster; the fleet rows (cluster ``*``) sum every cluster per kind, accelerator and topology.

The page is the one-history page's (``megamon.cli.report_html``) over every cluster: its first
screen and timelines read ``FleetReport.detail`` (the summary stage's figures of every
resource), its tables the SQL's rows.
"""

from __future__ import annotations

import html
from typing import Any

import orjson

from megamon.cli import report_format, report_html
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


def clusters_text(report: FleetReport) -> str:
    """``3 clusters``, and how many more could not be read."""
    clusters = f"{len(report.clusters)} cluster{'s' if len(report.clusters) != 1 else ''}"
    if report.unreadable:
        clusters += f" ({len(report.unreadable)} more could not be read)"
    return clusters


def window_text(report: FleetReport) -> str:
    return f"{history_window_text(report)}; {clusters_text(report)}"


def omission_lines(report: FleetReport) -> list[str]:
    """What the report leaves out, each with why: clusters that could not be read (none of
    their resources are in it) and segments that could not be read (the rest of their
    cluster is)."""
    lines = [
        f"cluster {u.cluster} could not be read, left out: {u.reason}" for u in report.unreadable
    ]
    count = len(report.skipped_segments)
    if count:
        lines.append(f"{count} segment{'s' if count != 1 else ''} could not be read, skipped:")
        lines += [f"  {s.cluster} {s.segment}: {s.reason}" for s in report.skipped_segments]
    return lines


def render_table(report: FleetReport) -> str:
    lines = [
        f"megamon fleet report: {window_text(report)}",
        AVAILABILITY_DEFINITION,
        CHIP_DEFINITION,
        *omission_lines(report),
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
    """The window, the clusters, those that could not be read, the segments skipped,
    ``resources``, ``aggregates`` (per cluster), ``fleet``."""
    return {
        "window": window_dict(report),
        "availabilityDefinition": AVAILABILITY_DEFINITION,
        "chipDefinition": CHIP_DEFINITION,
        "clusters": list(report.clusters),
        "unreadableClusters": [
            {"cluster": u.cluster, "reason": u.reason} for u in report.unreadable
        ],
        "skippedSegments": [
            {"cluster": s.cluster, "segment": s.segment, "reason": s.reason}
            for s in report.skipped_segments
        ],
        "resources": [resource_dict(r) for r in report.resources],
        "aggregates": [fleet_aggregate_dict(report, a) for a in report.cluster_aggregates],
        "fleet": [fleet_aggregate_dict(report, a) for a in report.fleet_aggregates],
    }


def render_json(report: FleetReport) -> bytes:
    return orjson.dumps(report_dict(report), option=orjson.OPT_INDENT_2) + b"\n"


# --- HTML ------------------------------------------------------------------------------------


WRAPPING = ("RESOURCE", "ACCELERATOR", "CLUSTER")
"""The page's table cells that may wrap (names from the clusters), so the tables fit 1,280 px."""
DENSE_CSS = """
#fleet th, #fleet td, #cluster-aggregates th, #cluster-aggregates td { padding: 3px 3px; }
p.omitted { color: #a02020; font-weight: 600; }
"""
"""The aggregate tables have twenty columns: narrower padding keeps them within 1,280 px; a
cluster left out is said in red, above everything else, since every figure lacks it."""


def _tables(report: FleetReport) -> str:
    """The fleet's tables, collapsed: the same rows as the text table and the JSON (the fleet
    rows without their cluster column, every cluster)."""
    columns = aggregate_columns(report)
    fleet_columns = [c for c in columns if c.header != "CLUSTER"]
    return (
        report_html.details(
            "Fleet (every cluster), by kind, accelerator and topology",
            report_html.html_table("fleet", fleet_columns, report.fleet_aggregates, WRAPPING),
            "fleet-shapes",
        )
        + report_html.details(
            "By cluster, kind, accelerator and topology",
            report_html.html_table(
                "cluster-aggregates", columns, report.cluster_aggregates, WRAPPING
            ),
            "by-cluster",
        )
        + report_html.details(
            "Resources",
            report_html.html_table("fleet-resources", RESOURCE_COLUMNS, report.resources, WRAPPING),
            "resource-table",
        )
    )


def render_html(report: FleetReport) -> str:
    """The one-history page's first screen over every cluster (``report.detail``): what the
    window cost, what is down now, the distributions, the worst resources naming their
    cluster; then one timeline per cluster and kind opening onto its resources'; then the
    tables, collapsed. Without ``detail``, the tables alone."""
    meta = [
        f"Clusters: {', '.join(report.clusters)}",
        CHIP_DEFINITION[0].upper() + CHIP_DEFINITION[1:] + ".",
    ]
    omitted = "".join(
        f'<p class="omitted">{html.escape(line)}</p>' for line in omission_lines(report)
    )
    window = f"{report_html.window_line(report)}; {clusters_text(report)}"
    detail = report.detail
    if not report.resources:
        body = "<p>No resources in the window.</p>"
    elif detail is None or not detail.resources:
        body = _tables(report)
    else:
        body = (
            report_html.first_screen(detail, report_html.FLEET_WORST_SHOWN)
            + '<h2 id="timelines">Timelines, by cluster and kind</h2>'
            + report_html.group_section(detail)
            + _tables(report)
            + report_html.chip_section(detail)
        )
    return report_html.page("megamon fleet report", window, omitted + body, meta, DENSE_CSS)


def render(report: FleetReport, fmt: str) -> bytes:
    if fmt == "json":
        return render_json(report)
    if fmt == "html":
        return render_html(report).encode()
    return render_table(report).encode()
