"""The upness rule: is a resource with these counts up?"""

from __future__ import annotations


def max_unknown(expected: int, threshold: float) -> int:
    """How many units may be Unknown and the resource still count as up.

    ``expected × threshold`` rounded half to even, as Go's ``math.RoundToEven``; Python's
    ``round`` on a float rounds half to even too, so the float product is rounded exactly as
    the Go megamon rounds it.
    """
    return round(expected * threshold)


def is_up(expected: int, ready: int, unknown: int, threshold: float) -> bool:
    """Up ⇔ not too many Unknown units, and every expected unit is ready or Unknown."""
    if unknown > max_unknown(expected, threshold):
        return False
    return ready + unknown == expected
