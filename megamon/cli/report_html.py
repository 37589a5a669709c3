"""``megamon report --format html``: one self-contained page — inline CSS and inline SVG, no
script, no font, no image, no URL — so it can be mailed, attached to an incident or opened
from a bucket without reaching any network.

The page holds the window and the availability definition, the aggregate table, and one row
per resource with its figures and a timeline: an SVG of the window with a band per state
(colours in ``STATE_COLOURS``) and a shared time axis in UTC. Every resource string comes from
the cluster or the history files, so everything is escaped.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from string import Template

from megamon.cli.report_format import (
    AGGREGATE_COLUMNS,
    AVAILABILITY_DEFINITION,
    CHIP_COLUMNS,
    NONE_TEXT,
    Column,
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
from megamon.summary.availability import (
    AvailabilityReport,
    Band,
    BandState,
    ResourceAvailability,
)
from megamon.summary.chips import chip_figures, down_now
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
# Which state a pixel column shows when several share it: the one an SRE must not miss.
_SEVERITY: dict[BandState, int] = {
    BandState.UP: 0,
    BandState.PROVISIONING: 1,
    BandState.EXPECTED_DOWN: 2,
    BandState.DOWN: 3,
    BandState.FAILED: 4,
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
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table#resources { width: 100%; }
td.timeline, th.timeline { padding: 0 8px; width: 100%; min-width: ${min_timeline}px; }
.axis { position: relative; height: ${axis_height}px; font-weight: 400; font-size: 11px;
        color: #495057; }
.axis span { position: absolute; top: 2px; transform: translateX(-50%); }
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
details > summary h2 { display: inline; }
@media print { details { display: block; } }
@media (max-width: ${narrow}px) { .axis span.minor { display: none; } }
""").substitute(min_timeline=MIN_TIMELINE_PX, axis_height=AXIS_HEIGHT, narrow=NARROW_WINDOW_PX)

_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>megamon report</title>
<style>$css</style>
</head>
<body>
<h1>megamon availability report</h1>
<p class="meta" id="window">$window</p>
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


def window_line(report: AvailabilityReport) -> str:
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
    bands: Sequence[Band],
    scale: Scale,
    titled: bool,
    found: Sequence[Interruption] = (),
    timed: str = "",
) -> Iterator[str]:
    """One rectangle per band, widened to stay visible when shorter than a unit; a down
    band's tooltip names its interruption's reason (and how the latest restart was timed)."""
    for band in bands:
        x0, x1 = scale.x(band.start), scale.x(band.end)
        if x1 - x0 < MIN_VISIBLE_UNITS:
            x1 = min(scale.width, x0 + MIN_VISIBLE_UNITS)
            x0 = x1 - MIN_VISIBLE_UNITS
        title = _band_title(band, found, timed) if titled else None
        yield _rect(x0, x1, STATE_COLOURS[band.state], title)


def _pixel_rects(bands: Sequence[Band], scale: Scale) -> Iterator[str]:
    """At most one rectangle per unit-wide column, each the most severe state seen in it."""
    columns: list[BandState | None] = [None] * int(scale.width)
    last = len(columns) - 1
    for band in bands:
        first, final = int(scale.x(band.start)), int(scale.x(band.end))
        for px in range(min(first, last), min(max(final, first + 1), last + 1)):
            seen = columns[px]
            if seen is None or _SEVERITY[band.state] > _SEVERITY[seen]:
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


def _marks(
    figures: ResourceAvailability, scale: Scale, found: Sequence[Interruption] = ()
) -> Iterator[str]:
    """The span in the up colour, and every other band over it: the bands tile the span, so
    only what is not up needs a rectangle of its own — half of them, or fewer."""
    r = figures.resource
    span = f"{r.name}: {seconds_text(figures.start)} .. {seconds_text(figures.end)}"
    yield _rect(scale.x(figures.start), scale.x(figures.end), STATE_COLOURS[BandState.UP], span)
    others = [b for b in figures.bands if b.state is not BandState.UP]
    if len(others) > scale.width:
        yield from _pixel_rects(others, scale)
    else:
        titled = len(others) <= MAX_TITLED_BANDS
        yield from _exact_rects(others, scale, titled, found, restart_timed_by(r))


def timeline_svg(
    figures: ResourceAvailability,
    scale: Scale,
    ticks: Sequence[int],
    found: Sequence[Interruption] = (),
) -> str:
    """The resource's bands over the whole window; grey where it did not exist; ``found``
    (its interruptions) names the reason of each down band."""
    grid = "".join(
        f'<line x1="{scale.x(t):.1f}" y1="0" x2="{scale.x(t):.1f}" y2="{BAND_HEIGHT}" '
        f'stroke="#ffffff" stroke-opacity="0.6" vector-effect="non-scaling-stroke"/>'
        for t in ticks
    )
    label = (
        f"timeline of {figures.resource.name}: availability {percent_text(figures.availability)}"
    )
    return (
        f'<svg class="timeline" width="100%" height="{BAND_HEIGHT}" '
        f'viewBox="0 0 {scale.width:.0f} {BAND_HEIGHT}" preserveAspectRatio="none" '
        f'shape-rendering="crispEdges" role="img" aria-label="{_e(label)}">'
        f"{_rect(0, scale.width, NO_DATA_COLOUR)}{''.join(_marks(figures, scale, found))}"
        f"{grid}</svg>"
    )


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


