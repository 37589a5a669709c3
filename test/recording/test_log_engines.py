"""The log as an engine reads it: DuckDB over a history ``megamon run`` wrote, checked
against ``megamon events show`` (docs/history.md has the query)."""

from __future__ import annotations

import datetime
from pathlib import Path

import duckdb
import orjson
import pytest

from megamon.cli.main import main
from megamon.codec.log import STATE_DOWN, STATE_FAILED, STATE_UP
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.local import LocalEventStore

T = 1_780_272_000 * 10**9
S = 10**9


def _write_history(directory: Path) -> None:
    attrs = Attrs(nodepool_name="np-a", tpu_topology="2x2x2", tpu_accelerator="tpu7x")
    up = Observation.build(expected=2, ready=2, attrs=attrs)
    down = Observation.build(expected=2, ready=1, attrs=attrs)
    failed = Observation.build(expected=1, ready=0, failed=True, attrs=Attrs(nodepool_name="b"))
    job = Observation.build(expected=1, ready=1, attrs=Attrs(jobset_name="train"))
    log = EventLog(LocalEventStore(directory), [Kind.NODEPOOL, Kind.JOBSET], cluster="c1")
    log.append({Kind.NODEPOOL: {"np-a": down, "b": failed}, Kind.JOBSET: {"js": job}}, T)
    log.append({Kind.NODEPOOL: {"np-a": up, "b": failed}, Kind.JOBSET: {"js": job}}, T + 60 * S)
    log.append({Kind.NODEPOOL: {"np-a": down, "b": failed}, Kind.JOBSET: {}}, T + 90 * S)
    log.close()
    log = EventLog(LocalEventStore(directory), [Kind.NODEPOOL], cluster="c1")
    log.append({Kind.NODEPOOL: {"np-a": up, "b": failed}}, T + 120 * S)  # after the snapshot


def _shown(capsys: pytest.CaptureFixture[str], directory: Path, kind: Kind) -> dict[str, list]:
    assert main(["events", "show", kind.value, "--events-dir", str(directory)]) == 0
    document = orjson.loads(capsys.readouterr().out)
    states = {}
    for key, record in document.items():
        states[key] = sorted(
            (
                timestamps.parse(e["ts"]),
                STATE_UP if e["up"] else (STATE_FAILED if e.get("f") else STATE_DOWN),
            )
            for e in record["upEvents"]
        )
    return states


def test_duckdb_reads_the_log_as_written_and_agrees_with_events_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_history(tmp_path)
    rows = duckdb.sql(
        f"""
        select kind, key, tsNs, state, attrs.tpuTopology as topology, cluster, date
        from read_json('{tmp_path}/log/*/*/*.ndjson', hive_partitioning = true,
                       format = 'newline_delimited')
        where type = 'event'
        """
    ).fetchall()
    assert {row[5] for row in rows} == {"c1"}
    assert all(isinstance(row[6], datetime.date) for row in rows)  # the date= partition
    retired = {
        row[0]
        for row in duckdb.sql(
            f"""select key from read_json('{tmp_path}/log/*/*/*.ndjson',
                hive_partitioning = true, format = 'newline_delimited')
                where type = 'retired' and kind = 'jobset'"""
        ).fetchall()
    }
    assert retired == {"js"}
    for kind in (Kind.NODEPOOL,):
        from_engine: dict[str, list] = {}
        for row_kind, key, ts, state, _topology, _cluster, _date in rows:
            if row_kind == kind.value:
                from_engine.setdefault(key, []).append((ts, state))
        assert {k: sorted(v) for k, v in from_engine.items()} == _shown(capsys, tmp_path, kind)
    topologies = {row[4] for row in rows if row[1] == "np-a"}
    assert topologies == {"2x2x2"}
