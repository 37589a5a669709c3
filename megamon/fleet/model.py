"""The fleet report: every lifetime of every cluster's resources, per-cluster aggregates and
fleet rows per kind, accelerator and topology. Plain data, computed by ``megamon.fleet.engine``.

Durations are integer nanoseconds; availability, MTTR and MTBI are recomputed from summed
times and counts (time weighted), as in ``megamon.summary.availability``. Chip-weighted figures
are in chip-nanoseconds and count only the resources whose attributes give a chip count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.summary.availability import BandState, Incidents, TimeSplit, Window

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
        counted = self.up + self.down
        return 100.0 * self.up / counted if counted else None


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
        i = self.incidents
        return i.recovered_down_time // i.recoveries if i.recoveries else None

    @property
    def mtbi(self) -> int | None:
        i = self.incidents
        return self.times.up // i.interruptions if i.interruptions else None


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
        i = self.incidents
        return i.recovered_down_time // i.recoveries if i.recoveries else None

    @property
    def mtbi(self) -> int | None:
        i = self.incidents
        return self.times.up // i.interruptions if i.interruptions else None

    @property
    def mean_provisioning_duration(self) -> int | None:
        succeeded = self.provisioning_states.get(ProvisioningState.SUCCESS, 0)
        return self.provisioned_duration // succeeded if succeeded else None


@dataclass(frozen=True, slots=True)
class FleetReport:
    """The window, the clusters read, every resource, the per-cluster and fleet aggregates."""

    window: Window
    start: int
    clusters: tuple[str, ...]
    resources: tuple[FleetResource, ...]
    cluster_aggregates: tuple[FleetAggregate, ...]
    fleet_aggregates: tuple[FleetAggregate, ...]
