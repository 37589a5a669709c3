"""Switching from the Go megamon: one case per row of the switching table and per deliberate
difference (docs/migrating.md). Each case names the Go source behaviour it pins, as
``file: function`` of the Go megamon (github.com/Asrarfarooq/megamon).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.metrics_core import GaugeMetricFamily

from megamon.app import UNKNOWN_FOREVER_NS, observer_settings
from megamon.codec import history
from megamon.codec import owners as owners_codec
from megamon.codec import report as report_codec
from megamon.config import Config, ConfigMapRef, parse_config
from megamon.domain import labels, timestamps
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.domain.timestamps import MAX_DURATION_NS as MAX_DURATION
from megamon.errors import ConfigError
from megamon.observing.deletions import PoolLedger
from megamon.observing.nodepools import observe_nodepools, observe_nodepools_confirmed
from megamon.observing.slices import observe_slices
from megamon.observing.workloads import observe_jobset_nodes
from megamon.publishing.exporters import build_exporters
from megamon.publishing.exporters.otlp import SCOPE_NAME, OtlpExporter, to_metrics
from megamon.recording.appending import reconcile
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.projections import jobset_view, node_view, slice_view
from megamon.stores.memory import MemoryEventStore
from megamon.summary.summarizing import summarize

T0 = timestamps.parse("2026-05-04T18:00:00Z")
MINUTE = 60 * 10**9
GO_ZERO_TIME = "0001-01-01T00:00:00Z"


# --- Row: report JSON ---------------------------------------------------------------------

GO_REPORT = (
    # What records.Report marshals to for this report (internal/records/report.go: the
    # struct field order; Upness embeds Attrs after expectedDown; UpnessSummaryWithAttrs
    # is Attrs then EventSummary; json.Marshal sorts map keys and escapes "&").
    b'{"jobSetsUp":{},"jobSetsUpSummaries":{},"jobSetNodesUp":{},"jobSetNodesUpSummaries":{},'
    b'"leaderWorkerSetsUp":{},"leaderWorkerSetsUpSummaries":{},'
    b'"nodePoolsUp":{},"nodePoolsUpSummaries":{},'
    b'"slicesUp":{"s1":{"readyCount":1,"expectedCount":1,"unknownCount":0,'
    b'"status":"a\\u0026b","expectedDown":true,'
    b'"jobsetName":"","jobsetNamespace":"","jobsetUID":"","lwsName":"","lwsNamespace":"",'
    b'"lwsUID":"","tpuTopology":"2x2","tpuAccelerator":"","tpuChipCount":4,"spot":false,'
    b'"nodePoolName":"","sliceName":"s1","sliceUID":"uid-s1","sliceOwnerKind":"JobSet",'
    b'"sliceOwnerName":"js","sliceOwnerNamespace":"ml"}},'
    b'"slicesUpSummaries":{"gone":{"jobsetName":"","jobsetNamespace":"","jobsetUID":"",'
    b'"lwsName":"","lwsNamespace":"","lwsUID":"","tpuTopology":"","tpuAccelerator":"",'
    b'"tpuChipCount":0,"spot":false,"nodePoolName":"","sliceName":"","sliceUID":"",'
    b'"sliceOwnerKind":"","sliceOwnerName":"","sliceOwnerNamespace":"",'
    b'"downTimeProvisioned":0,"interruptionCount":0,"recoveryCount":0,"downTime":60000000000,'
    b'"upTime":0,"totalDownTimeBetweenRecovery":0,"totalUpTimeBetweenInterruption":0,'
    b'"latestDownTimeBetweenRecovery":0,"latestUpTimeBetweenInterruption":0,'
    b'"meanDownTimeBetweenRecovery":0,"meanUpTimeBetweenInterruption":0}},'
    b'"nodePoolScheduling":{}}'
)
MEGAMON_KEYS = {"failed", "up", "provisioningDuration", "provisioningState", "generatedAt"}


def _without_new_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_new_keys(v) for k, v in value.items() if k not in MEGAMON_KEYS}
    return value


def _slice_report() -> Report:
    attrs = Attrs(
        slice_name="s1",
        slice_uid="uid-s1",
        slice_owner_kind="JobSet",
        slice_owner_name="js",
        slice_owner_namespace="ml",
        tpu_topology="2x2",
        tpu_chip_count=4,
    )
    up = Observation.build(expected=1, ready=1, status="a&b", expected_down=True, attrs=attrs)
    part = KindReport(observations={"s1": up}, summaries={"gone": Summary(down_time=MINUTE)})
    return Report(generated_at=T0, kinds={Kind.SLICE: part})


def test_report_json_is_the_go_bytes_plus_only_new_keys() -> None:
    """internal/aggregator/exporters.go: ConfigMapExporter.Export / StdoutExporter.Export
    (json.Marshal of records.Report); internal/aggregator/report/report.go:
    Producer.Summarize (a summary without an upness carries zero Attrs)."""
    ours = report_codec.encode_report(_slice_report())
    document = orjson.loads(ours)
    assert set(document) - set(orjson.loads(GO_REPORT)) == {"generatedAt"}
    # Removing megamon's own keys leaves Go's bytes, in Go's order and escaping.
    stripped = report_codec.go_json(_without_new_keys(document))
    assert stripped == GO_REPORT
    # …and megamon's keys only ever follow Go's within an object.
    up = document["slicesUp"]["s1"]
    assert list(up)[-2:] == ["failed", "up"] and up["expectedDown"] is True
    assert ours.startswith(b'{"jobSetsUp":{}') and b"\\u0026" in ours


# --- Row: EventsBucketPath -----------------------------------------------------------------


def test_a_leading_slash_in_events_bucket_path_is_kept_and_one_trailing_one_trimmed() -> None:
    """internal/aggregator/events/eventstore.go: GCSEventStore.Get / Put —
    strings.TrimSuffix(EventsBucketPath, "/") + "/" + filename."""
    config = parse_config(b'{"EventsBucketPath": "/megamon/c1/"}', "c.json")
    assert config.events_path == "/megamon/c1"
    store = MemoryEventStore(config.events_path)
    go_file = b'{"np":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"}]}}'
    store.objects.put_raw("/megamon/c1/node-pools.json", go_file)
    assert set(store.read(Kind.NODEPOOL).records) == {"np"}  # the Go megamon's history
    assert parse_config(b'{"EventsBucketPath": "a//"}', "c.json").events_path == "a/"


# --- Row: metrics delivery (OTLP push) -----------------------------------------------------


def test_otlp_push_uses_the_go_scope_and_the_metrics_names() -> None:
    """internal/metrics/metrics.go: initMeterProvider (OTLP periodic reader, resource
    service.name=megamon) and Init (otel.Meter("megamon")): every pushed series carries
    otel_scope_name="megamon". End to end: test/publishing/exporters/test_otlp_exporter.py."""
    family = GaugeMetricFamily("megamon_nodepool_up", "up", labels=["nodepool_name"])
    family.add_metric(["np"], 1.0)
    (metric,) = to_metrics([family], now=T0, start=T0)
    assert metric.name == "megamon_nodepool_up" and metric.unit == ""
    (exporter,) = build_exporters(
        Config(Exporters=["otlp"]), collect=lambda: [family], version="0.2.0"
    )
    assert isinstance(exporter, OtlpExporter) and SCOPE_NAME == "megamon"


# --- Rows: configs Go accepts, and the empty file it refuses ------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"MetricsPrefix": null, "Exporters": null, "UnknownCountThreshold": null}',
        b'{"GKE": null}',
        b"null",
    ],
)
def test_nulls_leave_the_defaults_as_go_decodes_them(data: bytes) -> None:
    """internal/manager/manager.go: MustConfigure — json.Unmarshal into the defaults: a null
    changes nothing, a top-level null changes nothing."""
    assert parse_config(data, "c.json") == Config()


def test_keys_in_two_spellings_apply_in_order_as_go_decodes_them() -> None:
    """internal/manager/manager.go: MustConfigure — each key decodes into the field it
    folds to, in order: the last value wins, a null changes nothing, sections merge."""
    config = parse_config(
        b'{"MetricsPrefix": "a", "metricsprefix": "b", "METRICSPREFIX": null,'
        b' "GKE": {"ProjectID": "p"}, "gke": {"clustername": "c"}}',
        "c.json",
    )
    assert config.MetricsPrefix == "b"
    assert (config.GKE.ProjectID, config.GKE.ClusterName) == ("p", "c")


def test_a_config_map_ref_with_only_a_name_keeps_the_default_namespace() -> None:
    """internal/manager/manager.go: MustConfigure — ReportConfigMapRef is decoded into its
    default types.NamespacedName{megamon-system, megamon-report}."""
    config = parse_config(b'{"ReportConfigMapRef": {"Name": "r"}}', "c.json")
    assert config.ReportConfigMapRef == ConfigMapRef(Namespace="megamon-system", Name="r")


@pytest.mark.parametrize("data", [b"", b"  \n"])
def test_an_empty_config_file_is_refused_as_go_refuses_it(data: bytes) -> None:
    """internal/manager/manager.go: MustConfigure — json.Unmarshal of empty input fails
    ("unexpected end of JSON input") and the Go megamon exits."""
    with pytest.raises(ConfigError, match="the configuration file is empty"):
        parse_config(data, "c.json")


def test_an_unknown_key_far_from_any_known_one_is_ignored_as_go_ignores_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """internal/manager/manager.go: MustConfigure — encoding/json ignores unknown keys.
    A typo of a known key is refused instead (history must not go to the wrong place)."""
    assert parse_config(b'{"JobSetEventsConfigMapRef": {"Name": "x"}}', "c.json") == Config()
    assert "unknown key JobSetEventsConfigMapRef ignored" in caplog.text
    with pytest.raises(ConfigError, match="did you mean EventsBucketName"):
        parse_config(b'{"EventBucketName": "b"}', "c.json")


# --- Row: summarize on the Go zero time ---------------------------------------------------


@pytest.mark.parametrize(
    ("event", "now", "down_time"),
    [
        (GO_ZERO_TIME, "2026-05-04T18:00:00Z", MAX_DURATION),
        ("2026-05-04T18:00:00Z", GO_ZERO_TIME, 0),
    ],
)
def test_summarize_on_the_go_zero_time_clamps(
    tmp_path: Path, event: str, now: str, down_time: int
) -> None:
    """internal/records/events.go: EventRecords.Summarize — durations are time.Time.Sub,
    which saturates at the largest time.Duration instead of overflowing."""
    path = tmp_path / "node-pools.json"
    path.write_text(f'{{"np":{{"upEvents":[{{"up":false,"ts":"{event}"}}]}}}}')
    done = subprocess.run(
        [sys.executable, "-m", "megamon", "summarize", str(path), "--now", now],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert orjson.loads(done.stdout)["np"]["downTime"] == down_time


# --- Row: event files Go reads -------------------------------------------------------------


def test_event_files_read_keys_in_any_case_null_up_and_missing_flags_as_go_does() -> None:
    """internal/records/events.go: EventRecords / UpEvent decoded by encoding/json —
    case-insensitive keys, null leaves false, a missing "ed" (omitempty) is false."""
    data = (
        b'{"np":{"UpEvents":[{"UP":false,"Ts":"2026-05-04T18:00:00Z"},'
        b'{"Up":true,"TS":"2026-05-04T18:10:00Z","ED":null},'
        b'{"up":null,"ed":true,"ts":"2026-05-04T19:00:00Z"},'
        b'{"ts":"2026-05-04T19:30:00Z","up":true,"other":1}]}}'
    )
    record = history.decode_event_file(data, "node-pools.json")["np"]
    assert [e.up for e in record.events] == [False, True, False, True]
    assert [e.expected_down for e in record.events] == [False, False, True, False]
    assert history.decode_event_file(b'{"np":{"upEvents":null}}', "f")["np"] == EventRecord()
    # Two spellings apply in order; a null leaves a bool as it was but empties a list.
    (event,) = history.decode_event_file(
        b'{"np":{"upEvents":[{"up":true,"UP":null,"ts":"2026-05-04T18:00:00Z","Ts":null}]}}', "f"
    )["np"].events
    assert event.up is True
    emptied = b'{"np":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"}],"UpEvents":null}}'
    assert history.decode_event_file(emptied, "f")["np"] == EventRecord()


# --- Row: never-up failed resource ---------------------------------------------------------


def test_a_never_up_failed_resource_has_no_provisioned_down_time() -> None:
    """internal/records/events.go: EventRecords.Summarize — DownTimeInitial is set only from
    the first up event; a resource that never came up has none."""
    record = history.decode_event_file(
        b'{"np":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"},'
        b'{"up":false,"f":true,"ts":"2026-05-04T18:20:00Z"}]}}',
        "f",
    )["np"]
    summary = summarize(record, T0 + 30 * MINUTE)
    assert summary.down_time_initial == 0
    assert summary.down_time == 30 * MINUTE  # as before
    assert summary.provisioning_duration == 20 * MINUTE  # as before
    assert summary.provisioning_state == ProvisioningState.FAILED


# --- Deliberate differences (docs/migrating.md) --------------------------------------------


def _node(pool: str, status: str, since: str, **extra: str) -> Any:
    labels = {
        "cloud.google.com/gke-nodepool": pool,
        "cloud.google.com/gke-tpu-topology": "2x2",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-accelerator-count": "4",
        **extra,
    }
    condition = {"type": "Ready", "status": status, "lastTransitionTime": since}
    return node_view(
        {"metadata": {"name": f"{pool}-n", "labels": labels}, "status": {"conditions": [condition]}}
    )


def _pool(name: str, topology: str = "2x2", accelerator: str = "") -> NodePoolView:
    return NodePoolView(
        name=name,
        status="RUNNING",
        machine_type="ct5lp-hightpu-4t",
        tpu_topology=topology,
        accelerator=accelerator,
        spot=False,
    )


def test_difference_unknown_node_past_the_grace_period_and_the_switch_back() -> None:
    """internal/k8sutils/utils.go: IsNodeReady — an Unknown node stays Unknown however long
    (its 3-minute check falls through to ConditionUnknown). megamon: not ready after
    NodeUnknownGracePeriodSeconds; 0 is the Go behaviour."""
    node = _node("np", "Unknown", "2026-05-01T00:00:00Z")  # Unknown for days
    default = observe_nodepools([_pool("np")], [node], T0, observer_settings(Config()))
    assert (default.observations["np"].unknown, default.observations["np"].up) == (0, False)
    go = observer_settings(Config(NodeUnknownGracePeriodSeconds=0))
    assert go.grace_ns == UNKNOWN_FOREVER_NS
    as_go = observe_nodepools([_pool("np")], [node], T0, go).observations["np"]
    assert (as_go.unknown, as_go.up) == (1, True)  # within UnknownCountThreshold 1.0


def test_difference_single_host_tpu_pools_are_tracked_with_a_switch() -> None:
    """internal/aggregator/utils.go: isTPUNodePool — only pools with a placement policy
    topology (multi-host) are TPU pools. megamon also tracks single-host TPU pools;
    TrackSingleHostNodePools false asks for the Go behaviour."""
    node = _node("single", "True", "2026-05-01T00:00:00Z")
    observed = observe_nodepools(
        [_pool("single", topology="")], [node], T0, observer_settings(Config())
    )
    assert "single" in observed.observations
    go = parse_config(b'{"TrackSingleHostNodePools": false}', "c.json")
    assert observer_settings(go).single_host_pools is False
    as_go = observe_nodepools(
        [_pool("single", topology=""), _pool("multi")], [node], T0, observer_settings(go)
    )
    assert set(as_go.observations) == {"multi"}


def test_difference_accelerator_falls_back_to_the_node_label() -> None:
    """internal/aggregator/utils.go: extractNodePoolAttrs — the accelerator only from the
    pool's goog-gke-accelerator-type resource label. megamon falls back to the nodes'
    cloud.google.com/gke-tpu-accelerator label (no switch: it only fills an empty label)."""
    node = _node("np", "True", "2026-05-01T00:00:00Z")
    observed = observe_nodepools([_pool("np")], [node], T0, observer_settings(Config()))
    assert observed.observations["np"].attrs.tpu_accelerator == "tpu-v5-lite-podslice"
    labelled = observe_nodepools(
        [_pool("np", accelerator="tpu-v5p-slice")], [node], T0, observer_settings(Config())
    )
    assert labelled.observations["np"].attrs.tpu_accelerator == "tpu-v5p-slice"


def test_difference_a_node_pool_gke_deletes_is_expected_down_whatever_the_order() -> None:
    """internal/aggregator/poller/node_poller.go: PollResources — nodes and pools are read
    together each poll, so a pool whose nodes are gone before GKE reports STOPPING is down and
    not expected (an interruption); internal/records/events.go: AppendStateChangeEvents — a
    pool no longer listed is deleted from the records. megamon holds the down until a later
    ListNodePools says why, stamped when the nodes vanished (no switch: a planned deletion is
    not an interruption)."""
    settings = observer_settings(Config())
    running = _pool("np")
    stopping = dataclasses.replace(running, status="STOPPING")
    node = _node("np", "True", "2026-05-01T00:00:00Z")
    as_go = observe_nodepools([running], [], T0 + MINUTE, settings).observations["np"]
    assert (as_go.up, as_go.expected_down) == (False, False)
    records: dict[str, EventRecord] = {}
    ledger = PoolLedger()
    cycles = [  # (now, GKE's listing, the nodes, when that listing was requested)
        (T0, [running], [node], T0),
        (T0 + MINUTE, [running], [], T0),  # the nodes vanish before the poll
        (T0 + 2 * MINUTE, [stopping], [], T0 + 2 * MINUTE),
    ]
    for now, pools, nodes, polled in cycles:
        observed, ledger = observe_nodepools_confirmed(
            pools, nodes, now, settings, polled_ns=polled, ledger=ledger
        )
        records = reconcile(records, observed.observations, now).records
    last = records["np"].events[-1]
    assert (last.up, last.expected_down, last.ts) == (False, True, T0 + MINUTE)
    assert summarize(records["np"], T0 + 3 * MINUTE).interruption_count == 0


def test_difference_nodes_of_a_completed_jobset_are_expected_down() -> None:
    """internal/controller/workload_reconciler.go: processJobSets — jobsetNodesUp carries no
    ExpectedDown, so the nodes released by a Completed JobSet count as an interruption.
    megamon: expected down, like the JobSet itself (no switch: it is a planned end)."""
    js = jobset_view(
        {
            "metadata": {"name": "train", "namespace": "ml", "uid": "u1"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {}}]},
            "status": {"conditions": [{"type": "Completed", "status": "True"}]},
        }
    )
    observed = observe_jobset_nodes([js], [], T0, observer_settings(Config()))
    assert observed.observations["u1"].expected_down is True


def test_difference_failed_state_and_f_flag_are_read_by_go_as_plain_down() -> None:
    """internal/records/events.go: UpEvent has no "f" field, so encoding/json ignores it and
    the Go megamon knows no failed state. megamon writes "f" only on a down event, reads the
    Go megamon's files unchanged, and RecordFailedProvisioning false writes no "f" at all."""
    record = EventRecord.trusted((T0, T0 + MINUTE), bytes((0, 4)))
    encoded = history.encode_event_file({"np": record})
    assert encoded == (
        b'{"np":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"},'
        b'{"up":false,"f":true,"ts":"2026-05-04T18:01:00Z"}]}}'
    )
    go = parse_config(b'{"RecordFailedProvisioning": false}', "c.json")
    assert observer_settings(go).failed_provisioning is False
    broken = NodePoolView("np", "ERROR", "ct5lp-hightpu-4t", "2x2", "", False)
    ours = observe_nodepools([broken], [], T0, observer_settings(Config())).observations["np"]
    theirs = observe_nodepools([broken], [], T0, observer_settings(go)).observations["np"]
    assert (ours.failed, ours.up) == (True, False)
    assert (theirs.failed, theirs.up) == (False, False)


