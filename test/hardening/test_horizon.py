"""An event in year 9999 must not poison anything: refused at the file's boundary with the key
and index named, never followed by later events, and no duration anywhere overflows what a
JSON integer holds (the stdout exporter, ``summarize``, ``report --since 99999999d``)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from megamon.cli.main import main
from megamon.codec.history import decode_event_file
from megamon.codec.report import encode_summaries
from megamon.domain import timestamps
from megamon.domain.events import FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.errors import EventFileError
from megamon.publishing.exporters.archives import LocalReportExporter
from megamon.publishing.exporters.streams import StdoutExporter
from megamon.recording.appending import MAX_CLOCK_SKEW_NS, next_record
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import TimeSplit
from megamon.summary.report import SettledMemo, build_report
from megamon.summary.summarizing import summarize
from test.cli.report.history import NOW_TEXT, fill

S = timestamps.NANOS_PER_SECOND
NOW = timestamps.parse("2026-05-04T18:00:00Z")
UP = Observation.build(expected=1, ready=1)
DOWN = Observation.build(expected=1, ready=0)


def test_an_event_beyond_the_horizon_is_refused_naming_key_and_index() -> None:
    data = orjson.dumps(
        {
            "np-a": {
                "upEvents": [
                    {"up": False, "ts": "2026-05-04T18:00:00Z"},
                    {"up": True, "ts": "9999-12-31T23:59:59Z"},
                ]
            }
        }
    )
    with pytest.raises(EventFileError) as raised:
        decode_event_file(data, "node-pools.json")
    assert (raised.value.key, raised.value.index) == ("np-a", 1)
    assert str(raised.value) == (
        "node-pools.json: key \"np-a\", event 1: 'ts': "
        "'9999-12-31T23:59:59Z' is beyond the horizon 2100-01-01T00:00:00Z"
    )


def test_an_event_before_1970_is_refused_naming_key_and_index() -> None:
    data = b'{"k":{"upEvents":[{"up":false,"ts":"1969-07-20T20:17:40Z"}]}}'
    with pytest.raises(EventFileError, match=r'key "k", event 0: .* before 1970'):
        decode_event_file(data, "jobsets.json")


def test_a_last_event_far_in_the_future_does_not_stamp_later_events() -> None:
    future = timestamps.parse("2099-12-31T00:00:00Z")
    record = EventRecord.trusted((NOW - 60 * S, future), bytes((0, FLAG_UP)))
    after = next_record(record, DOWN, NOW)
    assert after.timestamps[-1] == NOW  # not 2099: the key's future is not poisoned


def test_a_clock_skew_still_keeps_the_history_ordered() -> None:
    ahead = NOW + MAX_CLOCK_SKEW_NS // 2  # another replica's clock, a little ahead
    record = EventRecord.trusted((NOW - 60 * S, ahead), bytes((0, FLAG_UP)))
    assert next_record(record, DOWN, NOW).timestamps[-1] == ahead


BEYOND = EventRecord.trusted((0, 10**20), bytes((0, FLAG_UP)))
"""A history no file can hold any more (up in year 5138), as arithmetic on timestamps could
make one in memory: every duration of it is past what a JSON integer holds."""


def test_durations_saturate_instead_of_growing_past_a_json_integer() -> None:
    summary = summarize(BEYOND, 10**21)
    assert summary.down_time_initial == timestamps.MAX_DURATION_NS
    assert summary.up_time == timestamps.MAX_DURATION_NS
    assert orjson.loads(encode_summaries({"np": summary}))  # no "Integer exceeds 64-bit"


def test_report_since_a_duration_longer_than_history_covers_all_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(LocalEventStore(tmp_path), LocalReportExporter(tmp_path))
    argv = ["report", "--format", "json", "--now", NOW_TEXT, "--events-dir", str(tmp_path)]
    assert main([*argv, "--since", "99999999d"]) == 0
    longest = orjson.loads(capsys.readouterr().out)
    assert main(argv) == 0
    everything = orjson.loads(capsys.readouterr().out)
    assert longest["resources"] == everything["resources"]


def test_the_stdout_exporter_writes_a_report_whatever_its_durations() -> None:
    report = build_report(
        {Kind.NODEPOOL: {"np": UP}},
        {Kind.NODEPOOL: {"np": BEYOND}},
        kinds={Kind.NODEPOOL},
        scheduling={},
        observed_at={},
        now=10**21,
        memo=SettledMemo(),
    )
    stream = io.StringIO()
    StdoutExporter(stream).export(report)  # used to fail every cycle for the whole report
    assert '"np"' in stream.getvalue()


def test_per_kind_totals_of_many_long_lives_saturate() -> None:
    # 1,000 resources up for 130 years each: 130,000 years, far past 2^63 ns (292 years).
    life = TimeSplit(up=timestamps.MAX_NS, down=timestamps.MAX_NS)
    total = TimeSplit()
    for _ in range(1000):
        total = total + life
    assert total.up == total.down == timestamps.MAX_DURATION_NS
    assert total.availability == 50.0
