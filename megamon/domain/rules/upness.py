"""The upness rule: is a resource with these counts up?

Enough is up: a resource whose ready units (and the Unknown ones the threshold allows) reach
its expected count is up, however many more it has. A surge upgrade adds a node to a pool
before it removes an old one; that extra node is counted (``surplus``), never a reason to go
down. The Go megamon wants the count to be exact (``ready + unknown == expected``), so an
extra Ready node marks its pool down; ``exact=True`` keeps that rule
(``RequireExactCount``, docs/migrating.md).
"""

from __future__ import annotations


def max_unknown(expected: int, threshold: float) -> int:
    """How many units may be Unknown and the resource still count as up.

    ``expected × threshold`` rounded half to even, as Go's ``math.RoundToEven``; Python's
    ``round`` on a float rounds half to even too, so the float product is rounded exactly as
    the Go megamon rounds it.
    """
    return round(expected * threshold)


def is_up(
    expected: int, ready: int, unknown: int, threshold: float, *, exact: bool = False
) -> bool:
    """Up ⇔ the ready units, plus the Unknown ones within the threshold, reach ``expected``.

    ``exact``: the Go megamon's rule — not too many Unknown units, and ready plus Unknown
    exactly ``expected`` (one unit more is down)."""
    allowed = max_unknown(expected, threshold)
    if exact:
        return unknown <= allowed and ready + unknown == expected
    return ready + min(unknown, allowed) >= expected


def surplus(expected: int, present: int) -> int:
    """Units beyond the expected count (a surge node), 0 when there are none."""
    return max(present - expected, 0)
