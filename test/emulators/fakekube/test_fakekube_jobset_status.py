"""The JobSet status of restarts through the official client: the emulator serves the fields
and the ``RestartingJobSet`` condition of the JobSet release it is told (v0.12.0 by default),
and prunes from every write the fields an older release's CRD lacks, as the real API server
prunes unknown fields of a structural schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from internal.fakekube import FakeKube
from internal.fakekube.objects import obj
from internal.fakekube.resources import served_resources
from internal.fakekube.strategy import prune

JS = ("jobset.x-k8s.io", "v1alpha2")

RESTART_STATUS: dict[str, Any] = {
    "restarts": 1,
    "restartsCountTowardsMax": 1,
    "replicatedJobsStatus": [
        {"name": "w", "ready": 2, "jobRestarts": [0, 3], "jobRestartsCountTowardsMax": [0, 2]}
    ],
    "previousInPlaceRestartAttempt": 4,
    "currentInPlaceRestartAttempt": 5,
    "conditions": [
        {"type": "RestartingJobSet", "status": "False", "reason": "JobsReady",
         "message": "all jobs are ready", "lastTransitionTime": "2026-05-01T00:00:07Z"}
    ],
}  # fmt: skip


def served(release: str | None, tmp_path: Path) -> Iterator[client.CustomObjectsApi]:
    kube = FakeKube(**({"jobset_release": release} if release else {}))
    kube.start()
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc")))
    try:
        yield client.CustomObjectsApi(api)
    finally:
        api.close()
        kube.stop()
    assert not kube.server_errors


def write_status(custom: client.CustomObjectsApi) -> Any:
    custom.create_namespaced_custom_object(*JS, "ml", "jobsets", obj("JobSet", "js", "ml"))
    status = {"status": RESTART_STATUS}
    custom.patch_namespaced_custom_object_status(*JS, "ml", "jobsets", "js", status)
    return custom.get_namespaced_custom_object(*JS, "ml", "jobsets", "js")["status"]


def test_the_newest_release_serves_every_restart_field_and_the_condition(
    tmp_path: Path,
) -> None:
    for custom in served(None, tmp_path):
        assert write_status(custom) == RESTART_STATUS


def test_a_main_resource_put_keeps_the_restart_status(tmp_path: Path) -> None:
    """A client updating the spec never resets the controller's counts (status subresource)."""
    for custom in served(None, tmp_path):
        write_status(custom)
        current = custom.get_namespaced_custom_object(*JS, "ml", "jobsets", "js")
        current["status"] = {"restarts": 0}
        custom.replace_namespaced_custom_object(*JS, "ml", "jobsets", "js", current)
        found = custom.get_namespaced_custom_object(*JS, "ml", "jobsets", "js")["status"]
        assert found == RESTART_STATUS


@pytest.mark.parametrize(
    ("release", "kept_in_place", "kept_job_restarts"),
    [("v0.12.0", True, True), ("v0.11.1", True, False), ("v0.10.0", False, False)],
)
def test_an_older_release_prunes_the_fields_its_crd_lacks(
    tmp_path: Path, release: str, kept_in_place: bool, kept_job_restarts: bool
) -> None:
    for custom in served(release, tmp_path):
        found = write_status(custom)
        assert ("currentInPlaceRestartAttempt" in found) is kept_in_place
        assert ("previousInPlaceRestartAttempt" in found) is kept_in_place
        (replicated,) = found["replicatedJobsStatus"]
        assert ("jobRestarts" in replicated) is kept_job_restarts
        assert ("jobRestartsCountTowardsMax" in replicated) is kept_job_restarts
        assert replicated["ready"] == 2 and found["restarts"] == 1
        assert found["conditions"] == RESTART_STATUS["conditions"]


def test_pruning_never_changes_what_was_stored_before() -> None:
    """Nested values are shared with stored objects: pruning copies along its path."""
    (jobsets,) = [rt for rt in served_resources("v0.10.0") if rt.kind == "JobSet"]
    replicated = [{"name": "w", "jobRestarts": [1]}]
    status = {"replicatedJobsStatus": replicated, "currentInPlaceRestartAttempt": 1}
    written = {"status": status}
    prune(jobsets, written)
    assert written == {"status": {"replicatedJobsStatus": [{"name": "w"}]}}
    assert replicated == [{"name": "w", "jobRestarts": [1]}]
    assert "currentInPlaceRestartAttempt" in status


def test_a_release_that_is_not_one_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="JobSet release 'latest'"):
        served_resources("latest")
