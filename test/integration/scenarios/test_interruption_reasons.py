"""Why it went down: each cause of docs/metrics.md ("Reasons") driven through the real
clients — node pools in the GKE emulator, nodes, taints, labels and JobSets through the
Kubernetes API — and read from the observation megamon reports."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from megamon.cli import report_format, report_html
from megamon.codec.log import TYPE_EVENT
from megamon.domain import interruptions, labels
from megamon.domain.events import FLAG_UP
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.reports import Report
from megamon.fleet.resources import read_resources
from megamon.recording.loading import load_kind
from megamon.summary.availability import Window, availability_report
from test.integration.scenarios.world import Megamon, World

TWO_NODES = {"topology": "2x4", "machine_type": "ct5lp-hightpu-4t"}
"""A 2x4 v5e slice on 4-chip VMs: two nodes."""


@pytest.fixture
def megamon(world: World) -> Iterator[Megamon]:
    running = Megamon(world, grace_s=180)
    yield running
    running.stop()


def pool(report: Report, name: str = "np") -> Observation | None:
    return report.kind(Kind.NODEPOOL).observations.get(name)


def running_pool(world: World, megamon: Megamon, *, spot: bool = False) -> None:
    world.pool("np", "RUNNING", spot=spot, **TWO_NODES)
    extra = {labels.SPOT: "true"} if spot else None
    for i in range(2):
        world.node(f"np-{i}", "np", topology="2x4", extra=extra)
    megamon.settle(lambda r: (obs := pool(r)) is not None and obs.up)


def down_for(megamon: Megamon, reason: str) -> Observation:
    report = megamon.settle(
        lambda r: (obs := pool(r)) is not None and not obs.up and obs.reason == reason
    )
    found = pool(report)
    assert found is not None
    return found


def test_a_pool_that_recovers_has_no_reason(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon)
    world.ready("np-1", "False")
    down_for(megamon, interruptions.NODE_NOT_READY)
    world.ready("np-1", "True")
    report = megamon.settle(lambda r: (obs := pool(r)) is not None and obs.up)
    assert (pool(report) or Observation(expected=0, ready=0)).reason == ""


def test_gke_error_status_is_error_with_its_message(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon)
    world.gke.set_status("proj", "us-central2", "tpu-cluster", "np", "ERROR", "host error on np-1")
    world.ready("np-1", "False")
    assert down_for(megamon, interruptions.ERROR).reason_detail == "host error on np-1"


def taint(key: str) -> dict[str, Any]:
    return {"spec": {"taints": [{"key": key, "effect": "NoSchedule"}]}}


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"labels": {labels.ACTIVE_NODE_MAINTENANCE: labels.MAINTENANCE_ONGOING}}},
        taint(labels.TAINT_MAINTENANCE_WINDOW_STARTED),
        taint(labels.TAINT_IMPENDING_NODE_TERMINATION),
    ],
    ids=["active-node-maintenance", "maintenance-window-started", "impending-termination"],
)
def test_gke_maintenance_signals_on_a_node_are_maintenance(
    world: World, megamon: Megamon, body: dict[str, Any]
) -> None:
    running_pool(world, megamon)
    world.patch_node("np-0", body)
    world.ready("np-0", "False")
    down_for(megamon, interruptions.MAINTENANCE)


def test_a_reconciling_pool_is_reconciling(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon)
    world.pool_status("np", "RECONCILING")
    world.ready("np-0", "False")
    down_for(megamon, interruptions.RECONCILING)


def test_a_reconciling_pool_with_cordoned_nodes_is_an_upgrade(
    world: World, megamon: Megamon
) -> None:
    running_pool(world, megamon)
    world.pool_status("np", "RECONCILING")
    world.patch_node("np-0", {"spec": {"unschedulable": True}})
    world.ready("np-0", "False")
    down_for(megamon, interruptions.UPGRADE)


def test_a_spot_pool_losing_a_node_is_a_preemption(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon, spot=True)
    world.delete_node("np-1")
    down_for(megamon, interruptions.PREEMPTION)


def test_a_spot_node_about_to_be_terminated_is_a_preemption(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon, spot=True)
    world.patch_node("np-1", taint(labels.TAINT_IMPENDING_NODE_TERMINATION))
    world.ready("np-1", "False")
    down_for(megamon, interruptions.PREEMPTION)


def test_a_deleted_node_is_node_lost(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon)
    world.delete_node("np-1")
    down_for(megamon, interruptions.NODE_LOST)


def test_a_node_unknown_past_the_grace_period_is_node_lost(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon)
    world.ready("np-1", "Unknown", since_s=600)
    down_for(megamon, interruptions.NODE_LOST)


def test_a_not_ready_node_is_node_not_ready(world: World, megamon: Megamon) -> None:
    running_pool(world, megamon)
    world.ready("np-1", "False")
    down_for(megamon, interruptions.NODE_NOT_READY)


def test_a_pool_still_being_created_has_unknown_reason(world: World, megamon: Megamon) -> None:
    world.pool("np", "PROVISIONING", **TWO_NODES)
    world.node("np-0", "np", topology="2x4")
    assert down_for(megamon, interruptions.UNKNOWN).reason_detail == ""


# JobSets -------------------------------------------------------------------------------------


def jobset_obs(report: Report, uid: str) -> Observation | None:
    return report.kind(Kind.JOBSET).observations.get(uid)


def running_jobset(world: World, megamon: Megamon, restarts: int = 0) -> str:
    uid = world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1, restarts=restarts)
    megamon.settle(lambda r: (obs := jobset_obs(r, uid)) is not None and obs.up)
    return uid


def jobset_down_for(megamon: Megamon, uid: str, reason: str) -> Observation:
    report = megamon.settle(
        lambda r: (obs := jobset_obs(r, uid)) is not None and not obs.up and obs.reason == reason
    )
    found = jobset_obs(report, uid)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("condition", "reason"), [("Failed", "failed"), ("Suspended", "suspended")]
)
def test_a_failed_or_suspended_jobset(
    world: World, megamon: Megamon, condition: str, reason: str
) -> None:
    uid = running_jobset(world, megamon)
    world.jobset_status("train", ready=1, condition=condition)
    jobset_down_for(megamon, uid, reason)


def test_a_jobset_whose_restarts_grew_is_down_for_a_restart(world: World, megamon: Megamon) -> None:
    uid = running_jobset(world, megamon, restarts=2)
    world.jobset_status("train", ready=0, restarts=3)
    obs = jobset_down_for(megamon, uid, interruptions.RESTART)
    assert obs.restarts == 3


def test_a_jobset_down_with_nothing_to_explain_it_is_unknown(
    world: World, megamon: Megamon
) -> None:
    uid = running_jobset(world, megamon, restarts=2)
    world.jobset_status("train", ready=0, restarts=2)
    jobset_down_for(megamon, uid, interruptions.UNKNOWN)


def test_a_jobset_on_a_node_pool_that_went_down_names_the_pool(
    world: World, megamon: Megamon
) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    uid = running_jobset(world, megamon)
    world.leader("train", "np-0")
    megamon.settle(lambda r: "np" in r.scheduling)
    world.ready("np-0", "False")
    world.jobset_status("train", ready=0, restarts=1)
    obs = jobset_down_for(megamon, uid, interruptions.NODEPOOL)
    assert obs.reason_detail == "np"


def test_the_reason_is_kept_in_the_durable_history(world: World, megamon: Megamon) -> None:
    """On the down event: in the log's segments (with GKE's message) and in the snapshot."""
    running_pool(world, megamon)
    world.gke.set_status("proj", "us-central2", "tpu-cluster", "np", "ERROR", "host error")
    world.ready("np-1", "False")
    down_for(megamon, interruptions.ERROR)
    assert megamon.aggregator.persist_once()
    loaded = load_kind(megamon.store, Kind.NODEPOOL)
    events = loaded.history.records["np"].events
    assert [(e.up, e.reason) for e in events][-2:] == [(True, ""), (False, "error")]
    lines = [
        line
        for name in megamon.store.log.segments(Kind.NODEPOOL)
        for line in megamon.store.log.read(Kind.NODEPOOL, name).lines
        if line.type == TYPE_EVENT and not line.flags & FLAG_UP
    ]
    assert lines[-1].detail == "host error"
    # the snapshot, as the Go megamon reads it, plus the reason
    megamon.store.write(Kind.NODEPOOL, loaded.history.records, None)
    snapshot = megamon.store.read(Kind.NODEPOOL).records["np"]
    assert snapshot.events[-1].reason == "error"


def test_the_report_names_the_node_pool_that_took_a_jobset_down(
    world: World, megamon: Megamon
) -> None:
    """``megamon report`` from the history megamon wrote: the JobSet down because of its node
    pool, the pool's own reason, and the figures weighted by chips (table, JSON, HTML)."""
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    uid = running_jobset(world, megamon)
    world.leader("train", "np-0")
    megamon.settle(lambda r: "np" in r.scheduling and (p := pool(r)) is not None and p.up)
    active = {labels.ACTIVE_NODE_MAINTENANCE: labels.MAINTENANCE_ONGOING}
    world.patch_node("np-0", {"metadata": {"labels": active}})
    world.ready("np-0", "False")
    world.jobset_status("train", ready=0)
    jobset_down_for(megamon, uid, interruptions.NODEPOOL)
    down_for(megamon, interruptions.MAINTENANCE)
    assert megamon.aggregator.persist_once()
    now = time.time_ns()
    resources = list(read_resources(megamon.store, [Kind.NODEPOOL, Kind.JOBSET], {}, now))
    report = availability_report(resources, Window(now=now, since=None))
    document = report_format.report_dict(report)
    (jobset,) = [d for d in document["downNow"] if d["kind"] == "jobset"]
    assert (jobset["reason"], jobset["detail"]) == ("nodepool", "np")
    assert jobset["text"].startswith(f"jobset {world.namespace}/train down ")
    assert jobset["text"].endswith(": node pool np, maintenance")
    (nodepool,) = [d for d in document["downNow"] if d["kind"] == "nodepool"]
    assert nodepool["text"].endswith(": maintenance")
    chips = {(c["kind"], c["chips"]) for c in document["chips"]}
    assert ("nodepool", 8) in chips
    assert all(c["downChipSeconds"] > 0 for c in document["chips"])
    table = report_format.render_table(report)
    assert "Weighted by TPU chips:" in table and ": node pool np, maintenance" in table
    html = report_html.render_html(report)
    assert 'id="chips"' in html and "node pool np, maintenance" in html
