"""Observers (docs/rules.md) as pure functions over projections of raw Kubernetes JSON."""

from __future__ import annotations

from typing import Any

import pytest

from megamon.domain import interruptions, labels, timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.owners import SliceOwner
from megamon.errors import ObservationError
from megamon.observing.common import Reuse, Settings
from megamon.observing.nodepools import observe_nodepools
from megamon.observing.scheduling import LeaderJobs, scheduling_map
from megamon.observing.slices import observe_slices
from megamon.observing.workloads import (
    observe_jobset_nodes,
    observe_jobsets,
    observe_leaderworkersets,
)
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.projections import (
    jobset_view,
    lws_view,
    node_view,
    pod_view,
    slice_view,
)

NOW = timestamps.parse("2026-06-01T00:00:00Z")
S = 10**9
DEFAULT = Settings()


def node(
    name: str,
    pool: str = "np",
    ready: str | None = "True",
    since: int = NOW - 3600 * S,
    topology: str = "16x16",
    **extra_labels: str,
) -> dict[str, Any]:
    node_labels = {labels.NODEPOOL: pool, labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice"}
    if topology:
        node_labels[labels.TPU_TOPOLOGY] = topology
        node_labels[labels.ACCELERATOR_COUNT] = "4"
    node_labels.update(extra_labels)
    conditions = []
    if ready is not None:
        conditions.append(
            {"type": "Ready", "status": ready, "lastTransitionTime": timestamps.format_ns(since)}
        )
    return {"metadata": {"name": name, "labels": node_labels}, "status": {"conditions": conditions}}


def pool(name: str = "np", status: str = "RUNNING", **kw: Any) -> NodePoolView:
    values: dict[str, Any] = {
        "name": name,
        "status": status,
        "machine_type": "ct5lp-hightpu-4t",
        "tpu_topology": "16x16",
        "accelerator": "tpu-v5-lite-podslice",
        "spot": False,
    }
    values.update(kw)
    return NodePoolView(**values)


def nodes(n: int, **kw: Any) -> list[Any]:
    return [node_view(node(f"n{i}", **kw)) for i in range(n)]


class TestSurgeNodes:
    """A surge upgrade adds a node to a pool before it removes an old one: enough ready nodes
    is up, the extra node is counted (``surplus``) and never makes the pool down."""

    def test_an_extra_ready_node_keeps_the_pool_up_and_is_counted(self) -> None:
        surged = [*nodes(64), node_view(node("surge"))]
        got = observe_nodepools([pool()], surged, NOW, DEFAULT).observations["np"]
        assert (got.expected, got.ready, got.surplus, got.up) == (64, 65, 1, True)
        assert got.reason == ""

    def test_the_extra_node_turning_not_ready_changes_nothing(self) -> None:
        surged = [*nodes(64), node_view(node("surge", ready="False"))]
        got = observe_nodepools([pool()], surged, NOW, DEFAULT).observations["np"]
        assert (got.ready, got.surplus, got.up) == (64, 1, True)

    def test_extra_nodes_do_not_hide_missing_ready_ones(self) -> None:
        surged = [*nodes(63), *(node_view(node(f"x{i}", ready="False")) for i in range(3))]
        got = observe_nodepools([pool()], surged, NOW, DEFAULT).observations["np"]
        assert (got.ready, got.surplus, got.up) == (63, 2, False)
        assert got.reason == interruptions.NODE_NOT_READY

    def test_the_go_rule_marks_the_pool_down_behind_its_switch(self) -> None:
        go = Settings(exact_count=True)
        surged = [*nodes(64), node_view(node("surge"))]
        got = observe_nodepools([pool()], surged, NOW, go).observations["np"]
        assert (got.surplus, got.up) == (1, False)
        not_ready = [*nodes(64), node_view(node("surge", ready="False"))]
        assert observe_nodepools([pool()], not_ready, NOW, go).observations["np"].up

    def test_a_jobsets_extra_node_is_counted_and_keeps_it_up(self) -> None:
        js = jobset_view(jobset("train", replicas=1, parallelism=2))
        provisioner = {
            labels.PROVISIONER_JOBSET_NAME: "train",
            labels.PROVISIONER_JOBSET_NAMESPACE: "team",
        }
        provisioned = [node_view(node(f"j{i}", pool="p", **provisioner)) for i in range(3)]
        got = observe_jobset_nodes([js], provisioned, NOW, DEFAULT).observations[js.uid]
        assert (got.expected, got.ready, got.surplus, got.up) == (2, 3, 1, True)


class TestNodePools:
    def test_a_16x16_v5e_pool_comes_up_node_by_node(self) -> None:
        for count in (0, 1, 63):
            got = observe_nodepools([pool()], nodes(count), NOW, DEFAULT).observations["np"]
            assert (got.expected, got.ready, got.up) == (64, count, False)
        got = observe_nodepools([pool()], nodes(64), NOW, DEFAULT).observations["np"]
        assert got.up and got.attrs.tpu_chip_count == 256
        assert got.attrs.tpu_topology == "16x16"
        assert got.attrs.tpu_accelerator == "tpu-v5-lite-podslice"

    @pytest.mark.parametrize(("unknown", "up"), [(10, False), (6, True)])
    def test_threshold_0_1_tolerates_6_of_64_unknown_not_10(self, unknown: int, up: bool) -> None:
        fresh = NOW - 10 * S
        members = nodes(64 - unknown) + [
            node_view(node(f"u{i}", ready="Unknown", since=fresh)) for i in range(unknown)
        ]
        got = observe_nodepools([pool()], members, NOW, Settings(threshold=0.1))
        assert got.observations["np"].unknown == unknown
        assert got.observations["np"].up is up

    def test_a_node_unknown_past_the_grace_period_is_not_ready(self) -> None:
        members = [*nodes(63), node_view(node("lost", ready="Unknown", since=NOW - 181 * S))]
        got = observe_nodepools([pool()], members, NOW, DEFAULT).observations["np"]
        assert (got.ready, got.unknown, got.up) == (63, 0, False)

    @pytest.mark.parametrize(
        ("status", "failed", "expected_down"),
        [
            ("PROVISIONING", False, False),
            ("ERROR", True, False),
            ("RUNNING_WITH_ERROR", True, False),
            ("RUNNING", False, False),
            ("STOPPING", False, True),
            ("DELETING", False, True),
        ],
    )
    def test_gke_status_sets_failed_and_expected_down(
        self, status: str, failed: bool, expected_down: bool
    ) -> None:
        got = observe_nodepools([pool(status=status)], nodes(64), NOW, DEFAULT).observations["np"]
        assert (got.failed, got.expected_down, got.status) == (failed, expected_down, status)
        assert got.up is not expected_down

    def test_size_falls_back_to_node_labels(self) -> None:
        got = observe_nodepools([pool(tpu_topology="")], nodes(2, topology="2x4"), NOW, DEFAULT)
        assert got.observations["np"].expected == 2

    def test_cpu_pools_are_ignored_and_bad_tpu_pools_skipped_with_a_problem(self) -> None:
        pools = [
            pool("cpu", machine_type="n2-standard-8", tpu_topology=""),
            pool("bad", tpu_topology="0x4"),
            pool("nosize", tpu_topology=""),
            pool("np"),
        ]
        got = observe_nodepools(pools, nodes(64), NOW, DEFAULT)
        assert set(got.observations) == {"np"}
        assert [(p.kind, p.subject) for p in got.problems] == [
            (Kind.NODEPOOL, "bad"),
            (Kind.NODEPOOL, "nosize"),
        ]
        assert "0x4" in got.problems[0].message

    def test_a_tpu7x_pool_is_sized_by_its_workload_policys_topology_before_any_node(
        self,
    ) -> None:
        ironwood = pool(
            machine_type="tpu7x-standard-4t",
            tpu_topology="4x4x8",  # the lister's, from the workload policy
            accelerator="",
            placement_policy="wp",
            status="PROVISIONING",
        )
        got = observe_nodepools([ironwood], [], NOW, DEFAULT).observations["np"]
        assert (got.expected, got.ready, got.up) == (32, 0, False)
        assert (got.attrs.tpu_topology, got.attrs.tpu_chip_count) == ("4x4x8", 128)
        assert got.attrs.tpu_accelerator == "tpu7x"  # the machine type's, as its nodes say

    @pytest.mark.parametrize("single_host", [True, False])
    def test_a_tpu7x_pool_whose_policy_cannot_be_read_says_why_then_is_sized_by_its_nodes(
        self, single_host: bool
    ) -> None:
        unread = pool(
            machine_type="tpu7x-standard-4t",
            tpu_topology="",
            placement_policy="wp",
            topology_problem="GetResourcePolicy projects/p/regions/r/resourcePolicies/wp: 403",
        )
        settings = Settings(single_host_pools=single_host)
        got = observe_nodepools([unread], [], NOW, settings)
        assert got.observations == {}
        assert [p.subject for p in got.problems] == ["np"]
        assert "workload policy could not be read" in got.problems[0].message
        assert "resourcePolicies/wp: 403" in got.problems[0].message
        members = nodes(2, topology="2x2x2")
        sized = observe_nodepools([unread], members, NOW, settings).observations["np"]
        assert (sized.expected, sized.ready, sized.up) == (2, 2, True)

    def test_a_gpu_pool_with_a_placement_policy_is_not_tracked(self) -> None:
        gpu = pool(machine_type="a3-highgpu-8g", tpu_topology="", placement_policy="compact")
        got = observe_nodepools([gpu], [], NOW, Settings(single_host_pools=False))
        assert (got.observations, got.problems) == ({}, [])

    def test_nodes_of_an_unknown_pool_are_reported_not_counted(self) -> None:
        got = observe_nodepools([pool()], nodes(3, pool="ghost"), NOW, DEFAULT)
        assert got.observations["np"].ready == 0
        assert got.problems[0].subject == "ghost" and "3 TPU node(s)" in got.problems[0].message


def jobset(
    name: str = "js", replicas: int = 2, ready: int = 0, terminal: str = "", **kw: Any
) -> dict[str, Any]:
    selector = {labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice", labels.TPU_TOPOLOGY: "4x4"}
    if kw.get("spot"):
        selector[labels.SPOT] = "true"
    conditions = [{"type": "Suspended", "status": "False"}]
    if terminal:
        conditions.append({"type": terminal, "status": "True"})
    return {
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "parallelism": kw.get("parallelism", 4),
                            "template": {"spec": {"nodeSelector": selector}},
                        }
                    },
                }
            ]
        },
        "status": {
            "replicatedJobsStatus": [{"name": "slice", "ready": ready}],
            "conditions": conditions,
        },
    }


