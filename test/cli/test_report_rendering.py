"""``megamon report``'s arguments and renderings: durations, percentages, ``--since``, the
report labels, and the HTML page's escaping, timelines and axis."""

from __future__ import annotations

import itertools
import re

import orjson
import pytest

from megamon.cli import report, report_format, report_html
from megamon.codec import report as report_codec
from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.errors import ConfigError
from megamon.summary.availability import (
    AvailabilityReport,
    Band,
    BandState,
    Incidents,
    Resource,
    ResourceAvailability,
    TimeSplit,
    Window,
    availability_report,
)
from test.timeline import T0, H, M, S, down, record, up

D = 24 * H


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (None, "-"),
        (0, "0s"),
        (1, "<1s"),
        (45 * S, "45s"),
        (12 * M + 5 * S, "12m05s"),
        (3 * H + 4 * M + 59 * S, "3h04m"),
        (2 * D + 3 * H + 59 * M, "2d03h"),
    ],
)
def test_durations_read_as_two_units(ns: int | None, text: str) -> None:
    assert report_format.duration_text(ns) == text


def test_percentages_are_floored_so_only_no_downtime_reads_100() -> None:
    assert report_format.percent_text(99.9999) == "99.99%"
    assert report_format.percent_text(100.0) == "100.00%"
    assert report_format.percent_text(88.8888) == "88.88%"
    assert report_format.percent_text(None) == "-"


@pytest.mark.parametrize(
    ("text", "since"),
    [
        (None, None),
        ("7d", T0 - 7 * D),
        ("24h", T0 - D),
        ("1d12h", T0 - 36 * H),
        ("90m", T0 - 90 * M),
        ("2w", T0 - 14 * D),
        ("2020-12-31T00:00:00Z", T0 - D),
        ("2021-01-01T01:00:00+02:00", T0 - H),
    ],
)
def test_since_is_a_timestamp_or_a_duration_before_now(text: str | None, since: int) -> None:
    assert report.parse_since(text, T0) == since


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("yesterday", "neither an RFC 3339 timestamp nor a duration"),
        ("7x", "neither"),
        ("-7d", "neither"),
        ("0s", "is not before --now"),
        ("2021-01-02T00:00:00Z", "is not before --now"),
    ],
)
def test_a_bad_since_is_a_config_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        report.parse_since(text, T0)


def test_a_bad_now_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--now"):
        report.parse_now("2021-13-01T00:00:00Z")


def test_kinds_are_deduplicated_and_default_to_all() -> None:
    assert report.selected_kinds(None) == list(Kind)
    assert report.selected_kinds([Kind.SLICE, Kind.NODEPOOL, Kind.SLICE]) == [
        Kind.SLICE,
        Kind.NODEPOOL,
    ]


def test_labels_are_the_attrs_of_the_report_entries() -> None:
    document = {
        "nodePoolsUp": {"np": {"expectedCount": 1, "readyCount": 1, "tpuTopology": "2x2x1"}},
        "nodePoolsUpSummaries": {"np": {"tpuAccelerator": "tpu-v5p-slice", "upTime": 5}},
        "jobSetsUpSummaries": {"uid": {"jobsetName": "train", "downTime": 1}},
        "slicesUp": "not an object",
    }
    labels = report_codec.parse_labels(orjson.dumps(document))
    assert labels[Kind.NODEPOOL] == {
        "np": {"tpuTopology": "2x2x1", "tpuAccelerator": "tpu-v5p-slice"}
    }
    assert labels[Kind.JOBSET] == {"uid": {"jobsetName": "train"}}
    assert labels[Kind.SLICE] == {}
    with pytest.raises(TypeError):
        report_codec.parse_labels(b"[]")


# --- table and JSON ----------------------------------------------------------------------


def _report() -> AvailabilityReport:
    resources = [
        Resource(
            Kind.NODEPOOL,
            "np-a",
            record(down(0), up(H), down(5 * H), up(6 * H)),
            {"tpuAccelerator": "tpu-v5p-slice", "tpuTopology": "2x2x1"},
        ),
        Resource(Kind.NODEPOOL, "np-z", record(down(0), up(H)), {}, retired_at=T0 + 2 * H),
    ]
    return availability_report(resources, Window(now=T0 + 10 * H))


def test_the_table_is_aligned_and_says_what_availability_means() -> None:
    lines = report_format.render_table(_report()).splitlines()
    assert lines[0].endswith("10h00m (all history)")
    assert "expected-down and provisioning time are excluded" in lines[1]
    # the resources' table, after what the window cost and the worst first
    start = next(
        i
        for i, line in enumerate(lines)
        if line.split()[:4] == ["KIND", "RESOURCE", "ACCELERATOR", "TOPOLOGY"]
    )
    header, np_a, np_z = lines[start : start + 3]
    assert header.split()[:6] == ["KIND", "RESOURCE", "ACCELERATOR", "TOPOLOGY", "STATE", "AVAIL"]
    assert np_a.split() == [
        *("nodepool", "np-a", "tpu-v5p-slice", "2x2x1", "up", "88.88%", "8h00m", "1h00m"),
        *("0s", "1", "1", "1h00m", "8h00m", "success", "1h00m", "unknown", "1"),
    ]
    assert np_z.split()[4] == "retired"
    assert header.index("AVAIL") + len("AVAIL") == np_a.index("88.88%") + len("88.88%")


