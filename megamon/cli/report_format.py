"""Text and JSON renderings of an ``AvailabilityReport`` (``megamon report --format
table|json``), and the formatting of durations and percentages shared with the HTML page.

The table is for people: durations like ``3h04m``, percentages floored to two decimals (so
"100.00%" is only ever printed for a resource that was never down). JSON is for programs:
durations in integer nanoseconds and timestamps in RFC 3339, like every other megamon
document, and exact percentages.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from megamon.domain import interruptions as reasons
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import JobSetAttrs
from megamon.domain.summaries import ProvisioningState
from megamon.summary.availability import (
    Aggregate,
    AvailabilityReport,
    BandState,
    Incidents,
    Resource,
    ResourceAvailability,
    TimeSplit,
    Window,
)
from megamon.summary.chips import ChipFigures, DownNow, chip_figures, down_now
from megamon.summary.losses import (
    Interruption,
    KindLosses,
    Worst,
    interruptions,
    kind_losses,
    worst_resources,
)
from megamon.summary.maintenance import Scheduled, maintenance_scheduled

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Figures(Protocol):
    """What a row of figures offers, one resource's or a group's (here and in the fleet
    report, ``megamon.fleet.model``): the columns and JSON keys below read only this."""

    @property
    def times(self) -> TimeSplit: ...
    @property
    def incidents(self) -> Incidents: ...
    @property
    def availability(self) -> float | None: ...
    @property
    def mttr(self) -> int | None: ...
    @property
    def mtbi(self) -> int | None: ...


class Group(Figures, Protocol):
    """A group of resources of one kind, accelerator and topology: their summed figures and
    their provisioning."""

    @property
    def kind(self) -> Kind: ...
    @property
    def accelerator(self) -> str: ...
    @property
    def topology(self) -> str: ...
    @property
    def resources(self) -> int: ...
    @property
    def provisioning_states(self) -> Mapping[ProvisioningState, int]: ...
    @property
    def mean_provisioning_duration(self) -> int | None: ...


class Provisioned(Protocol):
    """One resource's provisioning, as ``summarize`` decides it."""

    @property
    def provisioning_state(self) -> ProvisioningState: ...
    @property
    def provisioning_duration(self) -> int: ...


class Windowed(Protocol):
    """A report's window and its effective start."""

    @property
    def window(self) -> Window: ...
    @property
    def start(self) -> int: ...


NANOS_PER_SECOND = timestamps.NANOS_PER_SECOND
NONE_TEXT = "-"
RETIRED = "retired"
AVAILABILITY_DEFINITION = (
    "availability = up / (up + down) within the window; expected-down and provisioning "
    "time are excluded from the denominator"
)


