"""RFC 3339 timestamps as integer nanoseconds, written like Go's RFC3339Nano."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from megamon.domain import timestamps

BASE = timestamps.parse("2026-05-04T18:23:24Z")


@pytest.mark.parametrize(
    ("text", "ns_after_base"),
    [
        ("2026-05-04T18:23:24Z", 0),
        ("2026-05-04T18:23:24.123456789Z", 123_456_789),
        ("2026-05-04T18:23:24.1Z", 100_000_000),
        ("2026-05-04T18:23:24.000000001Z", 1),
        ("2026-05-04T20:23:24.5+02:00", 500_000_000),
        ("2026-05-04T16:23:24-02:00", 0),
        ("2026-05-04t18:23:24z", 0),
    ],
)
def test_parse_keeps_every_nanosecond_in_any_offset(text: str, ns_after_base: int) -> None:
    assert timestamps.parse(text) - BASE == ns_after_base


def test_parse_agrees_with_datetime_at_microsecond_precision() -> None:
    moment = datetime(2021, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC)
    assert timestamps.parse("2021-01-01T00:00:00.25Z") == timestamps.from_datetime(moment)
    assert timestamps.parse("1970-01-01T00:00:00Z") == 0


@pytest.mark.parametrize(
    ("ns_after_base", "text"),
    [
        (0, "2026-05-04T18:23:24Z"),
        (123_456_789, "2026-05-04T18:23:24.123456789Z"),
        (100_000_000, "2026-05-04T18:23:24.1Z"),
        (120_000_000, "2026-05-04T18:23:24.12Z"),
        (1, "2026-05-04T18:23:24.000000001Z"),
    ],
)
def test_format_is_go_rfc3339nano(ns_after_base: int, text: str) -> None:
    assert timestamps.format_ns(BASE + ns_after_base) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2026-05-04",
        "2026-05-04T18:23:24",
        "2026-05-04T18:23:24.Z",
        "2026-05-04T18:23:24.1234567891Z",
        "2026-02-30T00:00:00Z",
        "2026-05-04T24:00:00Z",
        "2026-05-04 18:23:24Z",
        "yesterday",
    ],
)
def test_parse_rejects_what_is_not_rfc3339(text: str) -> None:
    with pytest.raises(timestamps.TimestampError):
        timestamps.parse(text)


@given(st.integers(min_value=timestamps.MIN_NS, max_value=timestamps.MAX_NS - 1))
def test_format_then_parse_is_identity(ns: int) -> None:
    assert timestamps.parse(timestamps.format_ns(ns)) == ns


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("9999-12-31T23:59:59Z", "beyond the horizon 2100-01-01T00:00:00Z"),
        ("2100-01-01T00:00:00Z", "beyond the horizon"),
        ("2100-01-01T03:00:00+02:00", "T03:00:00.02:00' is beyond"),
        ("2100-01-01T01:00:00+02:00", None),
        ("1969-12-31T23:59:59.999999999Z", "before 1970-01-01T00:00:00Z"),
        ("1970-01-01T00:30:00+01:00", "before 1970"),
    ],
)
def test_timestamps_beyond_the_horizon_or_before_1970_are_refused(
    text: str, fragment: str | None
) -> None:
    if fragment is None:  # 2099-12-31T23:00:00Z, within
        assert timestamps.parse(text) == timestamps.MAX_NS - 3600 * timestamps.NANOS_PER_SECOND
        return
    with pytest.raises(timestamps.TimestampError, match=fragment):
        timestamps.parse(text)


@given(st.integers(min_value=-(10**40), max_value=10**40))
def test_formatting_never_raises_whatever_arithmetic_made(ns: int) -> None:
    text = timestamps.format_ns(ns)
    assert text.endswith("Z") and len(text) >= 20


@given(st.integers(min_value=-(10**30), max_value=10**30), st.integers(0, 10**30))
def test_durations_saturate_instead_of_overflowing(a: int, b: int) -> None:
    assert 0 <= timestamps.elapsed(a, b) <= timestamps.MAX_DURATION_NS
    assert timestamps.add(timestamps.saturated(a), timestamps.saturated(b)) <= (
        timestamps.MAX_DURATION_NS
    )
