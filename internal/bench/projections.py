"""Benchmark: the cost of projecting one watch event of a workload kind.

A watch cache projects every event it receives (docs/performance.md), so this is the CPU a
workload kind costs per change: a JobSet (its code projection plus the shipped description
megamon observes it through), a LeaderWorkerSet, the shipped TrainJob and Kueue Workload
descriptions, and a described kind whose path needs ``jsonpath-ng``'s general evaluator
(``..``, any depth). Run with ``make bench`` or
``python -m internal.bench.projections [--objects N]``.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

from megamon.domain import labels
from megamon.domain.descriptions import KindDescription, shipped
from megamon.sources.kube.described import described_projection
from megamon.sources.kube.projections import jobset_view, lws_view

SELECTOR = {labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice", labels.TPU_TOPOLOGY: "16x16"}
CONDITIONS = [{"type": "StartupPolicyCompleted", "status": "True", "reason": "AllReady"}]


def _meta(i: int) -> dict[str, str]:
    return {"name": f"w{i}", "namespace": "ml", "uid": f"uid-{i}", "resourceVersion": str(i)}


def jobset(i: int) -> dict[str, Any]:
    pod = {"spec": {"nodeSelector": SELECTOR, "containers": [{"name": "m", "image": "x"}]}}
    job = {
        "name": "slice",
        "replicas": 4,
        "template": {"spec": {"parallelism": 64, "template": pod}},
    }
    status = {"replicatedJobsStatus": [{"name": "slice", "ready": 4, "active": 4}]}
    return {
        "metadata": _meta(i),
        "spec": {"replicatedJobs": [job]},
        "status": {**status, "conditions": CONDITIONS},
    }


def lws(i: int) -> dict[str, Any]:
    worker = {"spec": {"nodeSelector": SELECTOR}}
    spec = {"replicas": 2, "leaderWorkerTemplate": {"workerTemplate": worker}}
    return {"metadata": _meta(i), "spec": spec, "status": {"readyReplicas": 2}}


def trainjob(i: int) -> dict[str, Any]:
    job = {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": SELECTOR}}}}}
    patch = {
        "manager": "m",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
    }
    counts = {"ready": 4, "active": 4, "succeeded": 0, "failed": 0, "suspended": 0}
    return {
        "metadata": _meta(i),
        "spec": {"runtimeRef": {"name": "r"}, "runtimePatches": [patch]},
        "status": {"jobsStatus": [{"name": "node", **counts}], "conditions": CONDITIONS},
    }


def workload(i: int) -> dict[str, Any]:
    pod_set = {"name": "w", "count": 64, "template": {"spec": {"nodeSelector": SELECTOR}}}
    admitted = [{"type": "Admitted", "status": "True"}, {"type": "QuotaReserved", "status": "True"}]
    admission = {"clusterQueue": "q", "podSetAssignments": [{"name": "w", "count": 64}]}
    return {
        "metadata": _meta(i),
        "spec": {"podSets": [pod_set]},
        "status": {"conditions": admitted, "admission": admission},
    }


FILTERED = KindDescription.model_validate(
    {
        **shipped("kueue-workload").model_dump(),
        "Noun": "filtered",
        "Ready": {"Path": "status.admission..count"},
        "EventFile": "filtered.json",
    }
)


def _per_object(
    project: Callable[[dict[str, Any]], object], objects: list[dict[str, Any]]
) -> float:
    """Microseconds per object, the best of five passes."""
    best = min(timeit.repeat(lambda: [project(o) for o in objects], number=1, repeat=5))
    return best / len(objects) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    n = parser.parse_args().objects
    jobset_description = described_projection(shipped("jobset"))
    rows = [
        ("JobSet (code + jobset description)", jobset_view, jobset),
        ("  of which the jobset description", jobset_description, jobset),
        ("LeaderWorkerSet (code + description)", lws_view, lws),
        ("TrainJob (trainjob description)", described_projection(shipped("trainjob")), trainjob),
        (
            "Kueue Workload (kueue-workload)",
            described_projection(shipped("kueue-workload")),
            workload,
        ),
        ("Workload, a .. path (jsonpath-ng)", described_projection(FILTERED), workload),
    ]
    print(f"{'projection of one watch event':40} {'µs':>8}")
    for name, project, build in rows:
        objects = [build(i) for i in range(n)]
        print(f"{name:40} {_per_object(project, objects):8.1f}")


if __name__ == "__main__":
    main()
