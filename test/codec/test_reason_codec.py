"""Reasons in the durable history: the snapshot (the Go megamon's event file plus a
``reason`` key Go ignores) and the log's segments (``reason`` and ``detail`` columns)."""

from __future__ import annotations

import orjson
import pytest

from megamon.codec import history as codec
from megamon.codec.log import TYPE_EVENT, LogLine, decode_segment, encode_segment
from megamon.domain import interruptions
from megamon.domain.events import EventRecord, UpEvent, reason_of

T = 1_780_272_000_000_000_000  # 2026-06-01T00:00:00Z


def record(*events: UpEvent) -> EventRecord:
    return EventRecord.of(events)


def test_a_down_events_reason_is_written_last_and_read_back() -> None:
    rec = record(
        UpEvent(up=True, ts=T),
        UpEvent(up=False, ts=T + 1, reason=interruptions.MAINTENANCE),
        UpEvent(up=False, failed=True, ts=T + 2, reason=interruptions.ERROR),
        UpEvent(up=True, ts=T + 3),
    )
    data = codec.encode_event_file({"np": rec})
    assert data == (
        b'{"np":{"upEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z"},'
        b'{"up":false,"ts":"2026-06-01T00:00:00.000000001Z","reason":"maintenance"},'
        b'{"up":false,"f":true,"ts":"2026-06-01T00:00:00.000000002Z","reason":"error"},'
        b'{"up":true,"ts":"2026-06-01T00:00:00.000000003Z"}]}}'
    )
    assert codec.decode_event_file(data, "x") == {"np": rec}
    assert [e.reason for e in codec.decode_event_file(data, "x")["np"].events] == [
        "", "maintenance", "error", ""
    ]  # fmt: skip


def test_without_reasons_the_file_is_the_go_megamons_byte_for_byte() -> None:
    rec = record(UpEvent(up=False, ts=T), UpEvent(up=True, ts=T + 1))
    assert codec.encode_event_file({"a": rec}) == (
        b'{"a":{"upEvents":[{"up":false,"ts":"2026-06-01T00:00:00Z"},'
        b'{"up":true,"ts":"2026-06-01T00:00:00.000000001Z"}]}}'
    )


@pytest.mark.parametrize(
    "event",
    [
        {"up": False, "ts": "2026-06-01T00:00:00Z", "reason": "a-reason-of-a-later-megamon"},
        {"up": False, "ts": "2026-06-01T00:00:00Z", "reason": 7},
        {"up": False, "ts": "2026-06-01T00:00:00Z", "reason": None},
        {"up": True, "ts": "2026-06-01T00:00:00Z", "reason": "error"},
    ],
)
def test_a_reason_megamon_does_not_know_is_ignored_as_go_ignores_it(event: object) -> None:
    data = orjson.dumps({"a": {"upEvents": [event]}})
    (only,) = codec.decode_event_file(data, "x")["a"].events
    assert only.reason == ""


def test_the_reason_key_is_read_in_any_letter_case_with_go_spellings() -> None:
    data = b'{"a":{"UpEvents":[{"UP":false,"Ts":"2026-06-01T00:00:00Z","Reason":"preemption"}]}}'
    assert codec.decode_event_file(data, "x")["a"].events[0].reason == "preemption"


def test_segments_carry_reason_and_detail_columns() -> None:
    down = record(UpEvent(up=False, ts=T, reason=interruptions.ERROR)).flags[0]
    lines = [
        LogLine(TYPE_EVENT, "np", T, down, {"nodePoolName": "np"}, detail="host error"),
        LogLine(TYPE_EVENT, "np", T + 1, 1, {"nodePoolName": "np"}),
    ]
    data = encode_segment("c", "nodepool", lines)
    first, second = (orjson.loads(line) for line in data.splitlines())
    assert (first["reason"], first["detail"], first["state"]) == ("error", "host error", "down")
    assert (second["reason"], second["detail"]) == (None, None)
    assert decode_segment(data, "s") == lines
    assert reason_of(decode_segment(data, "s")[0].flags) == "error"


def test_a_segment_written_before_reasons_reads_as_without_them() -> None:
    old = (
        b'{"type":"event","cluster":"c","kind":"nodepool","key":"np","ts":"2026-06-01T00:00:00Z",'
        b'"tsNs":1780272000000000000,"state":"down","up":false,"ed":false,"f":false,'
        b'"attrs":null,"since":null}\n'
    )
    (line,) = decode_segment(old, "s")
    assert (line.flags, line.detail) == (0, "")