def test_slices_carry_their_uid_as_go_reports_slice_uid() -> None:
    """internal/records/report.go: the slice attributes carry SliceUID (the Slice's
    metadata.uid). megamon takes it from the Slice, and keeps it in the slice owner map so
    that a slice that vanished while its owner runs is still reported with it."""
    raw = {
        "metadata": {
            "name": "s1",
            "uid": "uid-s1",
            "labels": {
                labels.SLICE_OWNER_KIND: "JobSet",
                labels.SLICE_OWNER_NAME: "train",
                labels.SLICE_OWNER_NAMESPACE: "ml",
            },
        },
        "spec": {"type": "tpu7x", "topology": "2x2x2"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    js = jobset_view(
        {
            "metadata": {"name": "train", "namespace": "ml", "uid": "u1"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {}}]},
        }
    )
    settings = observer_settings(Config())
    seen, owners = observe_slices([slice_view(raw)], [js], [], {}, settings)
    assert seen.observations["s1"].attrs.slice_uid == "uid-s1"
    kept = owners_codec.decode(owners_codec.encode(owners), "owner map")
    gone, _ = observe_slices([], [js], [], kept, settings)
    assert gone.observations["s1"].attrs.slice_uid == "uid-s1"
    assert not gone.observations["s1"].up


def test_difference_self_metric_label_values_are_listed_for_the_switch() -> None:
    """internal/aggregator/events/eventstore.go: GCSEventStore.Get / Put label GCS latency
    operation="GetRecords" / "PutRecords"; megamon labels each storage call (stat,
    download, upload, copy, list). docs/migrating.md gives the mapping for dashboards."""
    text = (Path(__file__).parents[2] / "docs" / "migrating.md").read_text()
    for value in ("GetRecords", "PutRecords", "download", "upload"):
        assert f"`{value}`" in text