def aggregate_table(report: AvailabilityReport) -> str:
    head = "".join(_header_cell(c.header, c.right) for c in AGGREGATE_COLUMNS)
    rows = "".join(
        "<tr>" + "".join(_cell(c.cell(a), c.right) for c in AGGREGATE_COLUMNS) + "</tr>"
        for a in report.aggregates
    )
    return f'<table id="aggregates"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def chip_section(report: AvailabilityReport) -> str:
    """Chip-weighted figures per shape, collapsed ("" when no resource has chips)."""
    chips = chip_figures(report.resources)
    if not chips:
        return ""
    head = "".join(_header_cell(c.header, c.right) for c in CHIP_COLUMNS)
    rows = "".join(
        "<tr>" + "".join(_cell(c.cell(f), c.right) for c in CHIP_COLUMNS) + "</tr>" for f in chips
    )
    table = f'<table id="chips"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    return _details("Weighted by TPU chips", table, "by-chips")


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


# (header, right-aligned, cell) of the resource rows, left of the timeline.
_CELL_COLUMNS: tuple[Column[ResourceAvailability], ...] = (
    Column("STATE", state_text),
    Column("AVAIL", lambda f: percent_text(f.availability), right=True),
    Column("DOWN", lambda f: duration_text(f.times.down), right=True),
    Column("INTR", lambda f: str(f.incidents.interruptions), right=True),
    Column("REC", lambda f: str(f.incidents.recoveries), right=True),
    Column("MTTR", lambda f: duration_text(f.mttr), right=True),
    Column("MTBI", lambda f: duration_text(f.mtbi), right=True),
    Column("PROVISIONING", provisioning_text),
)
_RESOURCE_CELLS: tuple[tuple[str, bool, Column[ResourceAvailability]], ...] = tuple(
    (c.header, c.right, c) for c in _CELL_COLUMNS
)


def _resource_label(figures: ResourceAvailability) -> str:
    r = figures.resource
    shape = " · ".join(filter(None, (r.kind.value, r.accelerator, r.topology)))
    key = "" if r.name == r.key else f" · {r.key}"
    return f'<td class="name"><div>{_e(r.name)}</div><div class="sub">{_e(shape + key)}</div></td>'


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


def worst_section(report: AvailabilityReport) -> str:
    """The resources that lost the most, with why."""
    worst = worst_resources(report)
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


def _details(title: str, body: str, ident: str) -> str:
    """A section a reader opens when needed; it prints open."""
    return f'<details id="{ident}"><summary><h2>{_e(title)}</h2></summary>{body}</details>'


def rollup_table(report: AvailabilityReport) -> str:
    head = "".join(
        _header_cell(c.header, c.right) for c in AGGREGATE_COLUMNS if c.header != "TOPOLOGY"
    )
    columns = [c for c in AGGREGATE_COLUMNS if c.header != "TOPOLOGY"]
    rows = "".join(
        "<tr>" + "".join(_cell(c.cell(a), c.right) for c in columns) + "</tr>"
        for a in accelerator_rollup(report)
    )
    return f'<table id="accelerators"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _legend() -> str:
    return "".join(
        f'<span><i class="swatch" style="background:{STATE_COLOURS[s]}"></i>'
        f"{_e(STATE_LABELS[s])}</span>"
        for s in BandState
    ) + (
        f'<span><i class="swatch" style="background:{NO_DATA_COLOUR};'
        f'outline:1px solid #adb5bd"></i>not in history</span>'
    )


def render_html(report: AvailabilityReport) -> str:
    """The whole page: what the window cost and why, what is down now, the distributions,
    the worst resources, every timeline (worst first), then the tables, collapsed."""
    if report.resources:
        body = (
            headline_section(report)
            + down_now_section(report)
            + maintenance_section(report)
            + distributions_section(report)
            + worst_section(report)
            + '<h2 id="timelines">Timelines</h2>'
            + resource_table(report)
            + _details("By accelerator", rollup_table(report), "by-accelerator")
            + _details("By kind, accelerator and topology", aggregate_table(report), "by-shape")
            + chip_section(report)
        )
    else:
        body = "<p>No resources in the window.</p>"
    return _PAGE.substitute(
        css=_CSS,
        window=_e(window_line(report)),
        definition=_e(AVAILABILITY_DEFINITION.capitalize() + "."),
        legend=_legend(),
        body=body,
    )