class TestJobSets:
    def test_ready_when_every_replicated_job_is(self) -> None:
        got = observe_jobsets([jobset_view(jobset(ready=2, spot=True))], DEFAULT).observations
        js = got["uid-js"]
        assert (js.expected, js.ready, js.up) == (2, 2, True)
        assert js.attrs.jobset_name == "js" and js.attrs.jobset_namespace == "team"
        assert js.attrs.tpu_chip_count == 32 and js.attrs.spot

    @pytest.mark.parametrize(
        ("terminal", "expected_down"),
        [("Completed", True), ("Failed", False), ("Suspended", False)],
    )
    def test_completed_is_a_planned_end_failed_and_suspended_are_not(
        self, terminal: str, expected_down: bool
    ) -> None:
        got = observe_jobsets([jobset_view(jobset(ready=2, terminal=terminal))], DEFAULT)
        js = got.observations["uid-js"]
        assert js.status == terminal and js.expected_down is expected_down
        assert not js.up

    def test_jobset_nodes_count_the_provisioners_nodes(self) -> None:
        js = jobset_view(jobset(replicas=2, parallelism=4))
        provisioned = [
            node_view(
                node(
                    f"n{i}",
                    **{
                        labels.PROVISIONER_JOBSET_NAMESPACE: "team",
                        labels.PROVISIONER_JOBSET_NAME: "js",
                    },
                )
            )
            for i in range(8)
        ]
        got = observe_jobset_nodes([js], provisioned, NOW, DEFAULT).observations["uid-js"]
        assert (got.expected, got.ready, got.up) == (8, 8, True)
        got = observe_jobset_nodes([js], provisioned[:7], NOW, DEFAULT).observations["uid-js"]
        assert not got.up

    def test_a_bad_topology_skips_the_jobset_with_a_problem(self) -> None:
        raw = jobset()
        selector = raw["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        selector["nodeSelector"][labels.TPU_TOPOLOGY] = "4x"
        got = observe_jobsets([jobset_view(raw)], DEFAULT)
        assert got.observations == {} and got.problems[0].subject == "team/js"

    def test_malformed_objects_raise_a_typed_error_naming_them(self) -> None:
        with pytest.raises(ObservationError, match=r"without metadata\.name"):
            jobset_view({"metadata": {}})
        raw = jobset()
        raw["spec"]["replicatedJobs"][0]["replicas"] = "two"
        with pytest.raises(ObservationError, match="team/js: replicas"):
            jobset_view(raw)


def test_a_leaderworkerset() -> None:
    raw = {
        "metadata": {"name": "lws", "namespace": "serve", "uid": "uid-lws"},
        "spec": {
            "replicas": 3,
            "leaderWorkerTemplate": {
                "workerTemplate": {
                    "spec": {
                        "nodeSelector": {
                            labels.TPU_TOPOLOGY: "2x4",
                            labels.TPU_ACCELERATOR: "tpu-v6e-slice",
                        }
                    }
                }
            },
        },
        "status": {"readyReplicas": 3},
    }
    got = observe_leaderworkersets([lws_view(raw)], DEFAULT).observations["uid-lws"]
    assert (got.expected, got.ready, got.up) == (3, 3, True)
    assert got.attrs.lws_name == "lws" and got.attrs.tpu_chip_count == 24


def slice_obj(name: str, ready: str = "True", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {
                labels.SLICE_OWNER_KIND: "JobSet",
                labels.SLICE_OWNER_NAME: "js",
                labels.SLICE_OWNER_NAMESPACE: "team",
            },
            **meta,
        },
        "spec": {"type": "tpu7x", "topology": "4x4x4"},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


class TestSlices:
    def test_ready_unknown_terminating_and_failed(self) -> None:
        raws = [
            slice_obj("a"),
            slice_obj("b", ready="Unknown"),
            slice_obj("c", deletionTimestamp="2026-06-01T00:00:00Z"),
            slice_obj("d", ready="False"),
        ]
        raws[3]["status"]["conditions"].append({"type": "SliceCreationFailed", "status": "True"})
        active = [jobset_view(jobset())]
        got, owners = observe_slices([slice_view(r) for r in raws], active, [], {}, DEFAULT)
        obs = got.observations
        assert obs["a"].up and obs["b"].up and obs["b"].unknown == 1
        assert not obs["c"].up and not obs["d"].up and obs["d"].failed
        assert obs["a"].attrs.tpu_chip_count == 64 and obs["a"].attrs.slice_owner_name == "js"
        assert set(owners) == {"a", "b", "c", "d"}

    def test_a_slice_that_vanishes_while_its_owner_runs_is_down_until_the_owner_ends(
        self,
    ) -> None:
        active = [jobset_view(jobset())]
        _, owners = observe_slices([slice_view(slice_obj("a"))], active, [], {}, DEFAULT)
        got, owners = observe_slices([], active, [], owners, DEFAULT)
        assert not got.observations["a"].up and not got.observations["a"].expected_down
        assert owners == {"a": SliceOwner("JobSet", "js", "team", "tpu7x", "4x4x4")}
        done = [jobset_view(jobset(terminal="Completed"))]
        got, owners = observe_slices([], done, [], owners, DEFAULT)
        assert got.observations == {} and owners == {}

    def test_each_down_slice_says_why(self) -> None:
        raws = [
            slice_obj("gone-soon", deletionTimestamp="2026-06-01T00:00:00Z"),
            slice_obj("degraded", ready="False"),
            slice_obj("broken", ready="False"),
            slice_obj("silent", ready="False"),
            slice_obj("on-a-down-pool", ready="False"),
            slice_obj("reason-only", ready="False"),
        ]
        raws[1]["status"]["conditions"][0].update(reason="Degraded", message="ICI link down")
        raws[5]["status"]["conditions"][0].update(reason="HostsNotReady", message=7)
        raws[2]["status"]["conditions"].append(
            {"type": "SliceCreationFailed", "status": "True", "message": "no healthy partition"}
        )
        active = [jobset_view(jobset())]

        def pools_down(name: str) -> tuple[str, ...]:
            return ("np-b", "np-a") if name == "on-a-down-pool" else ()

        views = [slice_view(r) for r in raws]
        got, owners = observe_slices(views, active, [], {}, DEFAULT, pools_down)
        causes = {k: (o.reason, o.reason_detail) for k, o in got.observations.items()}
        assert causes == {
            "gone-soon": (interruptions.NODE_LOST, ""),
            "degraded": (interruptions.ERROR, "ICI link down"),
            "broken": (interruptions.FAILED, "no healthy partition"),
            "silent": (interruptions.ERROR, ""),
            "on-a-down-pool": (interruptions.NODEPOOL, "np-a,np-b"),
            "reason-only": (interruptions.ERROR, "HostsNotReady"),  # no usable message
        }
        vanished, _ = observe_slices([], active, [], owners, DEFAULT)
        assert vanished.observations["degraded"].reason == interruptions.NODE_LOST

    def test_a_slice_whose_owner_is_gone_or_terminal_is_expected_down(self) -> None:
        got, _ = observe_slices([slice_view(slice_obj("a"))], [], [], {}, DEFAULT)
        assert got.observations["a"].expected_down and not got.observations["a"].up


def test_scheduling_map_from_leader_pods_pruned_to_live_pools() -> None:
    def pod(name: str, node_name: str, index: str) -> Any:
        return pod_view(
            {
                "metadata": {
                    "name": name,
                    "namespace": "team",
                    "labels": {
                        labels.JOBSET_NAME: "js",
                        labels.JOB_NAME: f"js-slice-{name}",
                        labels.JOB_COMPLETION_INDEX: index,
                    },
                },
                "spec": {"nodeName": node_name},
            }
        )

    node_index = {
        "n1": node_view(node("n1", pool="np-a")),
        "n2": node_view(node("n2", pool="np-gone")),
    }
    pods = [pod("0", "n1", "0"), pod("1", "n1", "1"), pod("2", "n2", "0"), pod("3", "", "0")]
    got = scheduling_map(pods, node_index, {"np-a"})
    assert {k: (v.job_name, v.jobset_name) for k, v in got.items()} == {
        "np-a": ("js-slice-0", "js")
    }
    jobs = LeaderJobs()
    with jobs.call() as job_of:
        first = scheduling_map(pods, node_index, {"np-a"}, job_of)
    with jobs.call() as job_of:
        again = scheduling_map(pods, node_index, {"np-a"}, job_of)
    assert first == again == got
    assert again["np-a"] is first["np-a"], "an unchanged leader pod's Job is kept"
    moved = [pod("0", "n1", "0"), *pods[1:]]  # a new projection of the same pod
    with jobs.call() as job_of:
        third = scheduling_map(moved, node_index, {"np-a"}, job_of)
    assert third == got and third["np-a"] is not first["np-a"]


def test_a_pool_that_cannot_be_sized_any_more_keeps_its_last_observation() -> None:
    memo: Reuse[str, Observation] = Reuse()
    first = observe_nodepools([pool()], nodes(64), NOW, DEFAULT, memo).observations["np"]
    broken = pool(tpu_topology="16x")  # no topology, and no node says one either
    observed = observe_nodepools([broken], [], NOW, DEFAULT, memo)
    assert observed.observations["np"] is first  # unobserved now, not retired
    assert [p.reason for p in observed.problems] == ["invalid"]
