"""Simulation mode's node pools: without a GKE API, pools are inferred from the TPU nodes the
Kubernetes watch sees. The one source that joins the two."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from megamon.sources.gke.lister import SIMULATED_MACHINE_TYPE
from megamon.sources.gke.views import STATUS_RUNNING, NodePoolView
from megamon.sources.kube.projections import NodeView


class SimulatedNodePoolLister:
    """Node pools inferred from TPU nodes' labels: simulation mode has no GKE API.

    Every pool is RUNNING on ``tpu7x-standard-4t`` with the topology its nodes carry.
    """

    def __init__(self, nodes: Callable[[], Iterable[NodeView]]) -> None:
        self._nodes = nodes

    def list_node_pools(self) -> list[NodePoolView]:
        pools: dict[str, NodePoolView] = {}
        for node in self._nodes():
            if node.topology and node.nodepool and node.nodepool not in pools:
                pools[node.nodepool] = NodePoolView(
                    name=node.nodepool,
                    status=STATUS_RUNNING,
                    machine_type=SIMULATED_MACHINE_TYPE,
                    tpu_topology=node.topology,
                    accelerator=node.accelerator,
                    spot=node.spot,
                )
        return sorted(pools.values(), key=lambda p: p.name)
