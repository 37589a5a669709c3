"""``megamon report --format html``: one self-contained page — inline CSS and inline SVG, no
script, no font, no image, no URL — so it can be mailed, attached to an incident or opened
from a bucket without reaching any network.

The page holds the window and the availability definition, the first screen (what the
window cost and why, down now, the distributions, the worst resources), one row per resource
with its figures and a timeline — an SVG of the window with a band per state (colours in
``STATE_COLOURS``) and a shared time axis in UTC — and the tables. Every resource string comes
from the cluster or the history files, so everything is escaped.

The fleet page (``megamon.cli.fleet_render``) is built of the same pieces (``page``,
``first_screen``, ``html_table``, ``details``, the timelines), with one row per cluster and
kind (``group_section``) in place of the resources' table: a CSS grid whose rows are HTML
``<details>``, so a group opens onto its resources' rows without a script.

The page reads at 1,280 px without a horizontal scroll bar (``test_report_html`` measures it in
Chromium): headers and resource names wrap, and timelines stretch to the width the table
leaves them (at least ``MIN_TIMELINE_PX``): they are drawn in ``TIMELINE_UNITS`` user units and
scaled, strokes excepted. Every time on the page is to the second (the JSON format keeps the
nanoseconds), and axis labels carry the date only when the window spans several UTC days.

The page must stay small whatever the history holds: the resource's span is one rectangle in
the up colour with only the other bands drawn over it; past ``TIMELINE_UNITS`` such bands a
timeline is drawn column by column, each column showing the worst state seen in it (failed
over down over the rest); and only timelines of at most ``MAX_TITLED_BANDS`` bands get a
tooltip per band. A short outage is widened to one unit so it never disappears between two up
bands. Tick labels are HTML placed by percentage, so the scaling never distorts them.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from string import Template
from typing import TypeVar

from megamon.cli.report_format import (
    AGGREGATE_COLUMNS,
    AVAILABILITY_DEFINITION,
    CHIP_COLUMNS,
    FIGURE_COLUMNS,
    NONE_TEXT,
    Column,
    Figures,
    Windowed,
    chip_hours,
    down_now_line,
    duration_text,
    percent_text,
    provisioning_text,
    reason_counts_text,
    restart_timed_by,
    scheduled_line,
    state_text,
)
from megamon.domain import interruptions as reasons
from megamon.domain import timestamps
from megamon.domain.summaries import ProvisioningState
from megamon.summary.availability import (
    AvailabilityReport,
    Band,
    BandState,
    ResourceAvailability,
)
from megamon.summary.chips import chip_figures, down_now
from megamon.summary.groups import STATE_SEVERITY, GroupBand, GroupTimeline, group_timelines
from megamon.summary.losses import (
    Distribution,
    Interruption,
    Worst,
    accelerator_rollup,
    distribution,
    interruptions,
    kind_losses,
    provisioning_times,
    recovery_times,
    worst_resources,
)
from megamon.summary.maintenance import maintenance_scheduled

T = TypeVar("T")

TIMELINE_UNITS = 500
"""Width of a timeline in SVG user units: its drawing resolution."""
MIN_TIMELINE_PX = 280
"""The narrowest a timeline is laid out: a label that would touch its neighbour at this width
is left out (its tick stays)."""
TICK_LAYOUT_PX = 560
"""The width ticks are spaced for: about what a timeline gets at 1,280 px."""
NARROW_WINDOW_PX = 1199
"""Below 1,200 px a timeline may get less than ``TICK_LAYOUT_PX``: every second label hides."""
BAND_HEIGHT = 16
AXIS_HEIGHT = 30
LABEL_CHAR_PX = 6.5
"""Estimated width of one character of an axis label (11px sans-serif digits)."""
LABEL_GAP_PX = 20.0
MIN_VISIBLE_UNITS = 1.0
"""A band narrower than this is widened so that a short outage stays visible."""
MAX_TITLED_BANDS = 60
"""Bands get a tooltip (state, length, times) only in a timeline with no more than this:
beyond it, tooltips would make the page many times larger and nobody hovers them all."""

WORST_SHOWN = 10
"""How many of the worst resources the first screen names (the fleet page: fewer, so its
timelines of each cluster start on the first screen)."""
FLEET_WORST_SHOWN = 5


STATE_COLOURS: dict[BandState, str] = {
    BandState.UP: "#2f9e44",
    BandState.DOWN: "#f08c00",
    BandState.FAILED: "#c92a2a",
    BandState.EXPECTED_DOWN: "#adb5bd",
    BandState.PROVISIONING: "#74c0fc",
    BandState.UNOBSERVED: "#e9ecef",
}
NO_DATA_COLOUR = "#f1f3f5"
STATE_LABELS: dict[BandState, str] = {
    BandState.UP: "up",
    BandState.DOWN: "down",
    BandState.FAILED: "failed",
    BandState.EXPECTED_DOWN: "expected down (excluded)",
    BandState.PROVISIONING: "provisioning (excluded)",
    BandState.UNOBSERVED: "megamon not running (excluded)",
}
_S = timestamps.NANOS_PER_SECOND
_M = 60 * _S
_H = 60 * _M
_D = 24 * _H
TICK_STEPS = (
    *(n * _S for n in (1, 5, 15, 30)),
    *(n * _M for n in (1, 5, 15, 30)),
    *(n * _H for n in (1, 2, 3, 6, 12)),
    *(n * _D for n in (1, 2, 7, 14, 30, 90, 365)),
)

_CSS = Template("""
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #212529;
       margin: 16px; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
