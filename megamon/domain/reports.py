"""The report: one immutable snapshot of everything megamon knows at one ``now`` — the latest
observation and the summary of every resource of every kind, and the scheduling map. Metrics
and exporters only ever read a report."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from megamon.domain.distributions import Histogram, SeriesKey, Shape
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.summaries import Summary


class ScheduledJob(BaseModel):
    """The JobSet leader Job running on a node pool."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    job_name: str = Field(alias="jobName")
    jobset_name: str = Field(alias="jobsetName")
    namespace: str = Field(default="", exclude=True)
    """The Job's namespace, for job labelling; not in the report JSON (the Go megamon's
    ``ScheduledJob`` has only the two names)."""


class KindReport(BaseModel):
    """Latest observations and summaries of one kind, keyed by resource key."""

    model_config = ConfigDict(frozen=True)

    observations: dict[str, Observation] = {}
    summaries: Mapping[str, Summary] = {}
    """Every observed resource's summary; the report stage hands in a mapping that makes
    each when first read (``summary.report.SummariesAt``)."""


class Report(BaseModel):
    """Everything megamon reports at ``generated_at`` (nanoseconds since the epoch)."""

    model_config = ConfigDict(frozen=True)

    generated_at: int
    kinds: dict[Kind, KindReport] = {}
    scheduling: dict[str, ScheduledJob] = {}
    observed_at: dict[str, int] = {}
    """Per source (``gke``, ``kubernetes``): when it was last observed successfully (ns)."""
    distributions: tuple[tuple[SeriesKey, Histogram], ...] = ()
    """Histograms of every kind from the durable history (``summary.distributions``): copies,
    in a stable order; not in the report JSON."""
    chips_down: tuple[tuple[str, Shape, str, int], ...] = ()
    """Chip-nanoseconds down by (kind, shape, reason), closed and ongoing interruptions
    (integers, exact; the metrics publish them as chip-seconds)."""
    chip_availability: tuple[tuple[str, str, float], ...] = ()
    """Chip-weighted availability by (kind, accelerator) over all history, ``megamon
    report``'s definition (``summary.chiptally``); a group with neither up nor down time has
    no row. Not in the report JSON."""

    def kind(self, kind: Kind) -> KindReport:
        return self.kinds.get(kind, KindReport())
