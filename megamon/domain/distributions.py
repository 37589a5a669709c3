"""Distributions of recovery and interruption times: the histograms' shape (no I/O).

Each histogram is per kind and bounded labels only (``tpu_accelerator``, ``tpu_topology``,
``spot``, and ``reason`` or ``provisioning_state``), so a 65,000-node fleet has a few hundred
of them, not one per resource. The buckets span what TPU fleets see: a node blip of seconds,
a slice repair of minutes, a maintenance of hours, a queued workload of days.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Final

from megamon.domain.timestamps import NANOS_PER_SECOND

BUCKETS_S: Final = (
    10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1_200.0, 1_800.0, 3_600.0, 7_200.0, 14_400.0,
    28_800.0, 86_400.0, 172_800.0, 604_800.0,
)  # fmt: skip
"""Upper bounds in seconds: 10 s … 7 days, then ``+Inf`` (docs/metrics.md): the ``le``
labels."""
BUCKETS_NS: Final = tuple(int(bound) * NANOS_PER_SECOND for bound in BUCKETS_S)
"""The same bounds in integer nanoseconds: what an observation is compared with.

The bucket of ``ns`` is the first bound with ``ns <= bound`` compared exactly, as integers.
That is the bucket ``bisect_left(BUCKETS_S, ns / NANOS_PER_SECOND)`` chose when observations
were float seconds, for every integer ``ns``: each bound is a whole number of seconds below
2²⁰, exact as a float, and half its ulp (under 6e-11 s) is less than one nanosecond, so
``ns / 1e9`` (correctly rounded) is at most the bound exactly when ``ns`` is at most the
bound in nanoseconds (``test/summary/test_distributions.py`` checks every edge)."""

TIME_TO_RECOVER: Final = "time_to_recover_seconds"
TIME_BETWEEN_INTERRUPTIONS: Final = "time_between_interruptions_seconds"
PROVISIONING: Final = "provisioning_seconds"
MAINTENANCE_LEAD_TIME: Final = "maintenance_lead_time_seconds"
"""How long before a ``maintenance`` interruption megamon saw it announced; its label is
``announced`` (``true``, or ``false`` with 0 s)."""
QUEUEING: Final = "queueing_seconds"
"""How long a queued resource took from its creation to each stage its description names
(Kueue: ``quota_reserved``, ``admitted``); its label is ``until``, the stage."""
MEASURES: Final = (
    TIME_TO_RECOVER, TIME_BETWEEN_INTERRUPTIONS, PROVISIONING, MAINTENANCE_LEAD_TIME, QUEUEING
)  # fmt: skip
"""The metric suffixes: ``megamon_<kind>_<measure>``."""

PROVISIONING_SUCCESS: Final = "success"
PROVISIONING_FAILED: Final = "failed"
ANNOUNCED: Final = "true"
NOT_ANNOUNCED: Final = "false"


@dataclass(frozen=True, slots=True)
class Shape:
    """The bounded labels of a resource."""

    accelerator: str = ""
    topology: str = ""
    spot: bool = False


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """One histogram: a measure of a kind for one shape and one reason (or state)."""

    measure: str
    kind: str
    shape: Shape
    label: str
    """The ``reason`` (recover, between) or the ``provisioning_state`` (provisioning)."""


@dataclass
class Histogram:
    """Cumulative-ready counts: ``counts[i]`` is the observations in bucket ``i`` alone (the
    last one ``+Inf``); exposition accumulates them.

    The sum is integer nanoseconds, so that a histogram added to piece by piece, with
    take-backs, or from persisted parts, equals a recount exactly; it becomes float seconds
    only on its way out (``timestamps.seconds``, the ``_sum`` sample)."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS_NS) + 1))
    total_ns: int = 0
    count: int = 0

    def add(self, ns: int, times: int = 1) -> None:
        """``times`` observations of ``ns`` nanoseconds (-1 takes one back, when a record is
        replaced by a longer version of itself)."""
        self.counts[bisect_left(BUCKETS_NS, ns)] += times
        self.total_ns += ns * times
        self.count += times

    def merge(self, part: Histogram, times: int = 1) -> None:
        """Add ``part`` ``times`` times (-1 takes it back): a resource's contribution."""
        for index, count in enumerate(part.counts):
            self.counts[index] += count * times
        self.total_ns += part.total_ns * times
        self.count += part.count * times

    def cumulative(self) -> list[int]:
        out, running = [], 0
        for value in self.counts:
            running += value
            out.append(running)
        return out