p.meta { margin: 2px 0; color: #495057; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 5px; border-bottom: 1px solid #e9ecef; text-align: left;
         white-space: nowrap; vertical-align: middle; }
th { font-weight: 600; background: #f8f9fa; position: sticky; top: 0; white-space: normal;
     vertical-align: bottom; }
td.name { white-space: normal; overflow-wrap: anywhere; min-width: 13em; max-width: 20em; }
td.wrap { white-space: normal; overflow-wrap: anywhere; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table#resources { width: 100%; }
td.timeline, th.timeline { padding: 0 8px; width: 100%; min-width: ${min_timeline}px; }
.axis { position: relative; height: ${axis_height}px; font-weight: 400; font-size: 11px;
        color: #495057; }
.axis span { position: absolute; top: 2px; transform: translateX(-50%); white-space: nowrap; }
.axis span.first { transform: none; }
.axis span.last { transform: translateX(-100%); }
.axis svg { position: absolute; left: 0; bottom: 0; }
.sub { color: #868e96; font-size: 12px; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -1px;
          margin-right: 4px; border-radius: 2px; }
svg { display: block; }
td.big { font-size: 18px; font-weight: 600; }
table#headline td, table#headline th { white-space: normal; vertical-align: top; }
svg.lossbar { margin-top: 3px; }
#distributions { display: flex; gap: 32px; flex-wrap: wrap; }
figure.dist { margin: 8px 0; }
figure.dist figcaption { font-size: 13px; font-weight: 600; }
svg.dist text { font-size: 10px; fill: #495057; }
details > summary { cursor: pointer; }
.rows { font-size: 13px; }
.row { display: grid; column-gap: 6px; align-items: center; padding: 3px 0;
       border-bottom: 1px solid #e9ecef;
       grid-template-columns: minmax(9em, 15em) 7em repeat(6, 4.3em) 8em
                              minmax(${min_timeline}px, 1fr); }
.row > .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.row > span.name { white-space: normal; overflow-wrap: anywhere; }
.row > span.timeline { min-width: 0; padding: 0 8px; }
.row .sub { display: block; }
.row.head { font-weight: 600; background: #f8f9fa; align-items: end; }
details.group > summary.row { list-style: none; background: #f8f9fa; }
details.group > summary::-webkit-details-marker { display: none; }
details.group > summary .name b::before { content: "▸ "; }
details.group[open] > summary .name b::before { content: "▾ "; }
details.group > .row.resource > .name { padding-left: 1.2em; }
details > summary h2 { display: inline; }
@media print { details { display: block; } }
@media (max-width: ${narrow}px) { .axis span.minor { display: none; } }
""").substitute(min_timeline=MIN_TIMELINE_PX, axis_height=AXIS_HEIGHT, narrow=NARROW_WINDOW_PX)

_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>$css</style>
</head>
<body>
<h1>$heading</h1>
<p class="meta" id="window">$window</p>
$meta
<p class="meta" id="definition">$definition</p>
<p class="meta legend">$legend</p>
$body
</body>
</html>
""")


def _e(text: str) -> str:
    return html.escape(text, quote=True)


@dataclass(frozen=True, slots=True)
class Scale:
    """Maps nanoseconds of the window onto ``[0, width]`` user units."""

    start: int
    end: int
    width: float = TIMELINE_UNITS

    def x(self, ns: int) -> float:
        span = max(1, self.end - self.start)
        return (min(max(ns, self.start), self.end) - self.start) * self.width / span


# --- timelines ---------------------------------------------------------------------------


def _rect(x0: float, x1: float, colour: str, title: str | None = None) -> str:
    geometry = f'x="{x0:.1f}" width="{x1 - x0:.1f}" height="{BAND_HEIGHT}" fill="{colour}"'
    if title is None:
        return f"<rect {geometry}/>"
    return f"<rect {geometry}><title>{_e(title)}</title></rect>"


def seconds_text(ns: int) -> str:
    """An instant in RFC 3339 UTC to the second: nanoseconds help no reader of a page."""
    return timestamps.format_ns(ns - ns % _S)


def window_line(report: Windowed) -> str:
    """The report's window, to the second (the text format's ``window_text`` otherwise)."""
    since = "" if report.window.since is not None else " (all history)"
    length = duration_text(report.window.now - report.start)
    start, end = seconds_text(report.start), seconds_text(report.window.now)
    return f"window {start} .. {end}, {length}{since}"


def _timing(interruption: Interruption, found: Sequence[Interruption], timed: str) -> str:
    """``, timed by condition`` on the latest restart of a JobSet whose history says how it
    was timed (``restartTimedBy``), else ``""``."""
    restarts = [i for i in found if i.reason == reasons.RESTART]
    if timed and restarts and restarts[-1] is interruption:
        return f", timed by {timed}"
    return ""


def _cause_of(band: Band, found: Sequence[Interruption], timed: str = "") -> str:
    """``: maintenance (detail)`` for a down band inside an interruption, else ``""``; the
    latest restart says how it was timed (``timed``)."""
    if band.state not in (BandState.DOWN, BandState.FAILED):
        return ""
    for interruption in found:
        if interruption.start <= band.start and (
            interruption.end is None or band.start < interruption.end
        ):
            detail = f" ({interruption.detail})" if interruption.detail else ""
            timing = _timing(interruption, found, timed)
            return f", {interruption.reason}{detail}{timing}"
    return ""


def _band_title(band: Band, found: Sequence[Interruption] = (), timed: str = "") -> str:
    start, end = seconds_text(band.start), seconds_text(band.end)
    length = duration_text(band.end - band.start)
    return f"{band.state.value} {length}{_cause_of(band, found, timed)}: {start} .. {end}"


def _exact_rects(
    bands: Sequence[Band | GroupBand], scale: Scale, titles: Sequence[str] | None
) -> Iterator[str]:
    """One rectangle per band, widened to stay visible when shorter than a unit, with its
    tooltip when ``titles`` gives them."""
    for n, band in enumerate(bands):
        x0, x1 = scale.x(band.start), scale.x(band.end)
        if x1 - x0 < MIN_VISIBLE_UNITS:
            x1 = min(scale.width, x0 + MIN_VISIBLE_UNITS)
            x0 = x1 - MIN_VISIBLE_UNITS
        yield _rect(x0, x1, STATE_COLOURS[band.state], titles[n] if titles else None)


def _pixel_rects(bands: Sequence[Band | GroupBand], scale: Scale) -> Iterator[str]:
    """At most one rectangle per unit-wide column, each the most severe state seen in it."""
    columns: list[BandState | None] = [None] * int(scale.width)
    last = len(columns) - 1
    for band in bands:
        first, final = int(scale.x(band.start)), int(scale.x(band.end))
        for px in range(min(first, last), min(max(final, first + 1), last + 1)):
            seen = columns[px]
            if seen is None or STATE_SEVERITY[band.state] > STATE_SEVERITY[seen]:
                columns[px] = band.state
    px = 0
    while px <= last:
        state = columns[px]
        run = px
        while run <= last and columns[run] is state:
            run += 1
        if state is not None:
            yield _rect(float(px), float(run), STATE_COLOURS[state])
        px = run


def _band_rects(
    bands: Sequence[Band | GroupBand], scale: Scale, title: Callable[[int], str]
) -> Iterator[str]:
    """``bands`` drawn exactly (with ``title(n)`` as the tooltip of the n-th when there are
    at most ``MAX_TITLED_BANDS``), or column by column past ``TIMELINE_UNITS`` of them."""
    if len(bands) > scale.width:
        yield from _pixel_rects(bands, scale)
        return
    titles = [title(n) for n in range(len(bands))] if len(bands) <= MAX_TITLED_BANDS else None
    yield from _exact_rects(bands, scale, titles)


def _marks(
    figures: ResourceAvailability, scale: Scale, found: Sequence[Interruption] = ()
) -> Iterator[str]:
    """The span in the up colour, and every other band over it: the bands tile the span, so
    only what is not up needs a rectangle of its own — half of them, or fewer; a down band's
    tooltip names its interruption's reason."""
    r = figures.resource
    span = f"{r.name}: {seconds_text(figures.start)} .. {seconds_text(figures.end)}"
    yield _rect(scale.x(figures.start), scale.x(figures.end), STATE_COLOURS[BandState.UP], span)
    others = [b for b in figures.bands if b.state is not BandState.UP]
    timed = restart_timed_by(r)
    yield from _band_rects(others, scale, lambda n: _band_title(others[n], found, timed))


def _group_band_title(band: GroupBand) -> str:
    start, end = seconds_text(band.start), seconds_text(band.end)
    length = duration_text(band.end - band.start)
    return f"{band.state.value} {band.in_state} of {band.present}, {length}: {start} .. {end}"


def _group_marks(group: GroupTimeline, scale: Scale) -> Iterator[str]:
    """The spans in which a member existed in the up colour, and every other state of the
    aggregate over them, each saying how many members were in it."""
    for start, end in group.spans:
        yield _rect(scale.x(start), scale.x(end), STATE_COLOURS[BandState.UP])
    others = [b for b in group.bands if b.state is not BandState.UP]
    yield from _band_rects(others, scale, lambda n: _group_band_title(others[n]))


def _svg(marks: Iterable[str], scale: Scale, ticks: Sequence[int], label: str) -> str:
    """A timeline: grey where nothing existed, the ``marks``, the grid of the ``ticks``."""
    grid = "".join(
        f'<line x1="{scale.x(t):.1f}" y1="0" x2="{scale.x(t):.1f}" y2="{BAND_HEIGHT}" '
        f'stroke="#ffffff" stroke-opacity="0.6" vector-effect="non-scaling-stroke"/>'
        for t in ticks
    )
    return (
        f'<svg class="timeline" width="100%" height="{BAND_HEIGHT}" '
        f'viewBox="0 0 {scale.width:.0f} {BAND_HEIGHT}" preserveAspectRatio="none" '
        f'shape-rendering="crispEdges" role="img" aria-label="{_e(label)}">'
        f"{_rect(0, scale.width, NO_DATA_COLOUR)}{''.join(marks)}{grid}</svg>"
    )


def group_timeline_svg(group: GroupTimeline, scale: Scale, ticks: Sequence[int]) -> str:
    """A cluster's resources of one kind as one timeline: the worst state at each instant."""
    label = (
        f"timeline of {group.cluster} {group.kind.value}: {len(group.members)} resources, "
        f"availability {percent_text(group.figures.availability)}"
    )
    return _svg(_group_marks(group, scale), scale, ticks, label)


def timeline_svg(
    figures: ResourceAvailability,
    scale: Scale,
    ticks: Sequence[int],
    found: Sequence[Interruption] = (),
) -> str:
    """The resource's bands over the whole window; grey where it did not exist; ``found``
    (its interruptions) names the reason of each down band."""
    label = (
        f"timeline of {figures.resource.name}: availability {percent_text(figures.availability)}"
    )
    return _svg(_marks(figures, scale, found), scale, ticks, label)


# --- the axis ----------------------------------------------------------------------------


def _tick_label(ns: int, step: int, dated: bool = True) -> str:
    """Only what changes between ticks: the day (the year is in the window line), the time
    of day (with the day only when the window spans several days), or the second."""
    text = timestamps.format_ns(ns)  # 2026-05-04T18:30:00Z
    if step >= _D:
        return text[5:10]
    if step >= _M:
        return f"{text[5:10]} {text[11:16]}" if dated else text[11:16]
    return text[11:19]


def spans_days(start: int, end: int) -> bool:
    """True when ``[start, end]`` touches more than one UTC day: labels then need the date."""
    return start // _D != end // _D


def _label_px(step: int, dated: bool = True) -> float:
    return len(_tick_label(0, step, dated)) * LABEL_CHAR_PX


def tick_step(span: int, width: float = TICK_LAYOUT_PX, dated: bool = True) -> int:
    """The smallest round step whose labels fit side by side over ``width`` pixels."""
    for step in TICK_STEPS:
        fitting = max(1, int(width // (_label_px(step, dated) + LABEL_GAP_PX)))
        if span // step <= fitting:
            return step
    return TICK_STEPS[-1] * (span // (TICK_STEPS[-1] * 4) + 1)


def ticks(start: int, end: int) -> list[int]:
    """Round UTC instants inside ``[start, end]``."""
    step = tick_step(max(1, end - start), dated=spans_days(start, end))
    first = -(-start // step) * step
    return list(range(first, end + 1, step))


def _axis_labels(scale: Scale, marks: Sequence[int], step: int, dated: bool) -> Iterator[str]:
    """Labels centred on their ticks, except at the edges where they are pushed inside; one
    that would touch the previous label at ``TICK_LAYOUT_PX`` is left out (its tick stays).
    Every second label is ``minor``: hidden by the stylesheet in a narrow window, where the
    timeline may be only ``MIN_TIMELINE_PX`` wide."""
    px_per_unit = TICK_LAYOUT_PX / scale.width
    previous_end = -LABEL_GAP_PX
    kept = 0
    for t in marks:
        text = _tick_label(t, step, dated)
        width = len(text) * LABEL_CHAR_PX
        x = scale.x(t) * px_per_unit
        if x < width / 2:
            placement, left = "first", x
        elif x > TICK_LAYOUT_PX - width / 2:
            placement, left = "last", x - width
        else:
            placement, left = "", x - width / 2
        if left < previous_end + LABEL_GAP_PX:
            continue
        previous_end = left + width
        classes = " ".join(filter(None, (placement, "minor" if kept % 2 else "")))
        kept += 1
        percent = 100 * scale.x(t) / scale.width
        yield f'<span class="{classes}" style="left:{percent:.3f}%">{_e(text)}</span>'


def axis_html(scale: Scale, marks: Sequence[int]) -> str:
    """Tick marks (SVG, stretched like the timelines) and UTC labels (HTML, not stretched)."""
    dated = spans_days(scale.start, scale.end)
    step = tick_step(max(1, scale.end - scale.start), dated=dated)
    stroke = 'stroke="#868e96" vector-effect="non-scaling-stroke"'
    tick_marks = "".join(
        f'<line x1="{scale.x(t):.2f}" y1="6" x2="{scale.x(t):.2f}" y2="14" {stroke}/>'
        for t in marks
    )
    return (
        f'<div class="axis" role="img" aria-label="time axis, UTC">'
        f"{''.join(_axis_labels(scale, marks, step, dated))}"
        f'<svg width="100%" height="14" viewBox="0 0 {scale.width:.0f} 14" '
        f'preserveAspectRatio="none"><line x1="0" y1="13.5" x2="{scale.width:.0f}" '
        f'y2="13.5" {stroke}/>{tick_marks}</svg></div>'
    )


# --- tables ------------------------------------------------------------------------------


def _header_cell(text: str, right: bool) -> str:
    """A header that may wrap after its hyphens (``PROV-<wbr>RUNNING``): narrow columns."""
    label = _e(text).replace("-", "-<wbr>")
    return f'<th class="num">{label}</th>' if right else f"<th>{label}</th>"


def _cell(text: str, right: bool) -> str:
    return f'<td class="num">{_e(text)}</td>' if right else f"<td>{_e(text)}</td>"


def html_table(
    ident: str, columns: Sequence[Column[T]], rows: Iterable[T], wrapping: Sequence[str] = ()
) -> str:
    """A table of ``rows``, one cell per column; the cells of the columns headed in
    ``wrapping`` (names from the cluster, accelerators) may wrap after a hyphen or anywhere,
    the others do not."""
    head = "".join(_header_cell(c.header, c.right) for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="wrap">{_e(c.cell(row)).replace("-", "-<wbr>")}</td>'
            if c.header in wrapping
            else _cell(c.cell(row), c.right)
            for c in columns
        )
        + "</tr>"
        for row in rows
    )
    return f'<table id="{ident}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def aggregate_table(report: AvailabilityReport) -> str:
    return html_table("aggregates", AGGREGATE_COLUMNS, report.aggregates)


def chip_section(report: AvailabilityReport) -> str:
    """Chip-weighted figures per shape, collapsed ("" when no resource has chips)."""
    chips = chip_figures(report.resources)
    if not chips:
        return ""
    return details("Weighted by TPU chips", html_table("chips", CHIP_COLUMNS, chips), "by-chips")


def down_now_section(report: AvailabilityReport) -> str:
    """The resources down now after an interruption, with their causes ("" when none)."""
    down = down_now(report.resources)
    if not down:
        return ""
    items = "".join(f"<li>{_e(down_now_line(d, report.window.now))}</li>" for d in down)
    return f'<h2>Down now after an interruption</h2><ul id="down-now">{items}</ul>'


def maintenance_section(report: AvailabilityReport) -> str:
    """The node pools with a host maintenance announced, soonest first ("" when none)."""
    scheduled = maintenance_scheduled(report.resources)
    if not scheduled:
        return ""
    now = report.window.now
    items = "".join(f"<li>{_e(scheduled_line(s, now))}</li>" for s in scheduled)
    return f'<h2>Maintenance scheduled</h2><ul id="maintenance-scheduled">{items}</ul>'


SHOWN_FIGURES = ("AVAIL", "DOWN", "INTR", "REC", "MTTR", "MTBI")
FIGURE_CELLS: tuple[Column[Figures], ...] = tuple(
    c for c in FIGURE_COLUMNS if c.header in SHOWN_FIGURES
)
"""The figures beside a timeline, a resource's or a group's (the text table's columns)."""
_CELL_COLUMNS: tuple[Column[ResourceAvailability], ...] = (
    Column("STATE", state_text),
    *FIGURE_CELLS,
    Column("PROVISIONING", provisioning_text),
)
_RESOURCE_CELLS: tuple[tuple[str, bool, Column[ResourceAvailability]], ...] = tuple(
    (c.header, c.right, c) for c in _CELL_COLUMNS
)


def resource_shape(figures: ResourceAvailability) -> str:
    """``east · nodepool · tpu-v5p-slice · 2x2x1 · key``: the cluster (on the fleet page), the
    kind, the shape, and the key when the name is not it."""
    r = figures.resource
    key = r.key if r.name != r.key else ""
    return " · ".join(filter(None, (r.cluster, r.kind.value, r.accelerator, r.topology, key)))


def _resource_label(figures: ResourceAvailability) -> str:
    name, shape = _e(figures.resource.name), _e(resource_shape(figures))
    return f'<td class="name"><div>{name}</div><div class="sub">{shape}</div></td>'


def _worst_first(report: AvailabilityReport) -> list[ResourceAvailability]:
    """The resources that lost the most first (``worst_resources``), then the rest in the
    report's order."""
    ranked = [w.figures for w in worst_resources(report, limit=len(report.resources))]
    chosen = {id(f) for f in ranked}
    return ranked + [f for f in report.resources if id(f) not in chosen]


def resource_table(report: AvailabilityReport) -> str:
    """Every resource's figures and timeline, worst first."""
    scale = Scale(report.start, report.window.now)
    marks = ticks(report.start, report.window.now)
    head = (
        "<th>RESOURCE</th>"
        + "".join(_header_cell(h, right) for h, right, _ in _RESOURCE_CELLS)
        + f'<th class="timeline">{axis_html(scale, marks)}</th>'
    )
    rows = "".join(
        f'<tr class="resource">{_resource_label(f)}'
        + "".join(_cell(c.cell(f), right) for _, right, c in _RESOURCE_CELLS)
        + f'<td class="timeline">{timeline_svg(f, scale, marks, interruptions(f, report.window))}'
        "</td></tr>"
        for f in _worst_first(report)
    )
    return f'<table id="resources"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


# --- the fleet page's timelines: one row per cluster and kind ------------------------------


def _grid_cell(text: str, right: bool) -> str:
    return f'<span class="num">{_e(text)}</span>' if right else f"<span>{_e(text)}</span>"


def _group_state(group: GroupTimeline) -> str:
    """How many of its live members are down at the end of the window."""
    live = sum(1 for f in group.members if f.resource.live)
    down = group.down_now
    return f"{down} of {live} down" if down else f"{live} live"


_PROVISIONING_WORDS = (
    (ProvisioningState.SUCCESS, "ok"),
    (ProvisioningState.PROVISIONING, "running"),
    (ProvisioningState.FAILED, "failed"),
)
"""A group's provisioning counts, as the tables head them (PROV-OK, PROV-RUNNING, …)."""


def _group_provisioning(group: GroupTimeline) -> str:
    states = group.figures.provisioning_states
    counted = [f"{states[s]} {word}" for s, word in _PROVISIONING_WORDS if states.get(s)]
    return ", ".join(counted) or NONE_TEXT


def _group_row(group: GroupTimeline, scale: Scale, marks: Sequence[int]) -> str:
    count = len(group.members)
    label = (
        f'<span class="name"><b>{_e(group.cluster)}</b>'
        f'<span class="sub">{_e(group.kind.value)} · {count} '
        f"resource{'s' if count != 1 else ''}</span></span>"
    )
    cells = "".join(_grid_cell(c.cell(group.figures), c.right) for c in FIGURE_CELLS)
    return (
        f'<summary class="row">{label}{_grid_cell(_group_state(group), False)}{cells}'
        f"{_grid_cell(_group_provisioning(group), False)}"
        f'<span class="timeline">{group_timeline_svg(group, scale, marks)}</span></summary>'
    )


def _member_row(
    figures: ResourceAvailability, report: AvailabilityReport, scale: Scale, marks: Sequence[int]
) -> str:
    r = figures.resource
    label = (
        f'<span class="name">{_e(r.name)}<span class="sub">{_e(resource_shape(figures))}'
        "</span></span>"
    )
    cells = "".join(_grid_cell(c.cell(figures), right) for _, right, c in _RESOURCE_CELLS)
    found = interruptions(figures, report.window)
    return (
        f'<div class="row resource">{label}{cells}'
        f'<span class="timeline">{timeline_svg(figures, scale, marks, found)}</span></div>'
    )


def group_section(report: AvailabilityReport) -> str:
    """One timeline row per cluster and kind (``summary.groups``: the worst state of its
    resources at each instant), each opening — an HTML ``<details>``, no script — onto its
    resources' rows; the group with the worst resource first, and each group's resources
    worst first."""
    scale = Scale(report.start, report.window.now)
    marks = ticks(report.start, report.window.now)
    head = (
        '<div class="row head"><span>CLUSTER · KIND</span>'
        + "".join(_grid_cell(h, right) for h, right, _ in _RESOURCE_CELLS)
        + f'<span class="timeline">{axis_html(scale, marks)}</span></div>'
    )
    groups = "".join(
        f'<details class="group" id="group-{n}">{_group_row(group, scale, marks)}'
        + "".join(_member_row(f, report, scale, marks) for f in group.members)
        + "</details>"
        for n, group in enumerate(group_timelines(_worst_first(report)))
    )
    return f'<div id="groups" class="rows">{head}{groups}</div>'


REASON_PALETTE = ("#c92a2a", "#e8590c", "#f08c00", "#5f3dc4", "#1971c2", "#0c8599", "#495057")
"""Colours of the reasons in the loss bars, in the order each kind lists them (largest
first); the seventh and later share the last."""
LOSS_BAR_PX = 220


def _loss_bar(by_reason: dict[str, float], total: float) -> str:
    """A bar of a kind's lost chip-hours split by reason (largest first), with its legend."""
    if total <= 0:
        return NONE_TEXT
    x, rects, keys = 0.0, [], []
    for n, (reason, value) in enumerate(by_reason.items()):
        colour = REASON_PALETTE[min(n, len(REASON_PALETTE) - 1)]
        width = LOSS_BAR_PX * value / total
        title = f"{reason}: {chip_hours(value)} chip-hours"
        rects.append(_rect(x, x + width, colour, title))
        keys.append(
            f'<span><i class="swatch" style="background:{colour}"></i>'
            f"{_e(reason)} {_e(chip_hours(value))}</span>"
        )
        x += width
    svg = (
        f'<svg class="lossbar" width="{LOSS_BAR_PX}" height="{BAND_HEIGHT}" role="img" '
        f'aria-label="chip-hours lost by reason">{"".join(rects)}</svg>'
    )
    return f'{svg}<div class="legend sub">{"".join(keys)}</div>'


def headline_section(report: AvailabilityReport) -> str:
    """The first screen: per kind, the chip availability of the window, the chip-hours lost
    and why, what failed or stuck provisioning cost, the interruptions by reason."""
    rows = []
    for k in kind_losses(report):
        if not k.chips and not k.interruptions_by_reason:
            continue
        lost = k.down_chip_seconds
        rows.append(
            f"<tr><th>{_e(k.kind.value)}</th>"
            f'<td class="num big">{_e(percent_text(k.availability))}</td>'
            f'<td class="num">{k.chips}</td>'
            f'<td class="num big">{_e(chip_hours(lost))}</td>'
            f"<td>{_loss_bar(dict(k.down_chip_seconds_by_reason), lost)}</td>"
            f'<td class="num">{_e(chip_hours(k.failed_provisioning_chip_seconds))}</td>'
            f"<td>{_e(reason_counts_text(k.interruptions_by_reason))}</td></tr>"
        )
    if not rows:
        return ""
    head = "".join(
        f"<th>{_e(h)}</th>"
        for h in (
            "kind",
            "chip availability",
            "chips",
            "chip-hours lost",
            "lost, by reason",
            "chip-hours in failed or stuck provisioning",
            "interruptions by reason",
        )
    )
    return (
        '<h2 id="lost">What the window cost</h2>'
        f'<table id="headline"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


DIST_WIDTH, DIST_HEIGHT, DIST_LABELS = 300, 70, ("<1m", "<5m", "<15m", "<1h", "<6h", "<1d", "≥1d")


def distribution_svg(dist: Distribution, what: str) -> str:
    """A small bar chart of ``dist`` with the count over each bar and the bucket under it."""
    top = max(dist.counts) or 1
    step = DIST_WIDTH / len(dist.counts)
    bars, labels = [], []
    for n, count in enumerate(dist.counts):
        height = (DIST_HEIGHT - 28) * count / top
        x = n * step + 3
        y = DIST_HEIGHT - 14 - height
        bars.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{step - 6:.1f}" height="{height:.1f}" '
            f'fill="#1971c2"><title>{_e(f"{count} {what} {DIST_LABELS[n]}")}</title></rect>'
        )
        cx = n * step + step / 2
        labels.append(
            f'<text x="{cx:.1f}" y="{y - 2:.1f}" text-anchor="middle">{count}</text>'
            f'<text x="{cx:.1f}" y="{DIST_HEIGHT - 2}" text-anchor="middle">'
            f"{_e(DIST_LABELS[n])}</text>"
        )
    return (
        f'<svg class="dist" width="{DIST_WIDTH}" height="{DIST_HEIGHT}" role="img" '
        f'aria-label="{_e(what)}: {dist.total}">{"".join(bars)}{"".join(labels)}</svg>'
    )


def distributions_section(report: AvailabilityReport) -> str:
    """Time to recover and provisioning time, as the window saw them (no chart when none)."""
    parts = []
    for title, values, what in (
        ("Time to recover", recovery_times(report), "recoveries"),
        ("Provisioning time", provisioning_times(report), "provisionings"),
    ):
        if values:
            dist = distribution(values)
            parts.append(
                f'<figure class="dist"><figcaption>{_e(title)} ({dist.total})</figcaption>'
                f"{distribution_svg(dist, what)}</figure>"
            )
    return f'<div id="distributions">{"".join(parts)}</div>' if parts else ""


def worst_section(report: AvailabilityReport, limit: int = WORST_SHOWN) -> str:
    """The ``limit`` resources that lost the most, with why."""
    worst = worst_resources(report, limit)
    if not worst:
        return ""
    rows = "".join(_worst_row(w) for w in worst)
    head = "".join(
        _header_cell(h, right)
        for h, right in (
            ("RESOURCE", False),
            ("LOST CHIP-HOURS", True),
            ("AVAIL", True),
            ("DOWN", True),
            ("WHY", False),
            ("PROVISIONING", False),
        )
    )
    return (
        '<h2 id="worst">Worst first</h2>'
        f'<table id="worst-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    )


def _worst_row(worst: Worst) -> str:
    f = worst.figures
    why = ", ".join(
        f"{reason} {duration_text(ns)}" for reason, ns in worst.down_time_by_reason.items()
    )
    if f.times.provisioning and not f.times.down and not why:
        why = "provisioning failed or stuck"
    cells = (
        _resource_label(f)
        + _cell(chip_hours(worst.lost_chip_seconds), True)
        + _cell(percent_text(f.availability), True)
        + _cell(duration_text(f.times.down), True)
        + _cell(why or NONE_TEXT, False)
        + _cell(provisioning_text(f), False)
    )
    return f"<tr>{cells}</tr>"


def details(title: str, body: str, ident: str) -> str:
    """A section a reader opens when needed; it prints open."""
    return f'<details id="{ident}"><summary><h2>{_e(title)}</h2></summary>{body}</details>'


def rollup_table(report: AvailabilityReport) -> str:
    columns = [c for c in AGGREGATE_COLUMNS if c.header != "TOPOLOGY"]
    return html_table("accelerators", columns, accelerator_rollup(report))


def _legend() -> str:
    return "".join(
        f'<span><i class="swatch" style="background:{STATE_COLOURS[s]}"></i>'
        f"{_e(STATE_LABELS[s])}</span>"
        for s in BandState
    ) + (
        f'<span><i class="swatch" style="background:{NO_DATA_COLOUR};'
        f'outline:1px solid #adb5bd"></i>not in history</span>'
    )


def first_screen(report: AvailabilityReport, worst: int = WORST_SHOWN) -> str:
    """What the window cost and why, what is down now and what maintenance is scheduled, the
    distributions, the worst resources: the answers above the timelines, on the one-history
    page and the fleet page alike."""
    return (
        headline_section(report)
        + down_now_section(report)
        + maintenance_section(report)
        + distributions_section(report)
        + worst_section(report, worst)
    )


def page(title: str, window: str, body: str, meta: Sequence[str] = (), css: str = "") -> str:
    """A whole page: the heading, the window, the ``meta`` lines, the availability
    definition, the legend of the states, the body; ``css`` added to the stylesheet."""
    return _PAGE.substitute(
        title=_e(title),
        heading=_e(title),
        css=_CSS + css,
        window=_e(window),
        meta="".join(f'<p class="meta">{_e(line)}</p>' for line in meta),
        definition=_e(AVAILABILITY_DEFINITION.capitalize() + "."),
        legend=_legend(),
        body=body,
    )


def render_html(report: AvailabilityReport) -> str:
    """The whole page: the first screen, every timeline (worst first), then the tables,
    collapsed."""
    if report.resources:
        body = (
            first_screen(report)
            + '<h2 id="timelines">Timelines</h2>'
            + resource_table(report)
            + details("By accelerator", rollup_table(report), "by-accelerator")
            + details("By kind, accelerator and topology", aggregate_table(report), "by-shape")
            + chip_section(report)
        )
    else:
        body = "<p>No resources in the window.</p>"
    return page("megamon availability report", window_line(report), body)
