"""Described kinds that end and become ready by a field's value rather than a condition (a
KubeRay RayJob's ``status.jobDeploymentStatus``), and chips counted from the pods' TPU
requests or a declared count per replica rather than one slice per replica (no I/O)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from megamon.domain import interruptions, labels
from megamon.domain.descriptions import KindDescription, shipped
from megamon.domain.observations import Observation
from megamon.errors import ObservationError
from megamon.observing.common import Settings
from megamon.observing.described import DescribedObserver
from megamon.sources.kube.described import described_projection

RAYJOB = shipped("rayjob")
V6E_4X4 = {labels.TPU_ACCELERATOR: "tpu-v6e-slice", labels.TPU_TOPOLOGY: "4x4"}


def _pod(selector: dict[str, str], chips: object = None, *, limit: bool = True) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "ray", "image": "rayproject/ray"}
    if chips is not None:
        container["resources"] = {"limits" if limit else "requests": {labels.RESOURCE_TPU: chips}}
    return {"spec": {"nodeSelector": selector, "containers": [container]}}


def rayjob(status: dict[str, Any], *, workers: int = 2, hosts: int = 4) -> dict[str, Any]:
    """A RayJob as KubeRay's ray.io/v1 schema has it: a CPU head, one TPU worker group of
    ``workers`` replicas of ``hosts`` hosts, each pod asking for 4 chips."""
    head = {"rayStartParams": {}, "template": _pod({})}
    group = {
        "groupName": "tpu",
        "replicas": workers,
        "minReplicas": 0,
        "maxReplicas": workers,
        "numOfHosts": hosts,
        "rayStartParams": {},
        "template": _pod(V6E_4X4, "4"),
    }
    return {
        "metadata": {"name": "ray", "namespace": "ml", "uid": "uid-ray"},
        "spec": {
            "entrypoint": "python train.py",
            "rayClusterSpec": {"headGroupSpec": head, "workerGroupSpecs": [group]},
        },
        "status": status,
    }


def running(ready: int = 8) -> dict[str, Any]:
    return {
        "jobDeploymentStatus": "Running",
        "jobStatus": "RUNNING",
        "rayClusterStatus": {"readyWorkerReplicas": ready, "desiredWorkerReplicas": 8},
    }


def observe(description: KindDescription, obj: dict[str, Any]) -> Observation:
    view = described_projection(description)(obj)
    observed = DescribedObserver(description)([view], Settings())
    assert not observed.problems, observed.problems
    return observed.observations[view.uid]


def test_a_running_rayjob_is_up_when_every_worker_pod_is_ready() -> None:
    obs = observe(RAYJOB, rayjob(running()))
    assert (obs.expected, obs.ready, obs.up) == (2 * 4, 8, True)
    assert (obs.attrs.tpu_accelerator, obs.attrs.tpu_topology) == ("tpu-v6e-slice", "4x4")
    assert obs.attrs.tpu_chip_count == 2 * 4 * 4, "two 4x4 slices of four 4-chip hosts"


@pytest.mark.parametrize("deployment", ["", "Initializing", "Waiting", "Retrying"])
def test_ready_workers_count_only_while_the_job_deployment_is_running(deployment: str) -> None:
    status = {**running(), "jobDeploymentStatus": deployment}
    if not deployment:
        del status["jobDeploymentStatus"]  # a new RayJob: KubeRay omits the empty status
    obs = observe(RAYJOB, rayjob(status))
    assert (obs.ready, obs.up, obs.status) == (0, False, "")


@pytest.mark.parametrize(
    ("deployment", "job", "status", "expected_down", "reason"),
    [
        ("Complete", "SUCCEEDED", "SUCCEEDED", True, ""),
        ("Complete", "STOPPED", "STOPPED", False, interruptions.FAILED),
        ("Failed", "FAILED", "Failed", False, interruptions.FAILED),
        ("ValidationFailed", "", "ValidationFailed", False, interruptions.FAILED),
        ("Suspended", "", "Suspended", False, interruptions.SUSPENDED),
    ],
)
def test_a_rayjob_ends_by_its_job_deployment_status(
    deployment: str, job: str, status: str, expected_down: bool, reason: str
) -> None:
    """KubeRay sets no condition on a RayJob: Complete with jobStatus SUCCEEDED is its planned
    end; Complete otherwise (a stopped job), Failed and ValidationFailed are failures."""
    ended = {"jobDeploymentStatus": deployment, "rayClusterStatus": {"readyWorkerReplicas": 8}}
    if job:
        ended["jobStatus"] = job
    obs = observe(RAYJOB, rayjob(ended))
    assert (obs.status, obs.expected_down, obs.ready, obs.up) == (status, expected_down, 0, False)
    assert obs.reason == reason


def _kind(**changes: Any) -> KindDescription:
    return KindDescription.model_validate({**RAYJOB.model_dump(), **changes})


def test_a_condition_ending_wins_over_a_field_ending_that_holds_at_once() -> None:
    """Conditions rank by their place in status.conditions, field values after them."""
    kind = _kind(Suspended=[{"Type": "Suspended"}])
    both = {
        "jobDeploymentStatus": "Failed",
        "conditions": [{"type": "Suspended", "status": "True"}],
    }
    assert observe(kind, rayjob(both)).status == "Suspended"
    false = {**both, "conditions": [{"type": "Suspended", "status": "False"}]}
    assert observe(kind, rayjob(false)).status == "Failed"


def test_none_of_holds_for_a_missing_field() -> None:
    kind = _kind(ReadyWhen=[{"Field": "status.jobDeploymentStatus", "NoneOf": ["Suspended"]}])
    status = running()
    del status["jobDeploymentStatus"]
    assert observe(kind, rayjob(status)).up
    assert not observe(kind, rayjob({**status, "jobDeploymentStatus": "Suspended"})).up


def test_a_boolean_field_reads_as_true_or_false() -> None:
    kind = _kind(Suspended=[{"Field": "spec.suspend", "AnyOf": ["true"]}])
    suspended = rayjob(running())
    suspended["spec"]["suspend"] = True
    assert observe(kind, suspended).reason == interruptions.SUSPENDED
    suspended["spec"]["suspend"] = False
    assert observe(kind, suspended).up


def test_a_field_that_holds_an_object_makes_that_object_unobservable_naming_the_field() -> None:
    kind = _kind(ReadyWhen=[{"Field": "status.rayClusterStatus", "AnyOf": ["ready"]}])
    with pytest.raises(ObservationError, match=r"rayjob ml/ray: status.rayClusterStatus must be"):
        described_projection(kind)(rayjob(running()))


PYTORCHJOB = KindDescription.model_validate(
    {
        "Noun": "pytorchjob",
        "Group": "kubeflow.org",
        "Version": "v1",
        "Resource": "pytorchjobs",
        "Expected": {"Each": "spec.pytorchReplicaSpecs.*", "Path": "replicas", "Default": 1},
        "Ready": {"Path": "status.replicaStatuses.*.active"},
        "Completed": [{"Type": "Succeeded"}],
        "Failed": [{"Type": "Failed"}],
        "NodeSelector": {
            "Each": "spec.pytorchReplicaSpecs.*",
            "Path": "template.spec.nodeSelector",
            "Replicas": "replicas",
        },
        "Labels": {"Name": "pt_name", "Namespace": "pt_namespace", "UID": "pt_uid"},
        "EventFile": "pytorchjobs.json",
    }
)
V5E_2X4 = {labels.TPU_ACCELERATOR: "tpu-v5-lite-podslice", labels.TPU_TOPOLOGY: "2x4"}


def pytorchjob(master: dict[str, Any], worker: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "pt", "namespace": "ml", "uid": "uid-pt"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": master},
                "Worker": {"replicas": 1, "template": worker},
            }
        },
        "status": {"replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 1}}},
    }


def test_two_pods_on_one_8_chip_slice_count_8_chips_not_one_slice_each() -> None:
    obs = observe(PYTORCHJOB, pytorchjob(_pod(V5E_2X4, "4"), _pod(V5E_2X4, 4, limit=False)))
    assert (obs.expected, obs.ready, obs.up) == (2, 2, True)
    assert obs.attrs.tpu_chip_count == 8


def test_a_request_wins_over_a_limit_and_a_pod_without_tpus_counts_none() -> None:
    both = _pod(V5E_2X4, "4")
    both["spec"]["containers"][0]["resources"]["requests"] = {labels.RESOURCE_TPU: "2"}
    obs = observe(PYTORCHJOB, pytorchjob(both, _pod({})))
    assert obs.attrs.tpu_chip_count == 2


def test_declared_chips_per_replica_count_for_the_templates_that_select_a_topology() -> None:
    selector = {**PYTORCHJOB.model_dump()["NodeSelector"], "ChipsPerReplica": 4}
    kind = KindDescription.model_validate({**PYTORCHJOB.model_dump(), "NodeSelector": selector})
    obs = observe(kind, pytorchjob(_pod(V5E_2X4), _pod(V5E_2X4)))  # no requests in the templates
    assert obs.attrs.tpu_chip_count == 8
    assert observe(kind, pytorchjob(_pod({}), _pod(V5E_2X4))).attrs.tpu_chip_count == 4


def test_topology_chips_keep_one_slice_per_replica() -> None:
    selector = {**PYTORCHJOB.model_dump()["NodeSelector"], "ChipsPerReplica": "topology"}
    kind = KindDescription.model_validate({**PYTORCHJOB.model_dump(), "NodeSelector": selector})
    assert observe(kind, pytorchjob(_pod(V5E_2X4), _pod(V5E_2X4))).attrs.tpu_chip_count == 16


@pytest.mark.parametrize("bad", ["4.5", "1k", -4, [4]])
def test_a_tpu_request_that_is_no_whole_number_names_the_object_and_the_field(bad: object) -> None:
    with pytest.raises(ObservationError, match=r"pytorchjob ml/pt: .*google.com/tpu must be"):
        described_projection(PYTORCHJOB)(pytorchjob(_pod(V5E_2X4, bad), _pod(V5E_2X4, "4")))


def test_a_kueue_workload_counts_the_chips_of_every_pod_of_a_multislice_pod_set() -> None:
    """A JobSet of two 4x4 slices is one pod set of 8 pods: 32 chips, not one slice's 16."""
    template = _pod(V6E_4X4, "4")
    workload = {
        "metadata": {"name": "w", "namespace": "ml", "uid": "uid-w"},
        "spec": {"podSets": [{"name": "slice", "count": 8, "template": template}]},
    }
    view = described_projection(shipped("kueue-workload"))(workload)
    assert (view.expected, view.chips) == (8, 32)


def test_the_shipped_jobset_and_lws_keep_one_slice_per_replica() -> None:
    """The Go megamon's rule for the built-in kinds: each replica is one whole slice."""
    for name in ("jobset", "leaderworkerset", "trainjob"):
        selector = shipped(name).NodeSelector
        assert selector is not None and selector.ChipsPerReplica == "topology", name


_value = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "Running", "Failed"])
)


@given(value=_value, listed=st.lists(st.sampled_from(["", "Running", "Failed", "true", "1"])))
def test_none_of_holds_exactly_when_any_of_the_same_values_does_not(
    value: object, listed: list[str]
) -> None:
    """Whatever the field holds (missing, a string, a boolean, an integer)."""
    if not listed:
        return
    status: dict[str, Any] = running()
    status["phase"] = value
    obj = rayjob(status)

    def suspended(key: str) -> bool:
        kind = _kind(Suspended=[{"Field": "status.phase", key: listed}])
        return observe(kind, obj).reason == interruptions.SUSPENDED

    assert suspended("AnyOf") is not suspended("NoneOf")
    read = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    assert suspended("AnyOf") is (read in listed)
