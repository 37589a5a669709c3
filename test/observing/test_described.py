"""Described kinds from object to observation: the projection a description reads and the
rules applied to it, on objects as their controllers write them (no I/O)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from megamon.domain import labels
from megamon.domain.descriptions import KindDescription, shipped
from megamon.domain.kinds import Kind
from megamon.domain.observations import WorkloadAttrs
from megamon.errors import ObservationError
from megamon.observing.cluster import WorkloadObservers, observe_workloads
from megamon.observing.common import Reuse, Settings
from megamon.observing.described import DescribedObserver, observe_described
from megamon.observing.workloads import WorkloadObserver
from megamon.sources.kube.described import described_projection
from megamon.sources.kube.projections import jobset_view
from megamon.sources.kube.snapshot import ClusterSnapshot

V5E, V6E = "tpu-v5-lite-podslice", "tpu-v6e-slice"


def replicated_job(name: str, replicas: int | None, selector: dict[str, str]) -> dict[str, Any]:
    job: dict[str, Any] = {
        "name": name,
        "template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}},
    }
    if replicas is not None:
        job["replicas"] = replicas
    return job


def jobset(*jobs: dict[str, Any], ready: list[int] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "js", "namespace": "ns", "uid": "uid-js"},
        "spec": {"replicatedJobs": list(jobs)},
        "status": {
            "replicatedJobsStatus": [{"name": "j", "ready": n} for n in ready or []],
            **status,
        },
    }


def test_go_jobset_attrs_come_from_the_last_replicated_job_that_names_them() -> None:
    """Go megamon, internal/aggregator/utils/utils.go ``ExtractJobSetAttrs``: it walks every
    replicated job's ``nodeSelector`` in order and assigns accelerator, topology and spot as
    it meets them, so the last replicated job naming a key wins (a later ``spot: "false"``
    unsets spot); chips add up ``replicas × chips(topology)`` over every replicated job."""
    first = replicated_job("a", 2, {labels.TPU_ACCELERATOR: V5E, labels.TPU_TOPOLOGY: "2x4",
                                    labels.SPOT: "true"})  # fmt: skip
    second = replicated_job("b", 1, {labels.TPU_ACCELERATOR: V6E, labels.TPU_TOPOLOGY: "4x4",
                                     labels.SPOT: "false"})  # fmt: skip
    cpu = replicated_job("c", 3, {"cloud.google.com/machine-family": "n2"})
    observed = WorkloadObserver().jobsets([jobset_view(jobset(first, second, cpu))], Settings())
    attrs = observed.observations["uid-js"].attrs
    assert (attrs.tpu_accelerator, attrs.tpu_topology, attrs.spot) == (V6E, "4x4", False)
    assert attrs.tpu_chip_count == 2 * 8 + 1 * 16


def test_a_jobset_nodes_series_has_the_same_tpu_labels_as_its_jobset() -> None:
    first = replicated_job("a", 1, {labels.TPU_TOPOLOGY: "2x4"})
    second = replicated_job("b", 1, {labels.TPU_TOPOLOGY: "4x4", labels.SPOT: "true"})
    views = [jobset_view(jobset(first, second))]
    observer = WorkloadObserver()
    js = observer.jobsets(views, Settings()).observations["uid-js"].attrs
    nodes = observer.jobset_nodes(views, [], 0, Settings()).observations["uid-js"].attrs
    assert js == nodes and (js.tpu_topology, js.spot) == ("4x4", True)


@given(
    jobs=st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(0, 5)),
            st.sampled_from(["", "2x2", "2x4", "4x4"]),
            st.sampled_from([None, "true", "false"]),
        ),
        max_size=4,
    ),
    ready=st.lists(st.integers(0, 5), max_size=3),
    ending=st.sampled_from([None, "Completed", "Failed", "Suspended", "StartupPolicyCompleted"]),
)
def test_the_jobset_description_reads_what_the_jobset_rules_say(
    jobs: list[tuple[int | None, str, str | None]], ready: list[int], ending: str | None
) -> None:
    """docs/rules.md: expected Σ replicas (1 when unset), ready Σ replicatedJobsStatus.ready
    (0 once ended), Completed expected down, Failed/Suspended down; attrs as the Go megamon."""
    raw_jobs = []
    for index, (replicas, topology, spot) in enumerate(jobs):
        selector = {labels.TPU_TOPOLOGY: topology} if topology else {}
        if spot is not None:
            selector[labels.SPOT] = spot
        raw_jobs.append(replicated_job(f"j{index}", replicas, selector))
    conditions = [{"type": ending, "status": "True"}] if ending else []
    obj = jobset(*raw_jobs, ready=ready, conditions=conditions)
    obs = WorkloadObserver().jobsets([jobset_view(obj)], Settings()).observations["uid-js"]
    terminal = ending if ending in ("Completed", "Failed", "Suspended") else ""
    assert obs.expected == sum(1 if r is None else r for r, _, _ in jobs)
    assert obs.ready == (0 if terminal else sum(ready))
    assert obs.status == terminal and obs.expected_down is (terminal == "Completed")
    topologies = [t for _, t, _ in jobs if t]
    spots = [s for _, _, s in jobs if s is not None]
    assert obs.attrs.tpu_topology == (topologies[-1] if topologies else "")
    assert obs.attrs.spot is (bool(spots) and spots[-1] == "true")
    chips = {"2x2": 4, "2x4": 8, "4x4": 16}
    replicas = [1 if r is None else r for r, _, _ in jobs]
    expected_chips = sum(n * chips[t] for n, (_, t, _) in zip(replicas, jobs, strict=True) if t)
    assert obs.attrs.tpu_chip_count == expected_chips


RAYJOB = KindDescription.model_validate(
    {
        "Noun": "rayjob",
        "Group": "ray.io",
        "Version": "v1",
        "Resource": "rayjobs",
        "Expected": {
            "Each": "spec.rayClusterSpec.workerGroupSpecs[*]",
            "Path": "replicas",
            "Times": ["numOfHosts"],
            "Default": 1,
        },
        "Ready": {"Path": "status.rayClusterStatus.readyWorkerReplicas"},
        "ReadyWhen": [{"Type": "Provisioned"}],
        "Completed": [{"Type": "Finished", "Reason": "Succeeded"}],
        "Failed": [{"Type": "Finished", "Reason": "Failed"}],
        "NodeSelector": {
            "Each": "spec.rayClusterSpec.workerGroupSpecs[*]",
            "Path": "template.spec.nodeSelector",
            "Replicas": ["replicas", "numOfHosts"],
        },
        "Labels": {"Name": "rayjob_name", "Namespace": "rayjob_namespace", "UID": "rayjob_uid"},
        "EventFile": "rayjobs.json",
    }
)


def rayjob(ready: Any = 8, conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    group = {
        "replicas": 2,
        "numOfHosts": 4,
        "template": {"spec": {"nodeSelector": {labels.TPU_TOPOLOGY: "4x4"}, "containers": [
            {"name": "ray-worker", "resources": {"limits": {labels.RESOURCE_TPU: "4"}}}]}},
    }  # fmt: skip
    return {
        "metadata": {"name": "ray", "namespace": "ml", "uid": "uid-ray"},
        "spec": {"rayClusterSpec": {"workerGroupSpecs": [group, {"replicas": 1}]}},
        "status": {
            "rayClusterStatus": {"readyWorkerReplicas": ready},
            "conditions": conditions
            if conditions is not None
            else [{"type": "Provisioned", "status": "True"}],
        },
    }


def test_a_kind_megamon_has_never_seen_is_observed_from_its_description() -> None:
    view = described_projection(RAYJOB)(rayjob())
    assert (view.expected, view.ready) == (2 * 4 + 1, 8)
    observed = DescribedObserver(RAYJOB)([view], Settings())
    obs = observed.observations["uid-ray"]
    assert not obs.up and obs.expected == 9
    assert isinstance(obs.attrs, WorkloadAttrs)
    assert (obs.attrs.workload_name, obs.attrs.workload_namespace) == ("ray", "ml")
    # 2 replicas of 4 hosts, each pod asking for 4 chips: two 4x4 slices
    assert (obs.attrs.workload_uid, obs.attrs.tpu_chip_count) == ("uid-ray", 2 * 4 * 4)


def test_ready_counts_only_while_the_ready_when_conditions_hold() -> None:
    project = described_projection(RAYJOB)
    assert project(rayjob(conditions=[])).ready == 0
    assert project(rayjob(conditions=[{"type": "Provisioned", "status": "False"}])).ready == 0


@pytest.mark.parametrize(
    ("reason", "status", "expected_down"),
    [("Succeeded", "Finished", True), ("Failed", "Finished", False)],
)
def test_an_ending_condition_may_need_a_reason(
    reason: str, status: str, expected_down: bool
) -> None:
    ended = rayjob(conditions=[{"type": "Finished", "status": "True", "reason": reason}])
    view = described_projection(RAYJOB)(ended)
    obs = DescribedObserver(RAYJOB)([view], Settings()).observations["uid-ray"]
    assert (obs.status, obs.expected_down, obs.ready, obs.up) == (status, expected_down, 0, False)
    other = rayjob(conditions=[{"type": "Finished", "status": "True", "reason": "Other"}])
    assert described_projection(RAYJOB)(other).terminal == ""


@pytest.mark.parametrize("bad", [-1, "8", 1.5, True])
def test_a_count_of_the_wrong_type_names_the_object_and_the_path(bad: object) -> None:
    with pytest.raises(ObservationError, match=r"rayjob ml/ray: ready .*readyWorkerReplicas"):
        described_projection(RAYJOB)(rayjob(ready=bad))


def test_an_unchanged_object_gives_the_same_observation_object() -> None:
    project = described_projection(RAYJOB)
    reuse: Reuse[str, Any] = Reuse()
    fields = RAYJOB.Labels.attr_fields()
    kind = RAYJOB.kind
    first = observe_described(kind, [project(rayjob())], fields, Settings(), reuse)
    again = observe_described(kind, [project(rayjob())], fields, Settings(), reuse)
    assert again.observations["uid-ray"] is first.observations["uid-ray"]


def test_the_trainjob_description_counts_child_jobs() -> None:
    trainjob = shipped("trainjob")
    created = {"metadata": {"name": "t", "namespace": "ns", "uid": "u"}, "spec": {}}
    view = described_projection(trainjob)(created)
    assert (view.expected, view.ready) == (1, 0), "created: one expected, none ready"
    running = {
        **created,
        "status": {"jobsStatus": [{"name": "node", "ready": 2, "active": 2, "succeeded": 0,
                                   "failed": 0, "suspended": 0}]},
    }  # fmt: skip
    view = described_projection(trainjob)(running)
    assert (view.expected, view.ready) == (2, 2)


def test_the_memos_belong_to_the_observer_object_not_the_module() -> None:
    """Each ``WorkloadObservers`` (built once in ``megamon.app``) keeps its own memo: an
    unchanged JobSet gives the same observation object to the same observers, and a fresh
    set of observers builds its own."""
    first = replicated_job("a", 1, {labels.TPU_TOPOLOGY: "2x4"})
    snapshot = ClusterSnapshot(jobsets={"ns/js": jobset_view(jobset(first))})
    kinds = {Kind.JOBSET}

    def observe(observers: WorkloadObservers) -> object:
        batch = observe_workloads(snapshot, kinds, {}, Settings(), 0, observers=observers).batch
        return batch[Kind.JOBSET]["uid-js"]

    observers = WorkloadObservers()
    once = observe(observers)
    assert observe(observers) is once
    other = observe(WorkloadObservers())
    assert other == once and other is not once


def _with_expected(expected: dict[str, Any]) -> KindDescription:
    return KindDescription.model_validate({**RAYJOB.model_dump(), "Expected": expected})


@pytest.mark.parametrize(
    ("expected", "named"),
    [
        ({"Path": "spec.replicaz"}, "spec.replicaz"),  # a typo of a plain count
        ({"Each": "spec.rayClusterSpec.workerGroupSpec[*]", "Path": "replicas"}, "workerGroupSpec"),
        ({"Each": "spec.rayClusterSpec.workerGroupSpecs[*]", "Path": "replicaz"}, "replicaz"),
    ],
)
def test_an_expected_count_that_matches_nothing_is_an_error_not_0_of_0_up(
    expected: dict[str, Any], named: str
) -> None:
    with pytest.raises(
        ObservationError, match=rf"rayjob ml/ray: expected: nothing matches .*{named}"
    ):
        described_projection(_with_expected(expected))(rayjob())


def test_an_expected_count_with_a_default_is_that_default_when_nothing_matches() -> None:
    lws_like = _with_expected({"Path": "spec.replicas", "Default": 1})
    assert described_projection(lws_like)(rayjob()).expected == 1
    ready_missing = rayjob()
    del ready_missing["status"]["rayClusterStatus"]
    assert described_projection(RAYJOB)(ready_missing).ready == 0  # no status yet: not an error


def test_a_resource_that_cannot_be_observed_keeps_its_last_observation() -> None:
    observer = DescribedObserver(RAYJOB)
    good = described_projection(RAYJOB)(rayjob())
    first = observer([good], Settings()).observations["uid-ray"]
    broken = dataclasses.replace(good, shapes=(("4x", 2),), chips=None)  # no topology
    observed = observer([broken], Settings())
    assert observed.observations["uid-ray"] is first  # unobserved now, not gone
    assert [p.reason for p in observed.problems] == ["invalid"]
    assert observer([good], Settings()).observations["uid-ray"] is first
    never_seen = dataclasses.replace(broken, uid="uid-other")
    assert "uid-other" not in observer([never_seen], Settings()).observations


def kueue_workload(*conditions: dict[str, str]) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": {labels.TPU_TOPOLOGY: "4x4"}}}
    return {
        "metadata": {
            "name": "w",
            "namespace": "ml",
            "uid": "uid-w",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"podSets": [{"name": "main", "count": 4, "template": template}]},
        "status": {"conditions": list(conditions)},
    }


def test_the_kueue_description_reads_when_a_workload_got_quota_and_admission() -> None:
    workload = shipped("kueue-workload")
    reserved = {
        "type": "QuotaReserved",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:01:30Z",
    }
    admitted = {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-01-01T00:02:30Z"}
    project = described_projection(workload)
    created = 1_767_225_600 * 10**9
    assert project(kueue_workload()).queued == ()
    assert project(kueue_workload(reserved)).queued == (
        ("quota_reserved", created, created + 90 * 10**9),
    )
    view = project(kueue_workload(reserved, admitted))
    observed = DescribedObserver(workload)([view], Settings())
    assert observed.observations["uid-w"].queued == (
        ("quota_reserved", created, created + 90 * 10**9),
        ("admitted", created, created + 150 * 10**9),
    )
    unreadable = {**admitted, "lastTransitionTime": "yesterday"}
    assert [s for s, _, _ in project(kueue_workload(unreadable)).queued] == [], "never guessed"
    waiting = {**admitted, "status": "False"}
    assert project(kueue_workload(waiting)).queued == ()
