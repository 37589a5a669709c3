"""Maintenance ahead: what GKE announces of a host maintenance before it begins. Pure.

GKE labels a node ``cloud.google.com/scheduled-maintenance-time`` (Unix seconds, as a string)
when a host maintenance is scheduled on it; the ``active-node-maintenance`` label and the
``maintenance-window-started`` taint say only that it has begun (``interruptions``). The
announcement lets megamon publish what will be interrupted within an hour, six, a day
(docs/metrics.md, "Maintenance ahead"), and say of every ``maintenance`` interruption whether
it was announced and how long before.

A node pool's announcement is the earliest scheduled time among its nodes; it is kept on the
pool's attributes (``NodePoolAttrs``), so it reaches the event log and the report.
"""

from __future__ import annotations

from typing import Final

from megamon.domain.timestamps import NANOS_PER_SECOND

NOT_SCHEDULED: Final = 0
"""No ``scheduled-maintenance-time`` label."""
MALFORMED: Final = -1
"""A label whose value is not Unix seconds: ignored, and reported once as a problem."""

MAX_SECONDS: Final = 2**40
"""Far beyond any date GKE will announce (year 36812): a larger value is no time."""

WINDOWS: Final = (("1h", 3600), ("6h", 6 * 3600), ("24h", 24 * 3600))
"""The ``within`` label's values and their seconds: bounded, in docs/metrics.md order."""


def parse_scheduled(value: object) -> int:
    """Unix seconds of a ``scheduled-maintenance-time`` label value; ``NOT_SCHEDULED`` when
    absent, ``MALFORMED`` when it is not a positive whole number of seconds."""
    if value is None:
        return NOT_SCHEDULED
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        return MALFORMED
    seconds = int(value)
    return seconds if 0 < seconds < MAX_SECONDS else MALFORMED


def windows_within(scheduled_s: int, now: int) -> tuple[str, ...]:
    """The ``within`` windows a maintenance scheduled at ``scheduled_s`` (Unix seconds) falls
    in at ``now`` (ns). A time already past still counts in every window: the maintenance is
    due and has not visibly begun (once it has, the pool is down for ``maintenance``)."""
    if scheduled_s <= 0:
        return ()
    ahead = scheduled_s - now / NANOS_PER_SECOND
    return tuple(name for name, seconds in WINDOWS if ahead <= seconds)


def lead_time_ns(*, scheduled_s: int, announced_ns: int, down_ns: int) -> int | None:
    """Nanoseconds between when megamon first saw the announcement and when the maintenance
    interrupted the resource (integer, as every duration a histogram sums); None when it was
    not announced before the interruption.

    ``scheduled_s`` is the announced time, ``announced_ns`` when megamon first saw it (0:
    never), ``down_ns`` when the resource went down for ``maintenance``."""
    if scheduled_s <= 0 or announced_ns <= 0 or announced_ns > down_ns:
        return None
    return down_ns - announced_ns
