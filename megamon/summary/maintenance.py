"""Maintenance scheduled, for ``megamon report``: the live node pools whose nodes announce a
host maintenance, from the attributes the history recorded for them (pure).

The node pool observer keeps the announcement on the pool's attributes (``NodePoolAttrs``),
which the event log records like every other attribute; the report reads them from there,
beside "down now", so an operator sees what is down and what will be next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from megamon.domain.interruptions import MAINTENANCE
from megamon.domain.kinds import Kind
from megamon.domain.observations import NodePoolAttrs
from megamon.domain.timestamps import NANOS_PER_SECOND
from megamon.summary.availability import ResourceAvailability
from megamon.summary.distributions import open_interruption

_FIELDS = NodePoolAttrs.model_fields
SCHEDULED_ATTR = _FIELDS["scheduled_maintenance"].alias or ""
ANNOUNCED_ATTR = _FIELDS["maintenance_announced"].alias or ""
JOBSET_ATTR = _FIELDS["maintenance_jobset"].alias or ""


@dataclass(frozen=True, slots=True)
class Scheduled:
    """A live node pool with a host maintenance announced and not begun."""

    figures: ResourceAvailability
    at: int
    """When the maintenance will begin (ns since the epoch)."""
    announced: int
    """When megamon first saw it announced (ns; 0 when unknown)."""
    jobset: str
    """``namespace/name`` of the JobSet the pool was created for, ``""`` when none."""


def _seconds(attrs: Mapping[str, object], name: str) -> int:
    value = attrs.get(name)
    return value if type(value) is int and value > 0 else 0


def maintenance_scheduled(resources: Sequence[ResourceAvailability]) -> list[Scheduled]:
    """Live node pools whose recorded attributes announce a maintenance, soonest first; a pool
    already down for ``maintenance`` is down now, no longer scheduled."""
    found = []
    for figures in resources:
        resource = figures.resource
        if resource.kind != Kind.NODEPOOL or not resource.live:
            continue
        at = _seconds(resource.attrs, SCHEDULED_ATTR)
        if not at:
            continue
        ongoing = open_interruption(resource.record)
        if ongoing is not None and ongoing[1] == MAINTENANCE:
            continue
        jobset = resource.attrs.get(JOBSET_ATTR)
        found.append(
            Scheduled(
                figures,
                at * NANOS_PER_SECOND,
                _seconds(resource.attrs, ANNOUNCED_ATTR) * NANOS_PER_SECOND,
                jobset if isinstance(jobset, str) else "",
            )
        )
    found.sort(key=lambda s: (s.at, s.figures.resource.key))
    return found
