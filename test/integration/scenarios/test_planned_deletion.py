"""A node pool deleted on purpose, as GKE deletes one: its nodes vanish first, then the pool
reads ``STOPPING`` (GKE's status of a pool being deleted), then it is gone from
``ListNodePools``. Whatever megamon makes of the nodes vanishing, every surface must give the
same figures for it (the ``world`` fixture ends with the cross-surface check,
``test.crosssurface``); the pool leaves the live history for the archive."""

from __future__ import annotations

from megamon.domain.kinds import Kind
from megamon.domain.reports import Report
from test.integration.scenarios.world import Megamon, World


def _pool(report: Report) -> object:
    return report.kind(Kind.NODEPOOL).observations.get("np")


def test_a_deleted_pool_whose_nodes_vanish_before_its_status_changes(world: World) -> None:
    running = Megamon(world)
    try:
        world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-4t")
        world.node("np-0", "np", topology="2x4")
        world.node("np-1", "np", topology="2x4")
        running.settle(lambda r: (obs := r.kind(Kind.NODEPOOL).observations.get("np"))
                       is not None and obs.up)  # fmt: skip
        for node in ("np-0", "np-1"):  # GKE drains and deletes the VMs first
            world.delete_node(node)
        running.settle(lambda r: not r.kind(Kind.NODEPOOL).observations["np"].up)
        world.pool_status("np", "STOPPING")
        running.settle(lambda r: r.kind(Kind.NODEPOOL).observations["np"].expected_down)
        world.gke.delete_node_pool("proj", "us-central2", "tpu-cluster", "np")
        running.settle(lambda r: _pool(r) is None)
    finally:
        running.stop()
    assert running.store.archived_keys(Kind.NODEPOOL) == ["np"]
