"""TPU sizing: chips of a topology, chips per VM of a machine type, nodes of a node pool."""

from __future__ import annotations

import math
import re
from functools import lru_cache

from megamon.errors import InvalidMachineType, InvalidTopology

MAX_CHIPS = 1 << 20
"""No TPU slice is near a million chips; a larger product is a typo, not a topology."""

_DIMENSION = re.compile(r"[1-9][0-9]*")
_CHIPS_SUFFIX = re.compile(r"([1-9][0-9]*)t")


@lru_cache(maxsize=4096)  # a fleet has a few dozen topologies, read for every pool each cycle
def topology_chips(topology: str) -> int:
    """Chips of a topology: the product of its dimensions (``2x4`` → 8, ``4x4x4`` → 64)."""
    parts = topology.split("x")
    if len(parts) < 2:
        raise InvalidTopology(f"TPU topology {topology!r} has fewer than two dimensions")
    for part in parts:
        if not _DIMENSION.fullmatch(part):
            raise InvalidTopology(
                f"TPU topology {topology!r}: dimension {part!r} is not a positive integer"
            )
    chips = math.prod(int(p) for p in parts)
    if chips > MAX_CHIPS:
        raise InvalidTopology(f"TPU topology {topology!r} has {chips} chips, over {MAX_CHIPS}")
    return chips


def chips_per_vm(machine_type: str) -> int:
    """Chips of one VM: the number before the trailing ``t`` of the machine type's last part.

    ``ct5lp-hightpu-4t`` → 4, ``tpu7x-standard-4t`` → 4, ``ct6e-standard-8t`` → 8.
    """
    last = machine_type.rsplit("-", 1)[-1]
    m = _CHIPS_SUFFIX.fullmatch(last)
    if "-" not in machine_type or m is None:
        raise InvalidMachineType(
            f"machine type {machine_type!r} does not end in '-<chips>t' (e.g. ct5lp-hightpu-4t)"
        )
    return int(m.group(1))


def _whole_division(chips: int, per_node: int, what: str) -> int:
    nodes, rest = divmod(chips, per_node)
    if nodes == 0 or rest:
        raise InvalidTopology(f"{what}: {chips} chips do not fill whole nodes of {per_node} chips")
    return nodes


@lru_cache(maxsize=4096)
def expected_nodes(topology: str, machine_type: str) -> int:
    """Nodes of a TPU node pool: chips of its topology over chips per VM (16x16 on 4t → 64)."""
    return _whole_division(
        topology_chips(topology),
        chips_per_vm(machine_type),
        f"topology {topology!r} on {machine_type!r}",
    )


def expected_nodes_from_labels(topology: str, accelerator_count: str) -> int:
    """Nodes of a slice from a node's labels: topology chips over ``gke-accelerator-count``."""
    if not _DIMENSION.fullmatch(accelerator_count):
        raise InvalidMachineType(
            f"accelerator count {accelerator_count!r} is not a positive integer"
        )
    return _whole_division(
        topology_chips(topology),
        int(accelerator_count),
        f"topology {topology!r} with {accelerator_count} chips per node",
    )


ACCELERATORS = {
    "ct4p": "tpu-v4-podslice",
    "ct5lp": "tpu-v5-lite-podslice",
    "ct5p": "tpu-v5p-slice",
    "ct6e": "tpu-v6e-slice",
    "tpu7x": "tpu7x",
}
"""GKE's accelerator (``gke-tpu-accelerator``) of each TPU machine family (the machine type's
first part)."""


def accelerator_of(machine_type: str) -> str:
    """The accelerator a TPU machine type implies (``tpu7x-standard-4t`` → ``tpu7x``), for a
    pool whose labels and nodes do not say it yet; "" for a family megamon does not know."""
    return ACCELERATORS.get(machine_type.split("-", 1)[0], "")
