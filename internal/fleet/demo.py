"""The demo scenario: half an hour in the life of a mixed TPU fleet.

Why: ``make demo`` should show every state megamon reports, on a fleet an SRE recognises,
within a minute: eight node pools of different accelerators and topologies registering node by
node; one stuck in GKE ``ERROR`` (a stockout) with its Slice failing; one interrupted (a node
NotReady) and recovering; a spot pool preempted, its JobSet failing, then recovering; one
JobSet completing and its pool deleted; one preempted by Kueue; a LeaderWorkerSet serving;
Slices owned by a JobSet and an LWS, one degrading for a minute. Pools and workloads are
tables; the steps are derived from them, so the timeline reads top to bottom.

Timeline (simulated minutes):

    0:00–7:15   pools created and provisioning node by node (64 nodes for v5e-256-pretrain)
    6:00        v5p-16-stuck: GKE ERROR after 2 of 4 nodes (stockout); its Slice fails at 6:30
    7:00–8:00   spot-inference, benchmark-v6e, llm-pretrain ready
    12:00       v5e-64-spot preempted (4 nodes NotReady); spot-inference Failed at 12:30
    12:00       notebook-eval Completed
    13:00       llm-pretrain-0: Slice degraded (Ready=False, ``error``); ready again at 14:00
    14:00       benchmark-v6e Completed; its pool STOPPING at 16:00, gone at 18:00
    15:00       v6e-16-finetune: a node NotReady; finetune-v6e not ready; recovered 21:00–22:00
    18:00       v5e-64-spot recovered (GKE replaced the VMs)
    24:00       rl-rollout preempted by Kueue (suspended: megamon records ``suspended``)
    30:00       steady state
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from internal.fleet.fleet import Fleet
from internal.fleet.objects import Owner
from internal.fleet.scenario import Action, Step, call, minutes
from internal.fleet.shapes import TpuShape

V5E, V5P, V6E, TPU7X = "tpu-v5-lite-podslice", "tpu-v5p-slice", "tpu-v6e-slice", "tpu7x"
PROJECT, LOCATION, CLUSTER = "megamon-demo", "us-east5", "tpu-fleet"
"""The demo fleet's GKE cluster (``make demo`` and its replay)."""


@dataclass(frozen=True)
class PoolPlan:
    """A node pool of the demo and how it provisions."""

    name: str
    shape: TpuShape
    created: str
    first_node: str
    every_seconds: int
    registers: int | None = None  # how many nodes register at all (default: every one)
    jobset: tuple[str, str] | None = None  # (namespace, name) the provisioner made it for

    def steps(self) -> list[Step]:
        start = minutes(self.created)
        steps = [Step(start, f"{self.name}: create pool ({self.shape})", self._create())]
        total = self.shape.nodes
        first = minutes(self.first_node)
        for k in range(total if self.registers is None else self.registers):
            at = first + timedelta(seconds=k * self.every_seconds)
            name = f"{self.name}: node {k + 1}/{total} registered"
            if k + 1 == total:
                name += ", pool RUNNING"
            steps.append(Step(at, name, call("add_nodes", self.name, 1)))
        return steps

    def _create(self) -> Action:
        s = self.shape
        return call(
            "create_pool",
            self.name,
            s.accelerator,
            s.machine_type,
            s.topology,
            s.spot,
            jobset=self.jobset,
        )


# Columns: name, shape, created at, first node at, seconds between nodes (simulated).
POOLS = (
    PoolPlan(
        "v5e-256-pretrain",
        TpuShape(V5E, "ct5lp-hightpu-4t", "16x16"),
        created="0",
        first_node="2:00",
        every_seconds=5,
        jobset=("training", "llm-pretrain"),
    ),
    PoolPlan("v5e-8-dev", TpuShape(V5E, "ct5lp-hightpu-8t", "2x4"), "0:30", "1:30", 0),
    PoolPlan(
        "v6e-16-finetune",
        TpuShape(V6E, "ct6e-standard-4t", "4x4"),
        created="1:00",
        first_node="3:00",
        every_seconds=20,
        jobset=("training", "finetune-v6e"),
    ),
    PoolPlan("tpu7x-8-serve", TpuShape(TPU7X, "tpu7x-standard-4t", "2x2x2"), "1:00", "3:00", 20),
    PoolPlan(
        "v5p-16-stuck",
        TpuShape(V5P, "ct5p-hightpu-4t", "2x2x4"),
        created="1:30",
        first_node="4:00",
        every_seconds=30,
        registers=2,
    ),
    PoolPlan(
        "v5e-64-spot",
        TpuShape(V5E, "ct5lp-hightpu-4t", "8x8", spot=True),
        created="2:00",
        first_node="4:00",
        every_seconds=10,
        jobset=("batch", "spot-inference"),
    ),
    PoolPlan("v6e-64-eval", TpuShape(V6E, "ct6e-standard-4t", "8x8"), "2:00", "4:30", 10),
    PoolPlan("v6e-8-rl", TpuShape(V6E, "ct6e-standard-8t", "2x4"), "3:00", "5:00", 0),
)


def _at(clock: str, name: str, method: str, *args: object) -> Step:
    return Step(minutes(clock), name, call(method, *args))


def _steady(_fleet: Fleet) -> None:
    """The last step: nothing changes any more; the runner idles (or replays) from here."""


