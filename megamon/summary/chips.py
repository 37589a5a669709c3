"""Chip-weighted figures of ``megamon report`` and why each resource is down now (pure).

A 256-chip slice down for an hour costs 64 times what a 4-chip one does: the report weighs
each resource's up and down time by its TPU chips, per kind, accelerator and topology. A
resource down after an interruption is named with the reason recorded on its down event and,
for a JobSet brought down by a node pool, the pool and the pool's own reason: "down 14m:
node pool v5p-128-a, maintenance".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from megamon.domain.interruptions import NODEPOOL
from megamon.domain.kinds import Kind
from megamon.domain.timestamps import seconds
from megamon.summary.availability import ResourceAvailability, availability_percent
from megamon.summary.distributions import open_interruption

CHIPS_ATTR = "tpuChipCount"


def chips_of(figures: ResourceAvailability) -> int:
    value = figures.resource.attrs.get(CHIPS_ATTR)
    return value if type(value) is int and value > 0 else 0


class UpDownChipTime:
    """Chip time up and down, summed as integer chip-nanoseconds (exact, whatever order it
    was added in), and what the reports print of it. A base of the dataclasses that hold
    ``up_chip_ns`` and ``down_chip_ns``."""

    __slots__ = ()
    up_chip_ns: int
    down_chip_ns: int

    @property
    def up_chip_seconds(self) -> float:
        return seconds(self.up_chip_ns)

    @property
    def down_chip_seconds(self) -> float:
        return seconds(self.down_chip_ns)

    @property
    def availability(self) -> float | None:
        """Percent of the chip time up, of that up or down; ``None`` without any."""
        return availability_percent(self.up_chip_ns, self.down_chip_ns)


@dataclass(frozen=True, slots=True)
class ChipFigures(UpDownChipTime):
    """Chip time of one kind, accelerator and topology over the window: exact, so that the
    chip tally kept from cycle to cycle (``summary.chiptally``) equals it."""

    kind: Kind
    accelerator: str
    topology: str
    chips: int
    """Chips of the resources counted (each lifetime once)."""
    up_chip_ns: int
    down_chip_ns: int


@dataclass(frozen=True, slots=True)
class ChipTime:
    """Chip-weighted time in integer chip-nanoseconds (exact, as the SQL engines sum it) of
    the resources of one group that have a chip count."""

    chips: int = 0
    up: int = 0
    down: int = 0
    failed: int = 0

    @property
    def availability(self) -> float | None:
        return availability_percent(self.up, self.down)


def chip_figures(resources: Iterable[ResourceAvailability]) -> list[ChipFigures]:
    """Per kind, accelerator and topology: Σ chips × up time and Σ chips × down time."""
    sums: dict[tuple[Kind, str, str], tuple[int, int, int]] = {}
    for figures in resources:
        chips = chips_of(figures)
        if not chips:
            continue
        r = figures.resource
        key = (r.kind, r.accelerator, r.topology)
        count, up, down = sums.get(key, (0, 0, 0))
        sums[key] = (
            count + chips,
            up + chips * figures.times.up,
            down + chips * figures.times.down,
        )
    return [
        ChipFigures(kind, accelerator, topology, *values)
        for (kind, accelerator, topology), values in sorted(
            sums.items(), key=lambda item: (item[0][0].value, item[0][1], item[0][2])
        )
    ]


@dataclass(frozen=True, slots=True)
class DownNow:
    """A resource down after an interruption at the report's end, and why."""

    figures: ResourceAvailability
    since: int
    reason: str
    cause: str
    """Readable: the reason, or for ``nodepool`` the pools and their reasons."""


def down_now(resources: Sequence[ResourceAvailability]) -> list[DownNow]:
    """Live resources in an interruption now, longest first, with their causes."""
    pools = {
        (f.resource.cluster, f.resource.key): found[1]
        for f in resources
        if f.resource.kind == Kind.NODEPOOL
        and f.resource.live
        and (found := open_interruption(f.resource.record)) is not None
    }
    result = []
    for figures in resources:
        found = open_interruption(figures.resource.record) if figures.resource.live else None
        if found is None:
            continue
        since, reason = found
        result.append(DownNow(figures, since, reason, _cause(reason, figures, pools)))
    result.sort(
        key=lambda d: (
            d.since,
            d.figures.resource.kind.value,
            d.figures.resource.cluster,
            d.figures.resource.key,
        )
    )
    return result


def _cause(reason: str, figures: ResourceAvailability, pools: dict[tuple[str, str], str]) -> str:
    """The reason, or for ``nodepool`` each pool named with its own reason: the pools of the
    resource's own cluster (a fleet's clusters may name their pools alike)."""
    detail = figures.resource.detail
    cluster = figures.resource.cluster
    if reason == NODEPOOL and detail:
        named = [f"node pool {p}, {pools[cluster, p]}" if (cluster, p) in pools
                 else f"node pool {p}" for p in detail.split(",")]  # fmt: skip
        return "; ".join(named)
    return f"{reason}: {detail}" if detail else reason
