"""The fleet report: every lifetime of every cluster's resources, per-cluster aggregates and
fleet rows per kind, accelerator and topology. Plain data, computed by ``megamon.fleet.engine``.

Durations are integer nanoseconds; availability, MTTR and MTBI are recomputed from summed
times and counts (time weighted) by ``megamon.summary.availability``'s own functions: one
definition for both reports. Chip-weighted figures
are in chip-nanoseconds and count only the resources whose attributes give a chip count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.summary.availability import (
    BandState,
    Incidents,
    TimeSplit,
    Window,
    availability_percent,
    mean_provisioning_duration,
    mean_time_between_interruptions,
    mean_time_to_recover,
)

FLEET = "*"
"""The ``cluster`` of a fleet row: every cluster."""


@dataclass(frozen=True, slots=True)
class ChipTime:
    """Chip-weighted time (chip-nanoseconds) of the resources that have a chip count."""

    chips: int = 0
    up: int = 0
    down: int = 0
    failed: int = 0

    @property
    def availability(self) -> float | None:
        return availability_percent(self.up, self.down)


@dataclass(frozen=True, slots=True)
class FleetResource:
    """One lifetime of one resource of one cluster over the window."""

    cluster: str
    kind: Kind
    key: str
    name: str
    accelerator: str
    topology: str
    chips: int | None
    retired_at: int | None
    start: int
    end: int
    state: BandState
    times: TimeSplit
    incidents: Incidents
    provisioning_state: ProvisioningState
    provisioning_duration: int

    @property
    def live(self) -> bool:
        return self.retired_at is None

    @property
    def availability(self) -> float | None:
        return self.times.availability

    @property
    def mttr(self) -> int | None:
        return mean_time_to_recover(self.incidents)

    @property
    def mtbi(self) -> int | None:
        return mean_time_between_interruptions(self.times, self.incidents)


@dataclass(frozen=True, slots=True)
class FleetAggregate:
    """Summed figures of one (cluster, kind, accelerator, topology); ``cluster`` is ``FLEET``
    for the rows over every cluster."""

    cluster: str
    kind: Kind
    accelerator: str
    topology: str
    resources: int
    times: TimeSplit
    incidents: Incidents
    provisioning_states: Mapping[ProvisioningState, int]
    provisioned_duration: int
    chip_time: ChipTime

    @property
    def availability(self) -> float | None:
        return self.times.availability

    @property
    def mttr(self) -> int | None:
        return mean_time_to_recover(self.incidents)

    @property
    def mtbi(self) -> int | None:
        return mean_time_between_interruptions(self.times, self.incidents)

    @property
    def mean_provisioning_duration(self) -> int | None:
        return mean_provisioning_duration(self.provisioning_states, self.provisioned_duration)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A cluster whose history could not be read: none of its resources are in the report."""

    cluster: str
    reason: str


@dataclass(frozen=True, slots=True)
class SkippedSegment:
    """A segment of a cluster's log that could not be read and was left out; the cluster's
    other segments and files are in the report."""

    cluster: str
    segment: str
    """Relative to the history (``log/kind=…/date=…/….ndjson``)."""
    reason: str


@dataclass(frozen=True, slots=True)
class FleetReport:
    """The window, the clusters read, every resource, the per-cluster and fleet aggregates;
    the clusters that could not be read and the segments left out, each with why."""

    window: Window
    start: int
    clusters: tuple[str, ...]
    resources: tuple[FleetResource, ...]
    cluster_aggregates: tuple[FleetAggregate, ...]
    fleet_aggregates: tuple[FleetAggregate, ...]
    unreadable: tuple[Unreadable, ...] = ()
    skipped_segments: tuple[SkippedSegment, ...] = ()
