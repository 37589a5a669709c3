"""Simulation mode has no GKE API: node pools are inferred from TPU nodes' labels."""

from megamon.domain import labels
from megamon.sources.gke.lister import SIMULATED_MACHINE_TYPE
from megamon.sources.gke.views import STATUS_RUNNING, NodePoolView
from megamon.sources.kube.projections import node_view
from megamon.sources.simulation import SimulatedNodePoolLister


def test_pools_are_inferred_from_tpu_nodes() -> None:
    def tpu(name: str, pool: str, topology: str) -> object:
        return node_view(
            {
                "metadata": {
                    "name": name,
                    "labels": {
                        labels.NODEPOOL: pool,
                        labels.TPU_TOPOLOGY: topology,
                        labels.TPU_ACCELERATOR: "tpu7x",
                        labels.SPOT: "true",
                    },
                }
            }
        )

    cpu = node_view({"metadata": {"name": "cpu", "labels": {labels.NODEPOOL: "default"}}})
    nodes = [tpu("a1", "a", "2x2x2"), tpu("a2", "a", "2x2x2"), tpu("b1", "b", "2x2x1"), cpu]
    assert SimulatedNodePoolLister(lambda: nodes).list_node_pools() == [  # type: ignore[arg-type,return-value]
        NodePoolView("a", STATUS_RUNNING, SIMULATED_MACHINE_TYPE, "2x2x2", "tpu7x", True),
        NodePoolView("b", STATUS_RUNNING, SIMULATED_MACHINE_TYPE, "2x2x1", "tpu7x", True),
    ]
