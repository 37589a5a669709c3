"""``megamon report`` over a history with a restart gap: the time megamon was not running is
reported as its own figure and left out of availability."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from megamon.cli.main import main
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore

T = 1_780_272_000 * 10**9
H = 3600 * 10**9


def test_a_restart_gap_is_unobserved_time_out_of_availability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="np"))
    down = Observation.build(expected=1, ready=0, attrs=Attrs(nodepool_name="np"))
    first = EventLog(LocalEventStore(tmp_path), [Kind.NODEPOOL], holder="first")
    first.append({Kind.NODEPOOL: {"np": up}}, T)
    first.append({Kind.NODEPOOL: {"np": down}}, T + H)
    first.close()  # megamon stops at T+1h, down; it runs again from T+3h
    second = EventLog(LocalEventStore(tmp_path), [Kind.NODEPOOL], holder="second")
    second.append({Kind.NODEPOOL: {"np": up}}, T + 3 * H)
    second.append({Kind.NODEPOOL: {"np": up}}, T + 4 * H)
    second.close()
    argv = ["report", "--events-dir", str(tmp_path), "--format", "json"]
    assert main([*argv, "--now", "2026-06-01T04:00:00Z"]) == 0
    [resource] = orjson.loads(capsys.readouterr().out)["resources"]
    assert resource["unobservedTime"] == 2 * H
    assert resource["upTime"] == 2 * H and resource["downTime"] == 0
    assert resource["availabilityPercent"] == 100.0
