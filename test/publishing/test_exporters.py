"""Exporters without a cluster or a bucket: the stdout line format, the archive names and
the hourly archive rule (over the in-memory object backend), building exporters from a
configuration, and ``export_all`` isolating one exporter's failure from the others."""

from __future__ import annotations

import io
import logging
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s

from internal.gcsemu.client import make_storage_client
from megamon.codec import report as report_codec
from megamon.config import Config, parse_config
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.errors import ConfigError, MegamonError, StoreError
from megamon.publishing import exporters
from megamon.stores.memory import MemoryObjects

T0 = timestamps.parse("2026-05-04T18:23:24.123456789Z")
HOUR = 3600 * 10**9
MINUTE = 60 * 10**9


def report_at(generated_at: int, *, pools: int = 1, name_length: int = 4) -> Report:
    observations = {
        f"np-{i:0{name_length}d}": Observation.build(
            expected=4,
            ready=4,
            attrs=Attrs(nodepool_name=f"np-{i:0{name_length}d}", tpu_topology="2x4"),
        )
        for i in range(pools)
    }
    summaries = {
        key: Summary(up_time=HOUR, provisioning_state=ProvisioningState.SUCCESS)
        for key in observations
    }
    return Report(
        generated_at=generated_at,
        kinds={Kind.NODEPOOL: KindReport(observations=observations, summaries=summaries)},
    )


class RecordingStream(io.StringIO):
    """A text stream that counts flushes."""

    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


# stdout ------------------------------------------------------------------------------------


def test_stdout_writes_one_json_report_per_line_and_flushes() -> None:
    stream = RecordingStream()
    exporter = exporters.StdoutExporter(stream)
    first, second = report_at(T0), report_at(T0 + MINUTE, pools=2)
    exporter.export(first)
    exporter.export(second)
    lines = stream.getvalue().splitlines()
    assert [orjson.loads(line) for line in lines] == [
        report_codec.report_dict(first),
        report_codec.report_dict(second),
    ]
    assert stream.getvalue().endswith("\n")
    assert stream.flushes == 2
    assert orjson.loads(lines[0])["generatedAt"] == "2026-05-04T18:23:24.123456789Z"
    assert orjson.loads(lines[1])["nodePoolsUp"]["np-0001"]["tpuTopology"] == "2x4"


def test_stdout_defaults_to_the_current_standard_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exporters.StdoutExporter().export(report_at(T0))
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert orjson.loads(out) == report_codec.report_dict(report_at(T0))


def test_stdout_on_a_closed_stream_raises_an_export_error() -> None:
    stream = io.StringIO()
    stream.close()
    with pytest.raises(exporters.ExportError, match="cannot write the report"):
        exporters.StdoutExporter(stream).export(report_at(T0))


# archive names -----------------------------------------------------------------------------


def test_archive_names_follow_the_utc_time_of_the_report() -> None:
    assert exporters.hour_prefix(T0) == "reports/2026/05/04/18"
    assert exporters.archive_name(T0) == "reports/2026/05/04/182324Z.json"
    midnight = timestamps.parse("2027-01-01T00:00:00Z")
    assert exporters.archive_name(midnight) == "reports/2027/01/01/000000Z.json"
    assert exporters.archive_name(midnight - 1) == "reports/2026/12/31/235959Z.json"


def test_archive_names_of_one_hour_all_start_with_its_prefix() -> None:
    start = timestamps.parse("2026-05-04T18:00:00Z")
    prefix = exporters.hour_prefix(start)
    for offset in (0, MINUTE, 59 * MINUTE + 59 * 10**9):
        assert exporters.archive_name(start + offset).startswith(prefix)
    assert not exporters.archive_name(start + HOUR).startswith(prefix)


# the hourly archive rule, in memory --------------------------------------------------------


def archives(objects: MemoryObjects, path: str) -> list[str]:
    latest = f"{path}/reports/latest.json"
    return [n for n in objects.list(f"{path}/reports/") if n != latest]


def test_latest_is_replaced_every_cycle_and_each_hour_archived_once() -> None:
    objects = MemoryObjects()
    exporter = exporters.ObjectReportExporter(objects, "megamon/clusters/c")
    start = timestamps.parse("2026-05-04T18:59:00Z")
    for minute in range(4):  # 18:59, 19:00, 19:01, 19:02
        report = report_at(start + minute * MINUTE)
        exporter.export(report)
        latest = "megamon/clusters/c/reports/latest.json"
        generation = objects.generation(latest)
        assert generation is not None
        assert objects.download(latest, generation) == report_codec.encode_report(report)
    assert archives(objects, "megamon/clusters/c") == [
        "megamon/clusters/c/reports/2026/05/04/185900Z.json",
        "megamon/clusters/c/reports/2026/05/04/190000Z.json",
    ]


def test_a_restart_within_the_hour_writes_no_second_archive() -> None:
    objects = MemoryObjects()
    exporters.ObjectReportExporter(objects, "p").export(report_at(T0))
    restarted = exporters.ObjectReportExporter(objects, "p")
    restarted.export(report_at(T0 + 5 * MINUTE))
    assert archives(objects, "p") == ["p/reports/2026/05/04/182324Z.json"]


