"""Histories the Go megamon wrote (event files only: no ``reason``, no log, no archive, no
marks) give the same figures in ``megamon report`` and in the fleet report
(``test.crosssurface``; the BigQuery views read the log, which such a history has none of)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings

from megamon.domain import timestamps
from test.compat.test_go_compat_history import T0, _history
from test.crosssurface import check_history

HOUR = 3600 * timestamps.NANOS_PER_SECOND


def _events(*events: tuple[int, bool, bool]) -> list[dict[str, object]]:
    """Go's ``encoding/json`` of ``[]UpEvent``: ``up``, ``ed`` only when true, ``ts``."""
    return [
        {"up": up, **({"ed": True} if ed else {}), "ts": timestamps.format_ns(T0 + at * HOUR)}
        for at, up, ed in events
    ]


def test_a_go_written_fleet_history_reads_the_same_on_every_surface(tmp_path: Path) -> None:
    """Node pools provisioned, interrupted, stopped for maintenance; JobSets that completed
    (expected down) and that failed; as the Go megamon writes its event files."""
    pools = {
        "np-a": {"upEvents": _events((0, False, False), (1, True, False), (5, False, False))},
        "np-b": {
            "upEvents": _events(
                (0, False, False), (2, True, False), (3, False, True), (4, True, False)
            )
        },
        "np-c": {"upEvents": _events((0, False, False))},
    }
    jobsets = {
        "0d1f-uid-done": {
            "upEvents": _events((1, False, False), (2, True, False), (6, False, True))
        },
        "77aa-uid-failed": {
            "upEvents": _events(
                (1, False, False), (2, True, False), (3, False, False), (4, True, False)
            )
        },
    }
    (tmp_path / "node-pools.json").write_bytes(orjson.dumps(pools))
    (tmp_path / "jobsets.json").write_bytes(orjson.dumps(jobsets))
    figures = check_history(tmp_path, T0 + 10 * HOUR)
    assert figures[("nodepool", "np-a", None)]["interruptionCount"] == 1
    assert figures[("nodepool", "np-b", None)]["expectedDownTime"] == HOUR
    assert figures[("jobset", "0d1f-uid-done", None)]["state"] == "expected-down"


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_history())
def test_any_go_spelling_of_an_event_file_reads_the_same_on_every_surface(
    files: tuple[bytes, bytes],
) -> None:
    spelled, _canonical = files
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "node-pools.json").write_bytes(spelled)
        check_history(root, T0 + 10**14)