def duration_text(ns: int | None) -> str:
    """A duration for humans, two units at most: ``2d03h``, ``3h04m``, ``12m05s``, ``45s``."""
    if ns is None:
        return NONE_TEXT
    if ns == 0:
        return "0s"
    if ns < NANOS_PER_SECOND:
        return "<1s"
    minutes, seconds = divmod(ns // NANOS_PER_SECOND, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{seconds}s"


def percent_text(value: float | None) -> str:
    """Floored to two decimals: 99.999 % of up time must not read as a perfect 100.00%."""
    if value is None:
        return NONE_TEXT
    return f"{math.floor(value * 100) / 100:.2f}%"


def end_state_text(state: BandState, live: bool) -> str:
    """The state at the end of the window, or ``retired`` for an archived resource."""
    return state.value if live else RETIRED


def state_text(figures: ResourceAvailability) -> str:
    return end_state_text(figures.state, figures.resource.live)


def provisioning_text(figures: Provisioned) -> str:
    state = figures.provisioning_state
    if state is ProvisioningState.NONE:
        return NONE_TEXT
    return f"{state.value} {duration_text(figures.provisioning_duration)}"


def window_text(report: Windowed) -> str:
    since = "" if report.window.since is not None else " (all history)"
    length = duration_text(report.window.now - report.start)
    start, end = timestamps.format_ns(report.start), timestamps.format_ns(report.window.now)
    return f"window {start} .. {end}, {length}{since}"


# --- table -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column(Generic[T_contra]):
    """One column of a text table: a header, how to get the cell, and its alignment.

    A column of a protocol's rows (``Column[Figures]``) is a column of every type that
    has those fields: the one-history and the fleet report share them."""

    header: str
    cell: Callable[[T_contra], str]
    right: bool = False


FIGURE_COLUMNS: tuple[Column[Figures], ...] = (
    Column("AVAIL", lambda f: percent_text(f.availability), right=True),
    Column("UP", lambda f: duration_text(f.times.up), right=True),
    Column("DOWN", lambda f: duration_text(f.times.down), right=True),
    Column("EXP-DOWN", lambda f: duration_text(f.times.expected_down), right=True),
    Column("INTR", lambda f: str(f.incidents.interruptions), right=True),
    Column("REC", lambda f: str(f.incidents.recoveries), right=True),
    Column("MTTR", lambda f: duration_text(f.mttr), right=True),
    Column("MTBI", lambda f: duration_text(f.mtbi), right=True),
)
"""Availability, time and incidents: the same columns for a resource and for a group."""

PROVISIONING_COLUMN: Column[Provisioned] = Column("PROVISIONING", provisioning_text)

RESOURCE_COLUMNS: tuple[Column[ResourceAvailability], ...] = (
    Column("KIND", lambda f: f.resource.kind.value),
    Column("RESOURCE", lambda f: f.resource.name),
    Column("ACCELERATOR", lambda f: f.resource.accelerator or NONE_TEXT),
    Column("TOPOLOGY", lambda f: f.resource.topology or NONE_TEXT),
    Column("STATE", state_text),
    *FIGURE_COLUMNS,
    PROVISIONING_COLUMN,
)


def _state_count(state: ProvisioningState) -> Callable[[Group], str]:
    return lambda a: str(a.provisioning_states.get(state, 0))


GROUP_COLUMNS: tuple[Column[Group], ...] = (
    Column("KIND", lambda a: a.kind.value),
    Column("ACCELERATOR", lambda a: a.accelerator or NONE_TEXT),
    Column("TOPOLOGY", lambda a: a.topology or NONE_TEXT),
    Column("RESOURCES", lambda a: str(a.resources), right=True),
)
GROUP_PROVISIONING_COLUMNS: tuple[Column[Group], ...] = (
    Column("PROV-OK", _state_count(ProvisioningState.SUCCESS), right=True),
    Column("PROV-RUNNING", _state_count(ProvisioningState.PROVISIONING), right=True),
    Column("PROV-FAILED", _state_count(ProvisioningState.FAILED), right=True),
    Column("MEAN-PROV", lambda a: duration_text(a.mean_provisioning_duration), right=True),
)
AGGREGATE_COLUMNS: tuple[Column[Aggregate], ...] = (
    *GROUP_COLUMNS,
    *FIGURE_COLUMNS,
    *GROUP_PROVISIONING_COLUMNS,
)


CHIP_COLUMNS: tuple[Column[ChipFigures], ...] = (
    Column("KIND", lambda c: c.kind.value),
    Column("ACCELERATOR", lambda c: c.accelerator or NONE_TEXT),
    Column("TOPOLOGY", lambda c: c.topology or NONE_TEXT),
    Column("CHIPS", lambda c: str(c.chips), right=True),
    Column("CHIP-AVAIL", lambda c: percent_text(c.availability), right=True),
    Column("CHIP-HOURS-DOWN", lambda c: f"{c.down_chip_seconds / 3600:.1f}", right=True),
)


def resource_text(resource: Resource) -> str:
    """``jobset ml/train``; ``east: jobset ml/train`` when it names its cluster (the fleet)."""
    named = f"{resource.kind.value} {resource.name}"
    return f"{resource.cluster}: {named}" if resource.cluster else named


def down_now_line(down: DownNow, now: int) -> str:
    """``jobset ml/train down 14m: node pool v5p-128-a, maintenance``."""
    named = resource_text(down.figures.resource)
    return f"{named} down {duration_text(now - down.since)}: {down.cause}"


_SHOWN_AS = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (U+202E and the other bidi overrides), surrogate, private-use, unassigned
characters and line and paragraph separators: nothing a terminal shows as itself."""


def printable(text: str) -> str:
    """``text`` for one line of a terminal: a newline, tab or backslash as ``\\n``,
    ``\\t``, ``\\\\``, any other character a terminal would not show as itself (U+202E, which
    reverses what follows) as ``\\u202e`` — so a name can neither split its row nor
    reorder it, and the escaped form reads back unambiguously (JSON and HTML escape too)."""
    if text.isprintable() and "\\" not in text:
        return text  # the common case: nothing to look at character by character
    return "".join(_shown(char) for char in text)


def _shown(char: str) -> str:
    shown = _SHOWN_AS.get(char)
    if shown is not None:
        return shown
    if unicodedata.category(char) in _INVISIBLE:
        code = ord(char)
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def scheduled_line(scheduled: Scheduled, now: int) -> str:
    """``nodepool np maintenance in 2h 59m (2026-12-02T00:00:00Z), JobSet ml/train``; a time
    past is "due since"."""
    when = timestamps.format_ns(scheduled.at)
    if scheduled.at >= now:
        ahead = f"in {duration_text(scheduled.at - now)} ({when})"
    else:
        ahead = f"due since {duration_text(now - scheduled.at)} ({when})"
    jobset = f", JobSet {scheduled.jobset}" if scheduled.jobset else ""
    return f"{resource_text(scheduled.figures.resource)} maintenance {ahead}{jobset}"


def text_table(columns: Sequence[Column[T]], rows: Sequence[T]) -> list[str]:
    """Aligned lines: a header and one line per row, columns two spaces apart; every cell
    ``printable``, so a name from the cluster cannot break the table."""
    cells = [[c.header for c in columns]] + [
        [printable(c.cell(row)) for c in columns] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = []
    for line in cells:
        parts = [
            text.rjust(width) if column.right else text.ljust(width)
            for text, width, column in zip(line, widths, columns, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
    return lines


def chip_hours(chip_seconds: float) -> str:
    return f"{chip_seconds / 3600:.1f}"


def reason_counts_text(counts: Mapping[str, float], unit: Callable[[float], str] = str) -> str:
    """``maintenance 2, node-lost 1``, largest first; ``-`` when there is none."""
    return ", ".join(f"{reason} {unit(value)}" for reason, value in counts.items()) or NONE_TEXT


LOSS_COLUMNS: tuple[Column[KindLosses], ...] = (
    Column("KIND", lambda k: k.kind.value),
    Column("CHIPS", lambda k: str(k.chips), right=True),
    Column("CHIP-AVAIL", lambda k: percent_text(k.availability), right=True),
    Column("CHIP-HOURS-DOWN", lambda k: chip_hours(k.down_chip_seconds), right=True),
    Column("FAILED-PROV-CHIP-HOURS", lambda k: chip_hours(k.failed_provisioning_chip_seconds),
           right=True),
    Column("CHIP-HOURS-DOWN BY REASON",
           lambda k: reason_counts_text(k.down_chip_seconds_by_reason, chip_hours)),
    Column("INTERRUPTIONS BY REASON", lambda k: reason_counts_text(k.interruptions_by_reason)),
)  # fmt: skip
"""The first lines of a report: what each kind lost over the window, and why."""

WORST_COLUMNS: tuple[Column[Worst], ...] = (
    Column("KIND", lambda w: w.figures.resource.kind.value),
    Column("RESOURCE", lambda w: w.figures.resource.name),
    Column("LOST", lambda w: chip_hours(w.lost_chip_seconds), right=True),
    Column("AVAIL", lambda w: percent_text(w.figures.availability), right=True),
    Column("DOWN", lambda w: duration_text(w.figures.times.down), right=True),
    Column(
        "REASONS",
        lambda w: reason_counts_text(w.down_time_by_reason, lambda v: duration_text(int(v))),
    ),
    Column("PROVISIONING", lambda w: provisioning_text(w.figures)),
)
"""The resources that lost the most, most first; LOST is in chip-hours (down, or stuck
provisioning), in hours for a resource without chips."""


_RESTART_TIMED_BY = JobSetAttrs.model_fields["restart_timed_by"].alias or "restartTimedBy"


def restart_timed_by(resource: Resource) -> str:
    """How a JobSet's latest restart was timed, from its attributes in the history:
    ``condition`` (the ``RestartingJobSet`` condition's ``lastTransitionTime``s, the
    server's clock), ``observed`` (when megamon saw it), or ``""`` (none recorded)."""
    value = resource.attrs.get(_RESTART_TIMED_BY)
    return value if isinstance(value, str) else ""


def _reasons_column(window: Window) -> Column[ResourceAvailability]:
    """Each interruption's reason, counted per reason (those that began in the window), and
    how the latest restart was timed when the resource restarted."""

    def cell(figures: ResourceAvailability) -> str:
        counts: dict[str, float] = {}
        for found in interruptions(figures, window):
            if found.counted:
                counts[found.reason] = counts.get(found.reason, 0) + 1
        text = reason_counts_text({k: int(v) for k, v in counts.items()})
        timed = restart_timed_by(figures.resource)
        if timed and reasons.RESTART in counts:
            text += f" (latest restart timed: {timed})"
        return text

    return Column("REASONS", cell)


def render_table(report: AvailabilityReport) -> str:
    """The report for a terminal: the window, the definition, what was lost and why, the
    worst resources, every resource, aggregates."""
    lines = [f"megamon report: {window_text(report)}", AVAILABILITY_DEFINITION, ""]
    if not report.resources:
        lines.append("no resources in the window")
        return "\n".join(lines) + "\n"
    lines += ["Lost in the window, by kind:"]
    lines += text_table(LOSS_COLUMNS, kind_losses(report))
    worst = worst_resources(report)
    if worst:
        lines += ["", "Worst first:"]
        lines += text_table(WORST_COLUMNS, worst)
    lines += [""]
    lines += text_table((*RESOURCE_COLUMNS, _reasons_column(report.window)), report.resources)
    lines += ["", "By kind, accelerator and topology:"]
    lines += text_table(AGGREGATE_COLUMNS, report.aggregates)
    chips = chip_figures(report.resources)
    if chips:
        lines += ["", "Weighted by TPU chips:"]
        lines += text_table(CHIP_COLUMNS, chips)
    down = down_now(report.resources)
    if down:
        lines += ["", "Down now after an interruption:"]
        lines += [f"  {printable(down_now_line(d, report.window.now))}" for d in down]
    scheduled = maintenance_scheduled(report.resources)
    if scheduled:
        lines += ["", "Maintenance scheduled:"]
        lines += [f"  {printable(scheduled_line(s, report.window.now))}" for s in scheduled]
    return "\n".join(lines) + "\n"


# --- JSON --------------------------------------------------------------------------------


def time_text(ns: int | None) -> str | None:
    """A timestamp for JSON (RFC 3339), ``None`` as ``null``."""
    return None if ns is None else timestamps.format_ns(ns)


_time = time_text


def times_dict(figures: Figures) -> dict[str, Any]:
    """The figures' JSON keys (durations in integer nanoseconds), one resource's or a
    group's."""
    t = figures.times
    return {
        "upTime": t.up,
        "downTime": t.down,
        "failedTime": t.failed,
        "expectedDownTime": t.expected_down,
        "provisioningTime": t.provisioning,
        "unobservedTime": t.unobserved,
        "availabilityPercent": t.availability,
        "interruptionCount": figures.incidents.interruptions,
        "recoveryCount": figures.incidents.recoveries,
        "meanTimeToRecover": figures.mttr,
        "meanTimeBetweenInterruptions": figures.mtbi,
    }


def interruption_dict(found: Interruption) -> dict[str, Any]:
    return {
        "start": _time(found.start),
        "end": _time(found.end),
        "reason": found.reason,
        "detail": found.detail,
        "downTime": found.down_time,
        "inWindow": found.counted,
    }


def resource_dict(figures: ResourceAvailability, window: Window | None = None) -> dict[str, Any]:
    """A resource's figures; with the report's ``window``, its interruptions too."""
    r = figures.resource
    extra: dict[str, Any] = {}
    if window is not None:
        extra["interruptions"] = [interruption_dict(i) for i in interruptions(figures, window)]
    return {
        "kind": r.kind.value,
        "key": r.key,
        "name": r.name,
        "live": r.live,
        "retiredAt": _time(r.retired_at),
        "accelerator": r.accelerator,
        "topology": r.topology,
        "attrs": dict(r.attrs),
        "state": figures.state.value,
        "start": _time(figures.start),
        "end": _time(figures.end),
        **times_dict(figures),
        "provisioningDuration": figures.provisioning_duration,
        "provisioningState": figures.provisioning_state.value,
        "restartTimedBy": restart_timed_by(r) or None,
        **extra,
    }


def group_dict(group: Group) -> dict[str, Any]:
    """A group's shape, its count, its summed figures and its provisioning."""
    return {
        "kind": group.kind.value,
        "accelerator": group.accelerator,
        "topology": group.topology,
        "resourceCount": group.resources,
        **times_dict(group),
        "provisioningStates": {
            state.value: group.provisioning_states.get(state, 0)
            for state in (
                ProvisioningState.SUCCESS,
                ProvisioningState.PROVISIONING,
                ProvisioningState.FAILED,
            )
        },
        "meanProvisioningDuration": group.mean_provisioning_duration,
    }


def aggregate_dict(aggregate: Aggregate) -> dict[str, Any]:
    return group_dict(aggregate)


def window_dict(report: Windowed) -> dict[str, Any]:
    return {
        "since": _time(report.window.since),
        "start": _time(report.start),
        "now": _time(report.window.now),
    }


def report_dict(report: AvailabilityReport) -> dict[str, Any]:
    """One object: the window, the availability definition, ``resources``, ``aggregates``."""
    return {
        "window": window_dict(report),
        "availabilityDefinition": AVAILABILITY_DEFINITION,
        "losses": [losses_dict(k) for k in kind_losses(report)],
        "worst": [worst_dict(w) for w in worst_resources(report)],
        "resources": [resource_dict(f, report.window) for f in report.resources],
        "aggregates": [aggregate_dict(a) for a in report.aggregates],
        "chips": [chip_dict(c) for c in chip_figures(report.resources)],
        "downNow": [down_dict(d, report.window.now) for d in down_now(report.resources)],
        "maintenanceScheduled": [
            scheduled_dict(s, report.window.now) for s in maintenance_scheduled(report.resources)
        ],
    }


def losses_dict(losses: KindLosses) -> dict[str, Any]:
    return {
        "kind": losses.kind.value,
        "chips": losses.chips,
        "chipAvailabilityPercent": losses.availability,
        "upChipSeconds": losses.up_chip_seconds,
        "downChipSeconds": losses.down_chip_seconds,
        "downChipSecondsByReason": dict(losses.down_chip_seconds_by_reason),
        "failedProvisioningChipSeconds": losses.failed_provisioning_chip_seconds,
        "interruptionsByReason": dict(losses.interruptions_by_reason),
    }


def worst_dict(worst: Worst) -> dict[str, Any]:
    r = worst.figures.resource
    return {
        "kind": r.kind.value,
        "key": r.key,
        "name": r.name,
        "lostChipSeconds": worst.lost_chip_seconds,
        "downTimeByReason": dict(worst.down_time_by_reason),
    }


def chip_dict(chips: ChipFigures) -> dict[str, Any]:
    return {
        "kind": chips.kind.value,
        "accelerator": chips.accelerator,
        "topology": chips.topology,
        "chips": chips.chips,
        "chipAvailabilityPercent": chips.availability,
        "upChipSeconds": chips.up_chip_seconds,
        "downChipSeconds": chips.down_chip_seconds,
    }


def down_dict(down: DownNow, now: int) -> dict[str, Any]:
    r = down.figures.resource
    return {
        "kind": r.kind.value,
        "key": r.key,
        "name": r.name,
        "since": _time(down.since),
        "reason": down.reason,
        "detail": r.detail,
        "text": down_now_line(down, now),
    }


def scheduled_dict(scheduled: Scheduled, now: int) -> dict[str, Any]:
    r = scheduled.figures.resource
    return {
        "kind": r.kind.value,
        "key": r.key,
        "name": r.name,
        "at": _time(scheduled.at),
        "announcedAt": _time(scheduled.announced) if scheduled.announced else None,
        "jobset": scheduled.jobset,
        "text": scheduled_line(scheduled, now),
    }