def test_latest_written_by_another_writer_is_replaced_not_refused() -> None:
    objects = MemoryObjects()
    exporter = exporters.ObjectReportExporter(objects, "p")
    exporter.export(report_at(T0))
    objects.upload("p/reports/latest.json", b"{}", objects.generation("p/reports/latest.json") or 0)
    exporter.export(report_at(T0 + MINUTE))
    generation = objects.generation("p/reports/latest.json") or 0
    assert objects.download("p/reports/latest.json", generation) == report_codec.encode_report(
        report_at(T0 + MINUTE)
    )


def test_an_hour_whose_archive_failed_is_archived_by_the_next_report() -> None:
    class FailingList(MemoryObjects):
        failures = 1

        def list(self, prefix: str) -> list[str]:
            if self.failures:
                self.failures -= 1
                raise StoreError(f"{self.describe(prefix)}: list failed")
            return super().list(prefix)

    objects = FailingList()
    exporter = exporters.ObjectReportExporter(objects, "p")
    with pytest.raises(StoreError, match="memory:/p/reports/2026/05/04/18: list failed"):
        exporter.export(report_at(T0))
    exporter.export(report_at(T0 + MINUTE))
    assert archives(objects, "p") == ["p/reports/2026/05/04/182424Z.json"]


# configmap ---------------------------------------------------------------------------------


def test_a_report_too_large_for_a_configmap_is_refused_with_its_size() -> None:
    exporter = exporters.ConfigMapExporter(
        k8s.ApiClient(), parse_config(b"{}", "test").ReportConfigMapRef
    )
    huge = report_at(T0, pools=3000, name_length=200)
    with pytest.raises(exporters.ExportError, match=r"megamon-report key report: .* bytes"):
        exporter.export(huge)


# building ----------------------------------------------------------------------------------


def config(**keys: Any) -> Config:
    return parse_config(orjson.dumps(keys), "test")


def test_no_exporters_are_configured_by_default() -> None:
    assert exporters.build_exporters(config()) == []


def test_exporters_are_built_in_order(tmp_path: Any) -> None:
    built = exporters.build_exporters(
        config(Exporters=["gcs", "stdout", "configmap"], EventsLocalDir=str(tmp_path)),
        api_client=k8s.ApiClient(),
    )
    assert [e.name for e in built] == ["gcs", "stdout", "configmap"]
    assert isinstance(built[0], exporters.LocalReportExporter)
    assert built[0].describe() == str(tmp_path / "reports")


def test_an_exporter_listed_twice_is_refused_not_built_once() -> None:
    with pytest.raises(ConfigError, match="Exporters: 'stdout' is listed twice"):
        config(Exporters=["gcs", "stdout", "configmap", "stdout"])


def test_gcs_writes_to_the_bucket_when_one_is_named() -> None:
    offline = make_storage_client("http://127.0.0.1:9")  # building sends no request
    built = exporters.build_exporters(
        config(Exporters=["gcs"], EventsBucketName="b", GKE={"ClusterName": "c"}),
        storage_client=offline,
    )
    assert isinstance(built[0], exporters.GcsReportExporter)
    assert built[0].describe() == "gs://b/megamon/clusters/c/reports"


def test_a_simulation_never_writes_reports_into_a_bucket(tmp_path: Any) -> None:
    built = exporters.build_exporters(
        config(
            Exporters=["gcs"],
            EventsBucketName="prod",
            EnableSimulation=True,
            EventsLocalDir=str(tmp_path),
        )
    )
    assert isinstance(built[0], exporters.LocalReportExporter)


def test_the_configmap_exporter_needs_an_api_client() -> None:
    with pytest.raises(ConfigError, match="configmap exporter needs a Kubernetes API client"):
        exporters.build_exporters(config(Exporters=["configmap"]))


# export_all --------------------------------------------------------------------------------


class Recording:
    def __init__(self, name: str, error: Exception | None = None) -> None:
        self.name = name
        self.error = error
        self.reports: list[Report] = []

    def export(self, report: Report) -> None:
        self.reports.append(report)
        if self.error is not None:
            raise self.error


def test_export_all_runs_every_exporter_whatever_fails(caplog: pytest.LogCaptureFixture) -> None:
    broken = Recording("configmap", MegamonError("configmap ns/r key report: HTTP 403"))
    buggy = Recording("stdout", KeyError("oops"))
    healthy = Recording("gcs")
    report = report_at(T0)
    with caplog.at_level(logging.WARNING, logger="megamon.publishing.exporters"):
        failures = exporters.export_all([broken, buggy, healthy], report)
    assert healthy.reports == [report]
    assert broken.reports == [report] and buggy.reports == [report]
    assert failures == [
        "configmap: configmap ns/r key report: HTTP 403",
        "stdout: unexpected KeyError: 'oops'",
    ]
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "exporter configmap failed: configmap ns/r key report: HTTP 403",
        "exporter stdout failed unexpectedly",
    ]
    assert caplog.records[1].exc_info is not None


def test_export_all_returns_nothing_when_every_exporter_succeeds() -> None:
    assert exporters.export_all([Recording("stdout"), Recording("gcs")], report_at(T0)) == []