def test_an_empty_window_says_so() -> None:
    empty = availability_report([], Window(now=T0, since=T0 - H))
    assert "no resources in the window" in report_format.render_table(empty)
    assert report_format.report_dict(empty)["resources"] == []


def test_json_has_resources_and_aggregates_in_nanoseconds() -> None:
    document = report_format.report_dict(_report())
    assert set(document) == {
        "window",
        "availabilityDefinition",
        "resources",
        "aggregates",
        "losses",
        "worst",
        "maintenanceScheduled",
        "chips",
        "downNow",
    }
    np_a = document["resources"][0]
    assert np_a["upTime"] == 8 * H and np_a["meanTimeToRecover"] == H
    assert np_a["availabilityPercent"] == pytest.approx(800 / 9)
    assert document["resources"][1]["retiredAt"] == "2021-01-01T02:00:00Z"
    assert document["window"] == {
        "since": None,
        "start": "2021-01-01T00:00:00Z",
        "now": "2021-01-01T10:00:00Z",
    }


# --- HTML --------------------------------------------------------------------------------


def test_the_page_escapes_what_comes_from_the_cluster() -> None:
    evil = {"tpuAccelerator": "<script>alert(1)</script>", "nodePoolName": '"><img src=x>'}
    resources = [Resource(Kind.NODEPOOL, "k", record(down(0), up(H)), evil)]
    page = report_html.render_html(availability_report(resources, Window(now=T0 + 2 * H)))
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_page_makes_no_request() -> None:
    page = report_html.render_html(_report())
    assert re.search(r"https?://|//[a-z]|src=|@import|url\(", page) is None


def test_a_short_outage_stays_visible() -> None:
    scale = report_html.Scale(T0, T0 + 30 * D)
    outage = [Band(T0 + D, T0 + D + 10 * S, BandState.DOWN)]
    (rect,) = report_html._exact_rects(outage, scale, ["down 10s"])
    width = float(re.search(r'width="([0-9.]+)"', rect).group(1))  # type: ignore[union-attr]
    assert width >= report_html.MIN_VISIBLE_UNITS


def test_a_long_history_is_drawn_column_by_column_keeping_the_worst_state() -> None:
    bands = []
    for i in range(20_000):  # alternating 1-minute periods over ~2 weeks
        state = BandState.UP if i % 2 else BandState.DOWN
        bands.append(Band(T0 + i * M, T0 + (i + 1) * M, state))
    bands[10_001] = Band(T0 + 10_001 * M, T0 + 10_002 * M, BandState.FAILED)
    scale = report_html.Scale(T0, T0 + 20_000 * M)
    resource = Resource(Kind.NODEPOOL, "np", record(down(0)))
    figures = ResourceAvailability(
        resource,
        T0,
        T0 + 20_000 * M,
        BandState.DOWN,
        tuple(bands),
        TimeSplit(),
        Incidents(),
        0,
        ProvisioningState.NONE,
    )
    rects = list(report_html._marks(figures, scale))
    assert len(rects) <= report_html.TIMELINE_UNITS + 1
    assert any(report_html.STATE_COLOURS[BandState.FAILED] in r for r in rects)
    assert "<title>" not in "".join(rects[1:])  # no tooltip per band in a crowded timeline


def test_ticks_are_round_utc_instants_that_fit() -> None:
    assert report_html.tick_step(7 * D) == D
    marks = report_html.ticks(T0 + 90 * M, T0 + 7 * D + 90 * M)
    assert marks[0] == T0 + D and all(b - a == D for a, b in itertools.pairwise(marks))
    assert len(report_html.ticks(T0, T0 + 3 * H)) <= 8


def test_a_crowded_timeline_with_time_megamon_was_not_running_is_drawn() -> None:
    """Past ``TIMELINE_UNITS`` bands, columns keep the worst state, unobserved time included."""
    scale = report_html.Scale(T0, T0 + 20_000 * M)
    bands = [
        Band(
            T0 + i * 10 * M,
            T0 + i * 10 * M + 5 * M,
            BandState.DOWN if i % 2 else BandState.UNOBSERVED,
        )
        for i in range(2_000)
    ]
    rects = list(report_html._pixel_rects(bands, scale))
    assert rects and all(report_html.STATE_COLOURS[BandState.DOWN] in r for r in rects)
