"""The durable format: files the Go megamon wrote round-trip byte for byte, nanoseconds
included, and bad files fail with one message naming file, key and event."""

from __future__ import annotations

import orjson
import pytest

from megamon.codec import history as codec
from megamon.codec import report as report_codec
from megamon.domain import timestamps
from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.errors import EventFileError

GO_WRITTEN = (
    b'{"np-a":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24.123456789Z"},'
    b'{"up":false,"f":true,"ts":"2026-05-04T18:30:00Z"},'
    b'{"up":true,"ts":"2026-05-04T18:41:00.5Z"},'
    b'{"up":false,"ed":true,"ts":"2026-05-05T02:00:00Z"},'
    b'{"up":false,"ed":true,"f":true,"ts":"2026-05-05T02:00:01.000000001Z"}]},'
    b'"np-b":{"upEvents":[{"up":false,"ts":"2026-05-04T18:23:24Z"}]}}'
)


def test_a_go_written_file_round_trips_byte_for_byte() -> None:
    records = codec.decode_event_file(GO_WRITTEN, "node-pools.json")
    assert codec.encode_event_file(records) == GO_WRITTEN


def test_decoded_events_keep_nanoseconds_and_flags() -> None:
    records = codec.decode_event_file(GO_WRITTEN, "node-pools.json")
    events = records["np-a"].events
    assert events[0] == UpEvent(up=False, ts=timestamps.parse("2026-05-04T18:23:24.123456789Z"))
    assert events[1].failed and not events[1].expected_down
    assert events[2].up and not events[2].failed
    assert events[3].expected_down and not events[3].failed
    assert events[4].ts - events[3].ts == 1_000_000_001


def test_keys_are_sorted_and_flags_written_only_when_true() -> None:
    rec = EventRecord.of([UpEvent(up=False, ts=0), UpEvent(up=True, ts=1)])
    data = codec.encode_event_file({"b": rec, "a": rec})
    assert data.startswith(b'{"a":{"upEvents":[{"up":false,"ts":"1970-01-01T00:00:00Z"},')
    assert b'"ed"' not in data and b'"f"' not in data
    assert list(orjson.loads(data)) == ["a", "b"]


def test_offsets_are_read_and_written_back_in_utc() -> None:
    data = b'{"k":{"upEvents":[{"up":false,"ts":"2026-05-04T20:00:00.25+02:00"}]}}'
    records = codec.decode_event_file(data, "f")
    assert codec.encode_event_file(records) == (
        b'{"k":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00.25Z"}]}}'
    )


def test_go_nulls_and_unknown_fields_are_accepted() -> None:
    assert codec.decode_event_file(b"null", "f") == {}
    data = (
        b'{"a":{"upEvents":null},"b":{},'
        b'"c":{"upEvents":[{"up":false,"ed":null,"x":1,"ts":"2026-05-04T18:00:00Z"}]}}'
    )
    records = codec.decode_event_file(data, "f")
    assert len(records["a"]) == 0 and len(records["b"]) == 0
    assert records["c"].events == (UpEvent(up=False, ts=timestamps.parse("2026-05-04T18:00:00Z")),)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "jobsets.json: invalid JSON"),
        (b"[]", "jobsets.json: an event file must be a JSON object of records, got a list"),
        (b'{"a":[]}', 'jobsets.json: key "a": a record must be an object, got a list'),
        (b'{"a":{"upEvents":{}}}', "key \"a\": 'upEvents' must be a list, got an object"),
        (b'{"a":{"upEvents":[1]}}', 'key "a", event 0: an event must be an object, got number 1'),
        (
            b'{"a":{"upEvents":[{"up":false,"ts":"2026-05-04T18:00:00Z"},{"up":"yes","ts":"x"}]}}',
            "key \"a\", event 1: 'up' must be true or false, got string 'yes'",
        ),
        (b'{"a":{"upEvents":[{"up":true}]}}', "event 0: 'ts' must be an RFC 3339 string, got null"),
        (
            b'{"a":{"upEvents":[{"up":true,"ts":"2026-13-01T00:00:00Z"}]}}',
            "event 0: 'ts': invalid date in '2026-13-01T00:00:00Z'",
        ),
    ],
)
def test_bad_files_name_file_key_and_event(data: bytes, message: str) -> None:
    with pytest.raises(EventFileError) as caught:
        codec.decode_event_file(data, "jobsets.json")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_summaries_use_the_go_keys_in_nanoseconds() -> None:
    summary = Summary(
        down_time_initial=330_000_998_025,
        provisioning_duration=330_000_998_025,
        provisioning_state=ProvisioningState.SUCCESS,
    )
    document = orjson.loads(report_codec.encode_summaries({"np": summary}))
    assert list(document["np"]) == [
        "downTimeProvisioned",
        "interruptionCount",
        "recoveryCount",
        "downTime",
        "upTime",
        "totalDownTimeBetweenRecovery",
        "totalUpTimeBetweenInterruption",
        "latestDownTimeBetweenRecovery",
        "latestUpTimeBetweenInterruption",
        "meanDownTimeBetweenRecovery",
        "meanUpTimeBetweenInterruption",
        "provisioningDuration",
        "provisioningState",
    ]
    assert document["np"]["provisioningDuration"] == 330_000_998_025
    assert document["np"]["provisioningState"] == "success"


def test_report_has_the_go_shape() -> None:
    attrs = Attrs(nodepool_name="np", tpu_topology="2x2x1", tpu_accelerator="tpu-v4-podslice")
    obs = Observation.build(expected=1, ready=1, attrs=attrs, status="RUNNING")
    report = Report(
        generated_at=0,
        kinds={Kind.NODEPOOL: KindReport(observations={"np": obs}, summaries={"np": Summary()})},
        scheduling={"np": ScheduledJob(job_name="js-slice-0", jobset_name="js")},
    )
    document = report_codec.report_dict(report)
    assert document["nodePoolsUp"]["np"]["readyCount"] == 1
    assert document["nodePoolsUp"]["np"]["nodePoolName"] == "np"
    assert document["nodePoolsUp"]["np"]["expectedDown"] is False
    assert document["nodePoolsUpSummaries"]["np"]["tpuTopology"] == "2x2x1"
    assert document["nodePoolsUpSummaries"]["np"]["provisioningState"] == ""
    assert document["jobSetsUp"] == {}
    assert document["nodePoolScheduling"] == {"np": {"jobName": "js-slice-0", "jobsetName": "js"}}
