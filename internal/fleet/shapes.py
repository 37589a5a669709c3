"""TPU slice shapes: accelerator, machine type and topology, and the sizes they imply.

Why: every simulated object of one slice (the GKE node pool, its nodes, the JobSet or LWS
that asks for it, the Slice) must agree on the same three strings and on the node count they
imply, or the simulation would feed megamon contradictions it never sees in production. One
frozen value carries them. The arithmetic is the fleet's own (docs/rules.md) rather
than megamon's, so tests comparing megamon's counts with the fleet's compare two independent
computations.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from megamon.domain import labels

# TPU machine types end in the number of chips per VM: ct5lp-hightpu-4t, tpu7x-standard-4t.
_CHIPS_PER_VM = re.compile(r"-(\d+)t$")


def topology_chips(topology: str) -> int:
    """Chips of a topology: the product of its dimensions (``2x2x4`` → 16)."""
    parts = topology.split("x")
    if len(parts) < 2 or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise ValueError(f"invalid TPU topology {topology!r}; expected e.g. '16x16' or '2x2x4'")
    return math.prod(int(part) for part in parts)


def machine_chips(machine_type: str) -> int:
    """Chips per VM of a TPU machine type (``ct5lp-hightpu-4t`` → 4)."""
    match = _CHIPS_PER_VM.search(machine_type)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"{machine_type!r} is not a TPU machine type like 'ct5lp-hightpu-4t'")
    return int(match.group(1))


@dataclass(frozen=True)
class TpuShape:
    """The TPU slice a node pool provides and a workload asks for."""

    accelerator: str
    machine_type: str
    topology: str
    spot: bool = False

    def __post_init__(self) -> None:
        if self.chips % self.chips_per_vm:
            raise ValueError(
                f"{self.topology} ({self.chips} chips) is not a whole number of "
                f"{self.machine_type} VMs ({self.chips_per_vm} chips each)"
            )

    @property
    def chips(self) -> int:
        """Chips of the whole slice."""
        return topology_chips(self.topology)

    @property
    def chips_per_vm(self) -> int:
        """Chips of one node (``cloud.google.com/gke-accelerator-count``)."""
        return machine_chips(self.machine_type)

    @property
    def nodes(self) -> int:
        """Nodes (VMs) of one slice: 16x16 on ct5lp-hightpu-4t → 64."""
        return self.chips // self.chips_per_vm

    @property
    def family(self) -> str:
        """The machine family, GKE's ``cloud.google.com/machine-family`` (``ct5lp``)."""
        return self.machine_type.split("-", 1)[0]

    def node_selector(self) -> dict[str, str]:
        """The ``nodeSelector`` of a pod template that targets this shape."""
        selector = {
            labels.TPU_ACCELERATOR: self.accelerator,
            labels.TPU_TOPOLOGY: self.topology,
        }
        if self.spot:
            selector[labels.SPOT] = "true"
        return selector

    def __str__(self) -> str:
        spot = " spot" if self.spot else ""
        return f"{self.accelerator} {self.topology} on {self.machine_type}{spot}"
