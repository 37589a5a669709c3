"""The BigQuery table functions of ``deploy/bigquery/``, transpiled by sqlglot to DuckDB and
run over the same log, give the fleet report's figures: the views are known to be right
without a BigQuery project."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings

from megamon.domain.kinds import Kind
from megamon.fleet.engine import History, fleet_report
from megamon.fleet.model import FLEET, FleetReport
from megamon.summary.availability import Window
from megamon.summary.chips import chips_of
from test.fleet.histories import Coverage, Lifetime, write_log
from test.fleet.test_equivalence import CLUSTERS, T0, merged_failed_band, windows

VIEWS = Path(__file__).parents[2] / "deploy" / "bigquery" / "views"
_HEADER = re.compile(r"CREATE OR REPLACE TABLE FUNCTION [\w.]+\(([^)]*)\) AS \(", re.S)
_LOG_COLUMNS = (
    "{'type': 'VARCHAR', 'cluster': 'VARCHAR', 'key': 'VARCHAR', 'ts': 'VARCHAR', "
    "'tsNs': 'BIGINT', 'state': 'VARCHAR', 'up': 'BOOLEAN', 'ed': 'BOOLEAN', 'f': 'BOOLEAN', "
    "'attrs': 'JSON', 'since': 'BIGINT'}"
)


def table_function(name: str) -> str:
    """The body of a ``CREATE TABLE FUNCTION`` of ``views/<name>.sql``, in BigQuery SQL."""
    text = (VIEWS / f"{name}.sql").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    match = _HEADER.search(text)
    assert match, f"{name}.sql is not one CREATE TABLE FUNCTION"
    return text[match.end() :].rstrip().removesuffix(")")


def to_duckdb(bigquery_sql: str, now: int, since: int | None) -> str:
    """The query in DuckDB's dialect, with the function's arguments as literals."""
    (sql,) = sqlglot.transpile(bigquery_sql, read="bigquery", write="duckdb")
    sql = re.sub(r"\bnow_ns\b", str(now), sql)
    since_text = "CAST(NULL AS BIGINT)" if since is None else str(since)
    return re.sub(r"\bsince_ns\b", since_text, sql)


def bigquery_like(histories: list[History]) -> duckdb.DuckDBPyConnection:
    """A DuckDB with ``megamon_fleet.log`` laid out as ``deploy/bigquery/setup.sh`` makes
    it: one Hive-partitioned table per cluster, the cluster named by its directory."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA megamon_fleet")
    parts = []
    for h in histories:
        glob = str(h.root / "log" / "kind=*" / "date=*" / "*.ndjson")
        parts.append(
            f"SELECT '{h.cluster}' AS cluster, * EXCLUDE (cluster) FROM read_json('{glob}', "
            f"format = 'newline_delimited', columns = {_LOG_COLUMNS}, "
            "hive_partitioning = true, hive_types = {'kind': 'VARCHAR', 'date': 'DATE'})"
        )
    con.execute("CREATE VIEW megamon_fleet.log AS " + " UNION ALL ".join(parts))
    return con


def _native(report: FleetReport) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {
        (f.resource.cluster, f.resource.kind.value, f.resource.key, f.resource.retired_at): (
            f.resource.name,
            f.resource.accelerator,
            f.resource.topology,
            chips_of(f) or None,
            f.start,
            f.end,
            f.state.value,
            f.times.up,
            f.times.down,
            f.times.failed,
            f.times.expected_down,
            f.times.provisioning,
            f.times.unobserved,
            f.incidents.interruptions,
            f.incidents.recoveries,
            f.incidents.recovered_down_time,
            f.provisioning_state.value,
            f.provisioning_duration,
        )
        for f in report.resources
    }


def _native_aggregates(report: FleetReport) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {
        (a.cluster, a.kind.value, a.accelerator, a.topology): (
            a.resources,
            a.times.up,
            a.times.down,
            a.times.unobserved,
            a.incidents.interruptions,
            a.incidents.recoveries,
            a.mttr,
            a.mtbi,
            a.mean_provisioning_duration,
            report.chip_time(a).chips,
        )
        for a in (*report.cluster_aggregates, *report.fleet_aggregates)
    }


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