WORKLOADS = (
    _at("0:00", "training/llm-pretrain: JobSet created", "create_jobset",
        "llm-pretrain", "training", "v5e-256-pretrain"),
    _at("0:00", "llm-pretrain-0: Slice created", "create_slice",
        "llm-pretrain-0", "v5e-256-pretrain", Owner.jobset("llm-pretrain", "training")),
    _at("0:30", "dev/notebook-eval: JobSet created", "create_jobset",
        "notebook-eval", "dev", "v5e-8-dev"),
    _at("1:00", "training/finetune-v6e: JobSet created", "create_jobset",
        "finetune-v6e", "training", "v6e-16-finetune"),
    _at("1:00", "serving/gemma-serve: LeaderWorkerSet created", "create_lws",
        "gemma-serve", "serving", "tpu7x-8-serve"),
    _at("1:00", "gemma-serve-0: Slice created", "create_slice",
        "gemma-serve-0", "tpu7x-8-serve", Owner.lws("gemma-serve", "serving")),
    _at("1:30", "research/v5p-experiment: JobSet created", "create_jobset",
        "v5p-experiment", "research", "v5p-16-stuck"),
    _at("1:30", "v5p-experiment-0: Slice created", "create_slice",
        "v5p-experiment-0", "v5p-16-stuck", Owner.jobset("v5p-experiment", "research")),
    _at("2:00", "batch/spot-inference: JobSet created", "create_jobset",
        "spot-inference", "batch", "v5e-64-spot"),
    _at("2:00", "eval/benchmark-v6e: JobSet created", "create_jobset",
        "benchmark-v6e", "eval", "v6e-64-eval"),
    _at("2:00", "dev/notebook-eval: ready", "set_jobset_ready", "notebook-eval", "dev"),
    _at("3:00", "training/rl-rollout: JobSet created", "create_jobset",
        "rl-rollout", "training", "v6e-8-rl"),
)  # fmt: skip

EVENTS = (
    _at("4:00", "gemma-serve-0: Slice ready", "set_slice_ready", "gemma-serve-0"),
    _at("4:30", "serving/gemma-serve: all groups ready", "set_lws_ready", "gemma-serve", "serving"),
    _at("4:30", "training/finetune-v6e: ready", "set_jobset_ready", "finetune-v6e", "training"),
    _at("5:30", "training/rl-rollout: ready", "set_jobset_ready", "rl-rollout", "training"),
    _at("6:00", "v5p-16-stuck: GKE ERROR (stockout)", "fail_pool", "v5p-16-stuck"),
    _at("6:30", "v5p-experiment-0: SliceCreationFailed", "fail_slice", "v5p-experiment-0"),
    _at("7:00", "batch/spot-inference: ready", "set_jobset_ready", "spot-inference", "batch"),
    _at("7:30", "eval/benchmark-v6e: ready", "set_jobset_ready", "benchmark-v6e", "eval"),
    _at("7:30", "llm-pretrain-0: Slice ready", "set_slice_ready", "llm-pretrain-0"),
    _at("8:00", "training/llm-pretrain: ready", "set_jobset_ready", "llm-pretrain", "training"),
    _at("12:00", "v5e-64-spot: preempted, 4 nodes NotReady", "interrupt_pool", "v5e-64-spot", 4),
    _at("12:00", "dev/notebook-eval: Completed", "complete_jobset", "notebook-eval", "dev"),
    _at("12:30", "batch/spot-inference: Failed", "fail_jobset", "spot-inference", "batch"),
    _at("13:00", "llm-pretrain-0: Slice degraded (Ready=False)", "degrade_slice", "llm-pretrain-0"),
    _at("14:00", "eval/benchmark-v6e: Completed", "complete_jobset", "benchmark-v6e", "eval"),
    _at("14:00", "llm-pretrain-0: Slice ready again", "set_slice_ready", "llm-pretrain-0"),
    _at("15:00", "v6e-16-finetune: a node NotReady", "interrupt_pool", "v6e-16-finetune", 1),
    _at("15:30", "training/finetune-v6e: replica down", "set_jobset_ready",
        "finetune-v6e", "training", 0),
    _at("16:00", "v6e-64-eval: deleting (STOPPING, nodes removed)", "stop_pool", "v6e-64-eval"),
    _at("18:00", "v6e-64-eval: deleted", "remove_pool", "v6e-64-eval"),
    _at("18:00", "v5e-64-spot: VMs replaced, recovered", "recover_pool", "v5e-64-spot"),
    _at("21:00", "v6e-16-finetune: node Ready again", "recover_pool", "v6e-16-finetune"),
    _at("22:00", "training/finetune-v6e: ready again", "set_jobset_ready",
        "finetune-v6e", "training"),
    _at("24:00", "training/rl-rollout: preempted by Kueue (suspended)", "preempt_jobset",
        "rl-rollout", "training"),
    Step(minutes("30:00"), "steady state: nothing changes any more", _steady),
)  # fmt: skip


def demo_scenario() -> list[Step]:
    """Every step of the demo, in playing order (see the module docstring for the timeline)."""
    steps = [step for pool in POOLS for step in pool.steps()]
    steps += WORKLOADS
    steps += EVENTS
    return sorted(steps, key=lambda step: step.at)
