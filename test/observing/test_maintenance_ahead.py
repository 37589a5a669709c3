"""The node pool observer reads what GKE announces of a host maintenance and the chips the
nodes offer: the earliest announced time of a pool and when it was first seen, kept from
cycle to cycle in the ledger; a label holding no time reported, never fatal; allocatable TPU
chips summed per pool. Built from raw node objects through ``node_view``."""

from __future__ import annotations

from typing import Any

from megamon.domain import labels, maintenance
from megamon.domain.observations import NodePoolAttrs, Observation
from megamon.observing.common import REASON_INVALID, Settings
from megamon.observing.deletions import PoolLedger
from megamon.observing.nodepools import announcement, observe_nodepools_confirmed
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.projections import NodeView, node_view
from test.observing.test_observers import NOW, S, node, pool

SMALL = {"tpu_topology": "2x4"}  # two 4-chip v5e nodes, 8 chips


def view(name: str, *, allocatable: Any = "4", ready: str = "True", **extra: str) -> NodeView:
    obj = node(name, topology="2x4", ready=ready, **extra)
    if allocatable is not None:
        obj["status"]["allocatable"] = {labels.RESOURCE_TPU: allocatable, "cpu": "200"}
    return node_view(obj)


def scheduled(at: object) -> dict[str, Any]:
    return {labels.SCHEDULED_MAINTENANCE_TIME: at}


class Cycles:
    """The observer from cycle to cycle, as the aggregator runs it, on a clock it is given."""

    def __init__(self) -> None:
        self.ledger = PoolLedger()
        self.problems: list[str] = []

    def observe(
        self, now: int, nodes: list[NodeView], pools: list[NodePoolView] | None = None
    ) -> Observation:
        observed, self.ledger = observe_nodepools_confirmed(
            pools or [pool(**SMALL)], nodes, now, Settings(), polled_ns=now, ledger=self.ledger
        )
        self.problems = [f"{p.reason}: {p.message}" for p in observed.problems]
        return observed.observations["np"]


def attrs(observation: Observation) -> NodePoolAttrs:
    assert isinstance(observation.attrs, NodePoolAttrs)
    return observation.attrs


def test_a_node_reads_its_announced_maintenance_and_allocatable_chips() -> None:
    got = view("n", **scheduled("1780282800"))
    assert (got.scheduled_maintenance, got.tpu_allocatable) == (1_780_282_800, 4)
    plain = node_view(node("n"))
    assert (plain.scheduled_maintenance, plain.tpu_allocatable) == (maintenance.NOT_SCHEDULED, None)
    assert view("n", allocatable="4k").tpu_allocatable is None  # not a whole number of chips
    assert view("n", allocatable=0).tpu_allocatable == 0
    assert view("n", **scheduled("next tuesday")).scheduled_maintenance == maintenance.MALFORMED


def test_a_pool_announces_the_earliest_time_first_seen_when_it_appeared() -> None:
    soon, later = NOW // S + 3 * 3600, NOW // S + 5 * 3600
    cycles = Cycles()
    first = attrs(cycles.observe(NOW, [view("a", **scheduled(str(later))), view("b")]))
    assert (first.scheduled_maintenance, first.maintenance_announced) == (later, NOW // S)
    nodes = [view("a", **scheduled(str(later))), view("b", **scheduled(str(soon)))]
    second = attrs(cycles.observe(NOW + 600 * S, nodes))
    assert (second.scheduled_maintenance, second.maintenance_announced) == (soon, NOW // S + 600)
    third = attrs(cycles.observe(NOW + 1200 * S, nodes))  # the same time: first seen stays
    assert third.maintenance_announced == NOW // S + 600
    gone = attrs(cycles.observe(NOW + 1800 * S, [view("a"), view("b")]))
    assert (gone.scheduled_maintenance, gone.maintenance_announced) == (0, 0)


def test_a_pool_in_maintenance_keeps_the_announcement_its_nodes_dropped() -> None:
    at = NOW // S + 3600
    cycles = Cycles()
    cycles.observe(NOW, [view("a", **scheduled(str(at))), view("b")])
    later = NOW + 3600 * S
    in_maintenance = {labels.ACTIVE_NODE_MAINTENANCE: labels.MAINTENANCE_ONGOING}
    begun = cycles.observe(later, [view("a", **in_maintenance), view("b")])  # still Ready
    assert begun.up and attrs(begun).scheduled_maintenance == at
    down = cycles.observe(later, [view("a", ready="False", **in_maintenance), view("b")])
    assert not down.up and down.reason == "maintenance"
    assert (attrs(down).scheduled_maintenance, attrs(down).maintenance_announced) == (at, NOW // S)
    up = cycles.observe(later + 3600 * S, [view("a"), view("b")])
    assert up.up and attrs(up).scheduled_maintenance == 0


def test_a_label_holding_no_time_is_reported_and_the_pool_still_observed() -> None:
    cycles = Cycles()
    got = cycles.observe(NOW, [view("a", **scheduled("soon")), view("b", **scheduled("-1"))])
    assert got.up and attrs(got).scheduled_maintenance == 0
    assert cycles.problems == [
        f"{REASON_INVALID}: 2 node(s) have a {labels.SCHEDULED_MAINTENANCE_TIME} label that is "
        "not Unix seconds; ignored"
    ]


def test_allocatable_chips_are_summed_per_pool() -> None:
    cycles = Cycles()
    assert cycles.observe(NOW, [view("a"), view("b")]).tpu_chips_allocatable == 8
    short = cycles.observe(NOW, [view("a"), view("b", allocatable="0")])
    assert (short.up, short.tpu_chips_allocatable, short.attrs.tpu_chip_count) == (True, 4, 8)
    assert cycles.observe(NOW, [view("a", allocatable=None)]).tpu_chips_allocatable is None


def test_the_announcement_rule() -> None:
    assert announcement(None, 100, 5 * S, keep=False) == (100, 5)
    assert announcement((100, 5), 100, 9 * S, keep=False) == (100, 5)
    assert announcement((100, 5), 200, 9 * S, keep=False) == (200, 9)
    assert announcement((100, 5), 0, 9 * S, keep=True) == (100, 5)
    assert announcement((100, 5), 0, 9 * S, keep=False) is None
