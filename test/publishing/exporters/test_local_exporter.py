"""The ``gcs`` exporter without a bucket: the same layout under ``EventsLocalDir``, written
atomically (no temporary files left), one archive per UTC hour, none again after a restart,
beside the event store's own files."""

from __future__ import annotations

from pathlib import Path

import orjson

from megamon.codec import report as report_codec
from megamon.config import parse_config
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.publishing import exporters
from megamon.stores.local import LocalEventStore
from test.publishing.exporters.reports import HOUR, MINUTE, report_at

T0 = timestamps.parse("2026-05-04T18:59:30Z")


def visible_files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )


def test_latest_and_hourly_archives_are_files_under_the_directory(tmp_path: Path) -> None:
    local = exporters.LocalReportExporter(tmp_path)
    for minute in range(4):  # 18:59:30, 19:00:30, 19:01:30, 19:02:30
        local.export(report_at(T0 + minute * MINUTE))
    last = report_at(T0 + 3 * MINUTE)
    assert (tmp_path / "reports/latest.json").read_bytes() == report_codec.encode_report(last)
    assert visible_files(tmp_path) == [
        "reports/2026/05/04/185930Z.json",
        "reports/2026/05/04/190030Z.json",
        "reports/latest.json",
    ]
    archived = orjson.loads((tmp_path / "reports/2026/05/04/190030Z.json").read_bytes())
    assert archived == report_codec.report_dict(report_at(T0 + MINUTE))
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_restart_within_the_hour_writes_no_second_archive(tmp_path: Path) -> None:
    exporters.LocalReportExporter(tmp_path).export(report_at(T0))
    exporters.LocalReportExporter(tmp_path).export(report_at(T0 + 10 * 10**9))
    exporters.LocalReportExporter(tmp_path).export(report_at(T0 + HOUR))
    assert visible_files(tmp_path) == [
        "reports/2026/05/04/185930Z.json",
        "reports/2026/05/04/195930Z.json",
        "reports/latest.json",
    ]


def test_reports_live_beside_the_local_event_history(tmp_path: Path) -> None:
    config = parse_config(
        orjson.dumps({"Exporters": ["gcs"], "EventsLocalDir": str(tmp_path)}), "test"
    )
    [built] = exporters.build_exporters(config)
    store = LocalEventStore(tmp_path)
    store.write(Kind.NODEPOOL, {}, None)
    built.export(report_at(T0))
    assert visible_files(tmp_path) == [
        "node-pools.json",
        "reports/2026/05/04/185930Z.json",
        "reports/latest.json",
    ]
    assert store.read(Kind.NODEPOOL).records == {}