def _check(clusters: list[tuple[list[Lifetime], Coverage]], window: Window) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        histories = []
        for n, (lifetimes, coverage) in enumerate(clusters):
            root = Path(scratch) / f"c{n}"
            write_log(root, f"c{n}", lifetimes, archive=False, coverage=coverage)
            histories.append(History(f"c{n}", root))
        histories = [h for h in histories if (h.root / "log").exists()]
        if not histories:
            return
        native = fleet_report(histories, list(Kind), window, workdir=Path(scratch))
        con = bigquery_like(histories)
        figures = to_duckdb(table_function("figures"), window.now, window.since)
        got = {tuple(row[:4]): tuple(row[4:]) for row in _rows(con, figures)}
        assert got == _native(native)
        # The aggregates read the figures function: give DuckDB a view standing for it.
        con.execute(f"CREATE VIEW figures_now AS {figures}")
        availability = table_function("availability").replace(
            "megamon_fleet.figures(now_ns, since_ns)", "figures_now"
        )
        sums = {
            tuple(row[:4]): (
                row[4],
                row[5],
                row[6],
                row[10],
                row[11],
                row[12],
                row[15],
                row[16],
                row[20],
                row[21],
            )
            for row in _rows(con, to_duckdb(availability, window.now, window.since))
        }
        expected = _native_aggregates(native)
        assert sums == expected
        if native.resources:
            assert FLEET in {key[0] for key in sums}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CLUSTERS, windows())
def test_the_bigquery_functions_give_the_fleet_report(
    clusters: list[tuple[list[Lifetime], Coverage]], window: Window
) -> None:
    """Random histories with coverage gaps (checked against the Python report by
    ``test_equivalence``)."""
    _check(clusters, window)


def test_the_bigquery_functions_carve_a_merged_provisioning_band() -> None:
    s = 10**9
    window = Window(now=T0 + 1000 * s)
    _check([merged_failed_band((T0 + 20 * s, T0 + 30 * s))], window)
    _check([merged_failed_band((T0 + 2 * s, T0 + 5 * s))], window)


def test_every_view_transpiles() -> None:
    for path in sorted(VIEWS.glob("*.sql")):
        body = table_function(path.stem)
        assert sqlglot.transpile(body, read="bigquery", write="duckdb"), path
        with pytest.raises(sqlglot.errors.ParseError):
            sqlglot.transpile(body + " )(", read="bigquery", write="duckdb")


DOCS = Path(__file__).parents[2] / "docs" / "fleet.md"
_DECLARE = re.compile(r"DECLARE now_ns INT64 DEFAULT [^;]*;\s*")


def _doc_queries() -> list[str]:
    blocks = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) >= 3
    return blocks


def test_the_example_queries_of_the_docs_run(tmp_path: Path) -> None:
    """docs/fleet.md's BigQuery examples, transpiled, run over a log and give the figures'
    own sums (the table functions stand as DuckDB table macros)."""
    t0 = 1_780_272_000_000_000_000
    hour = 3_600_000_000_000
    shape = {"tpuAccelerator": "tpu-v6e-slice", "tpuTopology": "4x4", "tpuChipCount": 16}
    lifetimes = [
        Lifetime(
            Kind.NODEPOOL,
            "np-a",
            ((t0, 0), (t0 + hour, 1), (t0 + 5 * hour, 4)),
            {**shape, "nodePoolName": "np-a"},
        ),
        Lifetime(
            Kind.NODEPOOL, "np-b", ((t0, 0), (t0 + 2 * hour, 1)), {**shape, "nodePoolName": "np-b"}
        ),
    ]
    root = tmp_path / "east"
    write_log(root, "east", lifetimes, archive=False)
    con = bigquery_like([History("east", root)])
    now = t0 + 10 * hour
    for name in ("figures", "availability"):
        (body,) = sqlglot.transpile(table_function(name), read="bigquery", write="duckdb")
        con.execute(f"CREATE MACRO megamon_fleet.{name}(now_ns, since_ns) AS TABLE {body}")
    results = []
    for query in _doc_queries():
        (sql,) = sqlglot.transpile(_DECLARE.sub("", query), read="bigquery", write="duckdb")
        results.append(con.execute(re.sub(r"\bnow_ns\b", str(now), sql)).fetchall())
    weekly, worst, lost = results
    assert weekly[0][:3] == ("tpu-v6e-slice", "4x4", 2)
    assert weekly[0][3] == pytest.approx(100 * 12 / 17)  # np-a up 4h down 5h, np-b up 8h
    assert [row[1] for row in worst] == ["np-a", "np-b"]
    assert lost[0][0] == "tpu-v6e-slice"
    assert lost[0][2] == pytest.approx(16 * 5)  # np-a failed for 5 hours, 16 chips
