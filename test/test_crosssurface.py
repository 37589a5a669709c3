"""The cross-surface check itself (``test.crosssurface``) fails, naming the resource and the
figure, when a surface disagrees: a gauge off by one interruption, a resource a surface
leaves out, a duration further than a cycle from the report's."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from megamon.domain import timestamps
from test.crosssurface import check_history, gauge_problems

T0 = timestamps.parse("2026-05-04T18:00:00Z")
HOUR = 3600 * timestamps.NANOS_PER_SECOND
NOW = T0 + 10 * HOUR


def _go_history(root: Path) -> None:
    """np-a: down 0, up 1, down 5 (an interruption), up 6 (a recovery); as Go writes it."""
    events = [(0, False), (1, True), (5, False), (6, True)]
    record = [{"up": up, "ts": timestamps.format_ns(T0 + at * HOUR)} for at, up in events]
    (root / "node-pools.json").write_bytes(orjson.dumps({"np-a": {"upEvents": record}}))


def _scrape(interruptions: int, up_s: float, down_s: float) -> str:
    labels = '{nodepool_name="np-a"}'
    return (
        f"megamon_nodepool_up{labels} 1\n"
        f"megamon_nodepool_up_time_seconds{labels} {up_s}\n"
        f"megamon_nodepool_down_time_seconds{labels} {down_s}\n"
        f"megamon_nodepool_interruption_count{labels} {interruptions}\n"
        f"megamon_nodepool_recovery_count{labels} 1\n"
        f"megamon_nodepool_down_time_initial_seconds{labels} 3600\n"
        'megamon_nodepool_provisioning_duration_seconds{nodepool_name="np-a",'
        'provisioning_state="success"} 3600\n'
    )


def test_the_gauges_of_the_same_history_pass(tmp_path: Path) -> None:
    _go_history(tmp_path)
    figures = check_history(tmp_path, NOW, metrics=_scrape(1, 8 * 3600, 2 * 3600))
    assert figures[("nodepool", "np-a", None)]["recoveryCount"] == 1


def test_a_gauge_off_by_one_interruption_names_the_resource_and_figure(tmp_path: Path) -> None:
    _go_history(tmp_path)
    with pytest.raises(AssertionError, match=r"gauges: nodepool np-a: interruption_count 2, "):
        check_history(tmp_path, NOW, metrics=_scrape(2, 8 * 3600, 2 * 3600))


def test_a_duration_more_than_a_cycle_off_fails(tmp_path: Path) -> None:
    _go_history(tmp_path)
    with pytest.raises(AssertionError, match=r"np-a: up_time_seconds 28798.000s, not within"):
        check_history(tmp_path, NOW, metrics=_scrape(1, 8 * 3600 - 2, 2 * 3600 + 2))


def test_a_resource_without_series_and_a_series_without_history_fail() -> None:
    reference = {
        ("nodepool", "np-a", None): {"state": "up", "upTime": 1, "interruptionCount": 0},
    }
    problems = gauge_problems(reference, 'megamon_nodepool_up{nodepool_name="np-z"} 1\n', NOW, 1)
    assert problems == [
        "gauges: nodepool np-a: live in the history, no series",
        "gauges: nodepool np-z: series, but no live record",
    ]
