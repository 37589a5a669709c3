"""Pure rules of docs/rules.md: upness with a round-half-even threshold, node readiness with an
Unknown grace period, and TPU sizing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from megamon.domain.rules import tpu
from megamon.domain.rules.readiness import DEFAULT_UNKNOWN_GRACE_NS, Readiness, node_readiness
from megamon.domain.rules.upness import is_up, max_unknown
from megamon.errors import InvalidMachineType, InvalidTopology

S = 1_000_000_000
NOW = 1_000_000 * S


@pytest.mark.parametrize(
    ("expected", "threshold", "allowed"),
    [
        (10, 0.25, 2),  # 2.5 → 2 (half to even)
        (6, 0.25, 2),  # 1.5 → 2
        (14, 0.25, 4),  # 3.5 → 4
        (64, 0.1, 6),  # 6.4 → 6
        (10, 0.15, 2),  # 1.5000000000000002 → 2: the float product, as Go computes it
        (10, 1.0, 10),
        (10, 0.0, 0),
    ],
)
def test_max_unknown_rounds_half_to_even(expected: int, threshold: float, allowed: int) -> None:
    assert max_unknown(expected, threshold) == allowed


@pytest.mark.parametrize(
    ("expected", "ready", "unknown", "threshold", "up"),
    [
        (1, 1, 0, 1.0, True),
        (1, 0, 0, 1.0, False),
        (10, 9, 1, 0.1, True),
        (10, 8, 2, 0.1, False),
        (64, 54, 10, 0.1, False),  # 10 of 64 Unknown at 0.1 → down
        (64, 58, 6, 0.1, True),  # 6 of 64 → up
        (64, 57, 6, 0.1, False),  # one node neither ready nor Unknown
        (4, 0, 4, 1.0, True),  # all Unknown within the default threshold
        (4, 5, 0, 1.0, True),  # a surge node more than expected: enough ready is up
        (4, 4, 1, 0.0, True),  # a surge node still registering (Unknown): 4 ready is enough
        (4, 3, 2, 0.25, True),  # 3 ready + 1 of the 2 Unknown the threshold allows
        (4, 2, 2, 0.25, False),  # 2 Unknown needed, 1 allowed
        (0, 0, 0, 1.0, True),
    ],
)
def test_upness(expected: int, ready: int, unknown: int, threshold: float, up: bool) -> None:
    assert is_up(expected, ready, unknown, threshold) is up


@pytest.mark.parametrize(
    ("expected", "ready", "unknown", "threshold", "up"),
    [
        (4, 5, 0, 1.0, False),  # the Go megamon: one Ready node more is down
        (4, 4, 1, 1.0, False),
        (4, 4, 0, 1.0, True),
        (10, 9, 1, 0.1, True),
        (64, 54, 10, 0.1, False),
    ],
)
def test_exact_upness_is_the_go_rule(
    expected: int, ready: int, unknown: int, threshold: float, up: bool
) -> None:
    assert is_up(expected, ready, unknown, threshold, exact=True) is up


@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 300), st.floats(0.0, 1.0))
def test_the_rules_differ_only_where_units_are_more_than_expected(
    expected: int, ready: int, unknown: int, threshold: float
) -> None:
    exact = is_up(expected, ready, unknown, threshold, exact=True)
    enough = is_up(expected, ready, unknown, threshold)
    if ready + unknown <= expected:
        assert exact is enough
    assert enough or not exact  # what the Go rule calls up is up
    assert is_up(expected, ready + 1, unknown, threshold) or not enough  # more never downs


GRACE = DEFAULT_UNKNOWN_GRACE_NS


@pytest.mark.parametrize(
    ("status", "since", "want"),
    [
        ("True", None, Readiness.READY),
        ("False", None, Readiness.NOT_READY),
        ("Unknown", None, Readiness.UNKNOWN),
        ("Unknown", NOW - 10 * S, Readiness.UNKNOWN),
        ("Unknown", NOW - GRACE + 1, Readiness.UNKNOWN),
        ("Unknown", NOW - GRACE, Readiness.NOT_READY),
        ("Unknown", NOW - 3600 * S, Readiness.NOT_READY),
        (None, None, Readiness.UNKNOWN),
        ("Bogus", None, Readiness.NOT_READY),
    ],
)
def test_node_readiness(status: str | None, since: int | None, want: Readiness) -> None:
    assert node_readiness(status, since, NOW) is want


def test_grace_period_is_configurable() -> None:
    assert node_readiness("Unknown", NOW - 20 * S, NOW, grace_ns=10 * S) is Readiness.NOT_READY


@pytest.mark.parametrize(
    ("topology", "chips"),
    [("2x4", 8), ("4x4x4", 64), ("16x16", 256), ("1x1", 1), ("2x2x1", 4), ("8x16x16", 2048)],
)
def test_topology_chips(topology: str, chips: int) -> None:
    assert tpu.topology_chips(topology) == chips


@pytest.mark.parametrize(
    "topology", ["", "4", "4x", "x4", "0x4", "4x-4", "4xa", "4.0x4", "4 x4", "99999x99999"]
)
def test_invalid_topologies_raise_a_typed_error_naming_them(topology: str) -> None:
    with pytest.raises(InvalidTopology, match="topology"):
        tpu.topology_chips(topology)


@pytest.mark.parametrize(
    ("machine_type", "chips"),
    [
        ("ct5lp-hightpu-4t", 4),
        ("tpu7x-standard-4t", 4),
        ("ct6e-standard-8t", 8),
        ("ct5lp-hightpu-1t", 1),
        ("ct4p-hightpu-4t", 4),
    ],
)
def test_chips_per_vm(machine_type: str, chips: int) -> None:
    assert tpu.chips_per_vm(machine_type) == chips


@pytest.mark.parametrize(
    "machine_type", ["", "4t", "n2-standard-8", "ct5lp-hightpu-t", "ct5lp-hightpu-0t", "ct5-4T"]
)
def test_invalid_machine_types_raise(machine_type: str) -> None:
    with pytest.raises(InvalidMachineType, match="machine type"):
        tpu.chips_per_vm(machine_type)


@pytest.mark.parametrize(
    ("topology", "machine_type", "nodes"),
    [
        ("16x16", "ct5lp-hightpu-4t", 64),
        ("2x4", "ct5lp-hightpu-8t", 1),
        ("2x2x2", "tpu7x-standard-4t", 2),
        ("4x4x4", "ct4p-hightpu-4t", 16),
    ],
)
def test_expected_nodes_of_a_pool(topology: str, machine_type: str, nodes: int) -> None:
    assert tpu.expected_nodes(topology, machine_type) == nodes


@pytest.mark.parametrize(
    ("machine_type", "accelerator"),
    [
        ("tpu7x-standard-4t", "tpu7x"),
        ("ct5p-hightpu-4t", "tpu-v5p-slice"),
        ("ct5lp-hightpu-8t", "tpu-v5-lite-podslice"),
        ("ct6e-standard-4t", "tpu-v6e-slice"),
        ("n2-standard-8", ""),
        ("", ""),
    ],
)
def test_the_accelerator_a_machine_type_implies(machine_type: str, accelerator: str) -> None:
    assert tpu.accelerator_of(machine_type) == accelerator


def test_expected_nodes_needs_whole_nodes() -> None:
    with pytest.raises(InvalidTopology, match="whole nodes"):
        tpu.expected_nodes("1x1", "ct5lp-hightpu-4t")


def test_expected_nodes_from_node_labels() -> None:
    assert tpu.expected_nodes_from_labels("16x16", "4") == 64
    with pytest.raises(InvalidMachineType):
        tpu.expected_nodes_from_labels("16x16", "four")
