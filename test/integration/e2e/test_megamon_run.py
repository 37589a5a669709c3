"""``megamon run`` end to end: a real process against the GKE and Kubernetes emulators and a
fake-gcs-server bucket, read the way Prometheus reads it (``/metrics``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes import config as kube_config

from internal.fakegke import FakeGke
from internal.fakekube.fakekube import FakeKube
from megamon.config import parse_config
from megamon.domain.kinds import Kind
from megamon.recording.loading import load_kind
from megamon.stores.factory import gcs_client
from megamon.stores.gcs import GcsEventStore
from test.crosssurface import PASSED
from test.integration.e2e.harness import MegamonProcess, Samples, check_bucket_history, parse, value
from test.integration.scenarios.test_described_scenarios import (
    PYTORCHJOB_CONFIG,
    pytorchjob_body,
    pytorchjob_crd,
    pytorchjob_status,
)
from test.integration.scenarios.world import CLUSTER, LOCATION, PROJECT, World
from test.otlp_receiver import Receiver, attributes, otlp_receiver, pushed

__all__ = ["otlp_receiver"]  # the receiver fixture

PATH = "megamon/clusters/e2e"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with FakeKube(bookmark_interval=0.5) as kube, FakeGke() as gke:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        api = kube_config.new_client_from_config(config_file=str(kubeconfig))
        w = World(api=api, gke=gke, namespace="team")
        w.kubeconfig = kubeconfig  # type: ignore[attr-defined]
        yield w
        api.close()


@pytest.fixture
def start(
    world: World,
    tmp_path: Path,
    gcs_emulator: Any,
    gcs_bucket: str,
    gcs_client: Any,
    request: pytest.FixtureRequest,
) -> Iterator[Any]:
    """Start ``megamon run`` processes; at the end, stop them cleanly and run the
    cross-surface check on the history they left in the bucket (when the test passed)."""
    running: list[MegamonProcess] = []

    def launch(**overrides: Any) -> MegamonProcess:
        config = {
            "AggregationIntervalSeconds": 1,
            "Exporters": ["configmap", "gcs"],
            "EventsBucketName": gcs_bucket,
            "EventsBucketPath": PATH,
            "GKE": {
                "ProjectID": PROJECT,
                "ClusterLocation": LOCATION,
                "ClusterName": CLUSTER,
                "Endpoint": world.gke.endpoint,
                "ComputeEndpoint": world.gke.endpoint,
            },
            **overrides,
        }
        env = {
            "KUBECONFIG": str(world.kubeconfig),  # type: ignore[attr-defined]
            "STORAGE_EMULATOR_HOST": gcs_emulator.endpoint,
            "GOOGLE_CLOUD_PROJECT": "megamon-test",
        }
        process = MegamonProcess(tmp_path, config, env).start()
        running.append(process)
        return process

    yield launch
    for process in running:
        if process._process is not None and process._process.poll() is None:
            process.stop()
    if request.node.stash.get(PASSED, False):
        check_bucket_history(running, gcs_client, tmp_path)


def provisioning(samples: Samples, state: str) -> float | None:
    return value(
        samples,
        "megamon_nodepool_provisioning_duration_seconds",
        nodepool_name="np",
        provisioning_state=state,
    )


def test_before_the_first_report_metrics_carry_megamons_own_series_only(
    world: World, start: Any
) -> None:
    """What MegamonNoReport needs: megamon_leader is scraped, the report timestamp is not."""
    world.gke.inject_fault(status=403, count=1_000_000)
    megamon = start()
    # A failed cycle is logged after it ends: once the log says so, cycles have run.
    megamon.wait_for(
        lambda: "cannot list node pools" in megamon.log() and "403" in megamon.log(),
        "a cycle that could not list node pools",
    )
    status, body = megamon.metrics()
    assert status == 200, body
    samples = parse(body)
    assert value(samples, "megamon_leader") == 1.0
    assert value(samples, "megamon_last_report_timestamp_seconds") is None
    world.gke.clear_faults()
    samples = megamon.settle(
        lambda s: value(s, "megamon_last_report_timestamp_seconds") is not None, "first report"
    )
    assert value(samples, "megamon_leader") == 1.0


def test_a_pool_provisioning_then_failed_then_successful(world: World, start: Any) -> None:
    world.pool("np", "PROVISIONING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    megamon = start()
    samples = megamon.settle(lambda s: provisioning(s, "provisioning") is not None, "provisioning")
    assert value(samples, "megamon_nodepool_up", nodepool_name="np") == 0.0
    assert value(samples, "megamon_nodepool_tpu_chip_count", nodepool_name="np") == 8.0
    labels = {k: v for (n, lab), _ in samples.items() if n == "megamon_nodepool_up" for k, v in lab}
    assert labels == {
        "nodepool_name": "np",
        "tpu_topology": "2x4",
        "tpu_accelerator": "tpu-v5-lite-podslice",
    }

    world.pool_status("np", "ERROR")
    failed = megamon.settle(lambda s: provisioning(s, "failed") is not None, "failed")
    frozen = provisioning(failed, "failed")
    time.sleep(2.0)
    assert provisioning(megamon.scrape(), "failed") == frozen  # frozen when failure was seen

    world.pool_status("np", "RUNNING")
    world.node("np-0", "np", topology="2x4")
    done = megamon.settle(lambda s: provisioning(s, "success") is not None, "success")
    succeeded = provisioning(done, "success")
    assert succeeded is not None and frozen is not None and succeeded >= frozen
    assert value(done, "megamon_nodepool_up", nodepool_name="np") == 1.0
    assert (
        value(done, "megamon_nodepool_down_time_initial_seconds", nodepool_name="np") == succeeded
    )
    assert provisioning(done, "failed") is None


def test_a_restart_continues_the_history_from_gcs(world: World, start: Any) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    first = start()
    first.settle(lambda s: value(s, "megamon_nodepool_up", nodepool_name="np") == 1.0, "up")
    world.ready("np-0", "False")
    first.settle(
        lambda s: value(s, "megamon_nodepool_interruption_count", nodepool_name="np") == 1.0,
        "interruption",
    )
    world.ready("np-0", "True")
    before = first.settle(
        lambda s: value(s, "megamon_nodepool_recovery_count", nodepool_name="np") == 1.0, "recovery"
    )
    assert first.stop() == 0

    second = start()
    after = second.settle(
        lambda s: value(s, "megamon_nodepool_up", nodepool_name="np") == 1.0, "up after restart"
    )
    for name in (
        "megamon_nodepool_interruption_count",
        "megamon_nodepool_recovery_count",
        "megamon_nodepool_down_time_initial_seconds",
        "megamon_nodepool_down_time_between_recovery_latest_seconds",
    ):
        assert value(after, name, nodepool_name="np") == value(before, name, nodepool_name="np")
    up_before = value(before, "megamon_nodepool_up_time_seconds", nodepool_name="np")
    up_after = value(after, "megamon_nodepool_up_time_seconds", nodepool_name="np")
    assert up_before is not None and up_after is not None and up_after > up_before


def test_reports_go_to_gcs_and_the_configmap(
    world: World, start: Any, gcs_client: Any, gcs_bucket: str
) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    uid = world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1)
    megamon = start()
    megamon.settle(lambda s: value(s, "megamon_jobset_up", jobset_uid=uid) == 1.0, "jobset up")
    bucket = gcs_client.bucket(gcs_bucket)

    # The report is published, then exported: latest.json first, then the hour's archive, so
    # wait for the second write of that cycle.
    def archived() -> list[str]:
        return [b.name for b in gcs_client.list_blobs(gcs_bucket, prefix=f"{PATH}/reports/2")]

    megamon.wait_for(lambda: bool(archived()), "export")
    latest = orjson.loads(bucket.blob(f"{PATH}/reports/latest.json").download_as_bytes())
    assert latest["nodePoolsUp"]["np"]["readyCount"] == 1
    archives = archived()
    assert len(archives) == 1 and archives[0].endswith("Z.json")
    # History is appended by its own loop, at most a second after it was recorded; the
    # Go-format file is a snapshot (every SnapshotIntervalSeconds and at shutdown).
    store = GcsEventStore(gcs_client, gcs_bucket, PATH)

    def recorded() -> bool:
        return "np" in load_kind(store, Kind.NODEPOOL).history.records

    megamon.wait_for(recorded, "history")
    record = load_kind(store, Kind.NODEPOOL).history.records["np"]
    assert [e.up for e in record.events] == [False, True]

    core = k8s.CoreV1Api(world.api)
    megamon.wait_for(
        lambda: bool(core.list_namespaced_config_map("megamon-system").items), "configmap"
    )
    cm = core.read_namespaced_config_map("megamon-report", "megamon-system")
    report = orjson.loads(cm.data["report"])
    assert report["jobSetsUp"][uid]["jobsetName"] == "train"
    assert report["nodePoolsUpSummaries"]["np"]["provisioningState"] == "success"


def test_every_kind_metric_has_the_design_names(world: World, start: Any) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    uid = world.jobset("train", replicas=1)
    world.jobset_status("train", ready=1)
    megamon = start(MetricsPrefix="megamon.alpha")
    samples = megamon.settle(
        lambda s: value(s, "megamon_alpha_jobset_up", jobset_uid=uid) == 1.0, "jobset up"
    )
    names = {name for name, _ in samples}
    for kind in ("nodepool", "jobset", "jobset_nodes"):
        for suffix in (
            "up",
            "up_time_seconds",
            "down_time_seconds",
            "interruption_count",
            "recovery_count",
            "provisioning_duration_seconds",
        ):
            assert f"megamon_alpha_{kind}_{suffix}" in names, (kind, suffix)
    assert "megamon_alpha_build_info" in names and "megamon_alpha_leader" in names
    assert "megamon_alpha_last_report_timestamp_seconds" in names
    assert value(samples, "megamon_alpha_last_observation_timestamp_seconds", source="gke")


def test_two_replicas_with_leader_election_hand_over(world: World, start: Any) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    first = start(EnableLeaderElection=True)
    first.settle(lambda s: value(s, "megamon_nodepool_up", nodepool_name="np") == 1.0, "leader")
    second = start(EnableLeaderElection=True)
    standby = second.settle(lambda s: value(s, "megamon_leader") == 0.0, "standby")
    assert {name for name, _ in standby} == {"megamon_build_info", "megamon_leader"}
    assert value(first.scrape(), "megamon_leader") == 1.0

    assert first.stop() == 0  # releases the lease on the way out
    took_over = second.settle(
        lambda s: value(s, "megamon_nodepool_up", nodepool_name="np") == 1.0, "hand-over"
    )
    assert value(took_over, "megamon_leader") == 1.0


def test_simulation_mode_infers_node_pools_and_needs_no_cloud(world: World, start: Any) -> None:
    world.node("sim-0", "sim", topology="2x4")
    world.node("sim-1", "sim", topology="2x4")
    megamon = start(
        EnableSimulation=True,
        EventsBucketName="",
        Exporters=[],
        GKE={"Endpoint": "http://127.0.0.1:9"},
    )
    samples = megamon.settle(
        lambda s: value(s, "megamon_nodepool_up", nodepool_name="sim") == 1.0, "simulated pool"
    )
    assert value(samples, "megamon_nodepool_tpu_chip_count", nodepool_name="sim") == 8.0
    # The start-up line is written after the loops start, so it may follow the first scrape.
    megamon.wait_for(lambda: "history in memory:" in megamon.log(), "the start-up log line")


def test_a_tpu7x_pool_placed_by_a_workload_policy_is_measured_from_no_node_to_up(
    world: World, start: Any
) -> None:
    """``megamon run`` reads the pool's topology from Compute Engine (``GKE.ComputeEndpoint``)
    and times the call; the pool is provisioning with its labels before its first node."""
    world.workload_policy("wp", "2x2x2")
    world.tpu7x_pool("np", "wp", "2x2x2", "PROVISIONING")
    megamon = start()
    samples = megamon.settle(lambda s: provisioning(s, "provisioning") is not None, "provisioning")
    labels = {k: v for (n, lab), _ in samples.items() if n == "megamon_nodepool_up" for k, v in lab}
    assert labels == {"nodepool_name": "np", "tpu_topology": "2x2x2", "tpu_accelerator": "tpu7x"}
    assert value(samples, "megamon_nodepool_tpu_chip_count", nodepool_name="np") == 8.0
    got = {"method": "GetResourcePolicy"}
    assert value(samples, "megamon_gke_latency_seconds_count", **got, error="false") == 1.0
    assert value(samples, "megamon_gke_latency_seconds_count", **got, error="true") == 0.0
    for i in range(2):
        world.node(f"np-{i}", "np", topology="2x2x2", accelerator="tpu7x")
    world.pool_status("np", "RUNNING")
    done = megamon.settle(lambda s: provisioning(s, "success") is not None, "success")
    assert value(done, "megamon_nodepool_up", nodepool_name="np") == 1.0
    assert (provisioning(done, "success") or 0) > 0


def test_the_leader_publishes_its_own_instruments(world: World, start: Any) -> None:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    megamon = start()
    samples = megamon.settle(
        lambda s: (value(s, "megamon_aggregation_duration_seconds_count") or 0) > 0, "cycles"
    )
    listed = value(
        samples, "megamon_gke_latency_seconds_count", method="ListNodePools", error="false"
    )
    assert (listed or 0) > 0
    assert (value(samples, "megamon_gcs_latency_seconds_count", operation="stat") or 0) > 0


def test_otlp_pushes_the_metrics_series_to_the_collector(
    world: World, start: Any, otlp_receiver: Receiver
) -> None:
    """``"Exporters": ["otlp"]``, as a Go deployment's collector sidecar receives it: the
    series of ``/metrics`` under the scope ``megamon``, from the resource ``megamon``."""
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-8t")
    world.node("np-0", "np", topology="2x4")
    megamon = start(Exporters=["otlp"], OTLPEndpoint=otlp_receiver.url)
    scraped = megamon.settle(
        lambda s: value(s, "megamon_nodepool_up", nodepool_name="np") == 1.0, "up"
    )
    while True:  # the pushes of the cycles before the pool was up carry no pool yet
        request = otlp_receiver.next_request()
        samples = pushed(request)
        if any(n == "megamon_nodepool_up" and v == 1.0 for n, _, v in samples):
            break
    (resource_metrics,) = request.resource_metrics
    assert attributes(list(resource_metrics.resource.attributes))["service.name"] == "megamon"
    assert resource_metrics.scope_metrics[0].scope.name == "megamon"

    # The node pool's series are those of /metrics, with the same labels; the values that do
    # not move with the clock are equal.
    def pool_series(keys: Any) -> set[Any]:
        return {key for key in keys if key[0].startswith("megamon_nodepool_")}

    assert pool_series((n, lab) for n, lab, _ in samples) == pool_series(scraped)
    for n, lab, pushed_value in samples:
        if n in ("megamon_nodepool_up", "megamon_nodepool_tpu_chip_count"):
            assert scraped[(n, lab)] == pushed_value, n


def test_a_kind_declared_in_the_configuration_is_tracked_and_survives_a_restart(
    world: World, start: Any, gcs_bucket: str, gcs_emulator_env: str
) -> None:
    """A kind megamon ships nothing for (docs/kinds.md): its CRD created with the official
    client, declared in config.json, its series on /metrics, its history in the bucket."""
    declared = orjson.dumps({"WorkloadKinds": [PYTORCHJOB_CONFIG]})
    pytorchjob = parse_config(declared, "c").WorkloadKinds[0]
    k8s.ApiextensionsV1Api(world.api).create_custom_resource_definition(pytorchjob_crd())
    uid = world.described(pytorchjob, pytorchjob_body("pt"))
    world.described_status(pytorchjob, "pt", pytorchjob_status(active=2))
    first = start(WorkloadKinds=[PYTORCHJOB_CONFIG, "trainjob"])
    up = first.settle(lambda s: value(s, "megamon_pytorchjob_up", pytorchjob_uid=uid) == 1.0, "up")
    # two pods on one 8-chip slice: 8 chips, not one slice each
    assert value(up, "megamon_pytorchjob_tpu_chip_count", pytorchjob_name="pt") == 8.0
    assert (
        value(up, "megamon_pytorchjob_up", pytorchjob_namespace="team", tpu_topology="2x4") == 1.0
    )
    world.described_status(pytorchjob, "pt", pytorchjob_status(active=1))
    first.settle(
        lambda s: value(s, "megamon_pytorchjob_interruption_count", pytorchjob_uid=uid) == 1.0,
        "down",
    )
    assert "does not serve trainjobs" not in first.log(), "the emulator serves TrainJobs"
    assert first.stop() == 0

    history = GcsEventStore(gcs_client("megamon-test"), gcs_bucket, PATH).read(pytorchjob.kind)
    assert uid in history.records
    second = start(WorkloadKinds=[PYTORCHJOB_CONFIG, "trainjob"])
    after = second.settle(
        lambda s: value(s, "megamon_pytorchjob_interruption_count", pytorchjob_uid=uid) == 1.0,
        "kept",
    )
    assert value(after, "megamon_pytorchjob_up", pytorchjob_uid=uid) == 0.0
