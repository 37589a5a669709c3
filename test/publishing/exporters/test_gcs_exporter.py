"""The ``gcs`` exporter against the Cloud Storage emulator: ``latest.json`` every cycle,
exactly one archive per UTC hour across a simulated day, no second archive after a restart
within the hour, and a clear error (and no stalled loop) when the bucket is unreachable."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from internal.faultproxy import FaultProxy
from internal.gcsemu.client import fast_retry, make_storage_client
from megamon.codec import report as report_codec
from megamon.config import parse_config
from megamon.domain import timestamps
from megamon.errors import StoreError
from megamon.publishing import exporters
from test.publishing.exporters.reports import HOUR, MINUTE, report_at

PATH = "megamon/clusters/c"
LATEST = f"{PATH}/reports/latest.json"
START = timestamps.parse("2026-05-04T23:10:00.5Z")
# 25 h of cycles every 7 min 13 s (23:10 on the 4th to 00:18 on the 6th): irregular
# times, two UTC midnights.
STEP = 7 * MINUTE + 13 * 10**9
CYCLES = 210


def exporter(client: Any, bucket: str, **options: Any) -> exporters.GcsReportExporter:
    return exporters.GcsReportExporter(client, bucket, PATH, retry=fast_retry(), **options)


def read(client: Any, bucket: str, name: str) -> Any:
    return orjson.loads(client.bucket(bucket).blob(name).download_as_bytes())


def archive_names(client: Any, bucket: str) -> list[str]:
    names = [b.name for b in client.list_blobs(bucket, prefix=f"{PATH}/reports/")]
    return sorted(n for n in names if n != LATEST)


def test_latest_every_cycle_and_one_archive_per_utc_hour_across_a_day(
    gcs_client: Any, gcs_bucket: str
) -> None:
    gcs = exporter(gcs_client, gcs_bucket)
    first_of_hour: dict[str, int] = {}
    for cycle in range(CYCLES):
        generated_at = START + cycle * STEP
        report = report_at(generated_at)
        gcs.export(report)
        assert read(gcs_client, gcs_bucket, LATEST) == report_codec.report_dict(report)
        first_of_hour.setdefault(exporters.hour_prefix(generated_at), generated_at)

    names = archive_names(gcs_client, gcs_bucket)
    assert len(first_of_hour) == 26  # 23:xx on the 4th, 24 hours of the 5th, 00:xx on the 6th
    assert names == sorted(f"{PATH}/{exporters.archive_name(t)}" for t in first_of_hour.values())
    assert names[0] == f"{PATH}/reports/2026/05/04/231000Z.json"
    assert f"{PATH}/reports/2026/05/05/000031Z.json" in names
    for generated_at in first_of_hour.values():
        archived = read(gcs_client, gcs_bucket, f"{PATH}/{exporters.archive_name(generated_at)}")
        assert archived["generatedAt"] == timestamps.format_ns(generated_at)


def test_a_restart_within_the_hour_writes_no_second_archive(
    gcs_client: Any, gcs_bucket: str
) -> None:
    t = timestamps.parse("2026-05-04T18:05:00Z")
    exporter(gcs_client, gcs_bucket).export(report_at(t))
    restarted = exporter(gcs_client, gcs_bucket)
    restarted.export(report_at(t + 30 * MINUTE))
    restarted.export(report_at(t + HOUR))
    assert archive_names(gcs_client, gcs_bucket) == [
        f"{PATH}/reports/2026/05/04/180500Z.json",
        f"{PATH}/reports/2026/05/04/190500Z.json",
    ]
    assert read(gcs_client, gcs_bucket, LATEST)["generatedAt"] == "2026-05-04T19:05:00Z"


def test_steady_state_costs_one_upload_per_cycle(gcs_proxy: FaultProxy, gcs_bucket: str) -> None:
    gcs = exporter(make_storage_client(gcs_proxy.endpoint), gcs_bucket)
    t = timestamps.parse("2026-05-04T18:05:00Z")
    gcs.export(report_at(t))
    gcs_proxy.reset()
    for minute in range(1, 6):
        gcs.export(report_at(t + minute * MINUTE))
    assert len(gcs_proxy.records) == 5


def test_an_outage_gives_up_at_the_deadline_with_a_clear_error(
    gcs_proxy: FaultProxy, gcs_bucket: str, gcs_client: Any
) -> None:
    gcs = exporter(
        make_storage_client(gcs_proxy.endpoint), gcs_bucket, deadline=1.0, timeout=(1.0, 1.0)
    )
    t = timestamps.parse("2026-05-04T18:05:00Z")
    gcs_proxy.fail_next(1000, 503)
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        gcs.export(report_at(t))
    assert time.monotonic() - started < 5.0
    message = str(caught.value)
    assert message.startswith(f"gs://{gcs_bucket}/{PATH}/reports/latest.json: ")
    assert "gave up after 1s of retries" in message
    assert "\n" not in message
    assert archive_names(gcs_client, gcs_bucket) == []

    gcs_proxy.clear_rules()
    gcs.export(report_at(t + MINUTE))  # the bucket is back: this hour is archived now
    assert archive_names(gcs_client, gcs_bucket) == [f"{PATH}/reports/2026/05/04/180600Z.json"]


def test_build_exporters_writes_under_the_event_store_path(
    gcs_client: Any, gcs_bucket: str
) -> None:
    config = parse_config(
        orjson.dumps(
            {"Exporters": ["gcs"], "EventsBucketName": gcs_bucket, "GKE": {"ClusterName": "c"}}
        ),
        "test",
    )
    [built] = exporters.build_exporters(config, storage_client=gcs_client)
    exporters.export_all([built], report_at(START))
    assert read(gcs_client, gcs_bucket, LATEST)["generatedAt"] == timestamps.format_ns(START)
