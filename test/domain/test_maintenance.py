"""Maintenance ahead: GKE's scheduled-maintenance-time read as Unix seconds, the windows a
time falls in, and the lead time of an announced maintenance (pure rules, no clock)."""

from __future__ import annotations

import pytest

from megamon.domain import maintenance as m

S = 1_000_000_000
NOW = 1_780_272_000 * S


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, m.NOT_SCHEDULED),
        ("1780282800", 1_780_282_800),
        ("", m.MALFORMED),
        ("soon", m.MALFORMED),
        ("-5", m.MALFORMED),
        ("1.5e9", m.MALFORMED),
        ("0", m.MALFORMED),
        ("١٢٣", m.MALFORMED),  # digits, but not ASCII ones
        ("9" * 30, m.MALFORMED),
        (1780282800, m.MALFORMED),  # a label is a string
    ],
)
def test_a_label_value_is_unix_seconds_or_malformed(value: object, seconds: int) -> None:
    assert m.parse_scheduled(value) == seconds


@pytest.mark.parametrize(
    ("ahead_s", "windows"),
    [
        (30 * 60, ("1h", "6h", "24h")),
        (3600, ("1h", "6h", "24h")),
        (3 * 3600, ("6h", "24h")),
        (6 * 3600 + 1, ("24h",)),
        (25 * 3600, ()),
        (-600, ("1h", "6h", "24h")),  # due and not begun yet
    ],
)
def test_the_windows_nest(ahead_s: int, windows: tuple[str, ...]) -> None:
    assert m.windows_within(NOW // S + ahead_s, NOW) == windows


def test_nothing_scheduled_is_in_no_window() -> None:
    assert m.windows_within(m.NOT_SCHEDULED, NOW) == ()
    assert m.windows_within(m.MALFORMED, NOW) == ()


def test_lead_time_runs_from_first_seen_to_the_interruption() -> None:
    down = NOW + 3 * 3600 * S
    assert m.lead_time_ns(scheduled_s=down // S, announced_ns=NOW, down_ns=down) == 3 * 3600 * S
    assert m.lead_time_ns(scheduled_s=0, announced_ns=NOW, down_ns=down) is None
    assert m.lead_time_ns(scheduled_s=down // S, announced_ns=0, down_ns=down) is None
    assert m.lead_time_ns(scheduled_s=down // S, announced_ns=down + S, down_ns=down) is None
