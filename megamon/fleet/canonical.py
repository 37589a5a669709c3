"""The canonical relations the fleet report's SQL reads, and the ways histories reach them.

Whatever wrote a history (today's megamon, the Go megamon, the append-only log), the SQL sees
three relations:

``entries``
    one row per event or attribute change: ``cluster, kind, key, src, retired_at, seq, ts,
    flags, has_attrs, name, accelerator, topology, chips``. ``src`` ranks the sources of one
    lifetime (``SRC_ARCHIVE`` < ``SRC_SNAPSHOT`` < ``SRC_LOG``); ``retired_at`` is set on an
    archive entry's rows (the lifetime they belong to); ``seq`` is the row's position in its
    file; ``flags`` is the event's flag byte (``megamon.domain.events``), ``NULL`` for a
    change of attributes alone; ``has_attrs`` says the row carries the key's attributes
    (``name`` is the human name, ``NULL`` when the attributes lack it).
``retirements``
    ``cluster, kind, key, retired_at``: when a key stopped being observed.
``labels``
    ``cluster, kind, key, name, accelerator, topology, chips``: from ``reports/latest.json``,
    the fallback for live keys the history does not name (the Go megamon's histories).
``observed``
    ``cluster, kind, since, until``: spans megamon was observing a kind without a break (the
    log's heartbeats, and the spans a snapshot mark keeps); the gaps between them are the
    unobserved time the report leaves out of availability.

The snapshot files and archive entries are decoded by ``megamon.codec.history`` (the same
decoder as every other reader) and handed to DuckDB as CSV; the log's segments are read by
DuckDB itself through ``log_entries_sql``, the one adapter from the log's columns to these.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

import duckdb

from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.summary.availability import ACCELERATOR_ATTR, TOPOLOGY_ATTR, Resource

SRC_ARCHIVE = 0
SRC_SNAPSHOT = 1
SRC_LOG = 2
CHIPS_ATTR = "tpuChipCount"

ENTRY_COLUMNS: dict[str, str] = {
    "cluster": "VARCHAR",
    "kind": "VARCHAR",
    "key": "VARCHAR",
    "src": "TINYINT",
    "retired_at": "BIGINT",
    "seq": "BIGINT",
    "ts": "BIGINT",
    "flags": "INTEGER",
    "has_attrs": "BOOLEAN",
    "name": "VARCHAR",
    "accelerator": "VARCHAR",
    "topology": "VARCHAR",
    "chips": "BIGINT",
}
RETIREMENT_COLUMNS: dict[str, str] = {
    "cluster": "VARCHAR",
    "kind": "VARCHAR",
    "key": "VARCHAR",
    "retired_at": "BIGINT",
}
OBSERVED_COLUMNS: dict[str, str] = {
    "cluster": "VARCHAR",
    "kind": "VARCHAR",
    "since": "BIGINT",
    "until": "BIGINT",
}
LABEL_COLUMNS: dict[str, str] = {
    "cluster": "VARCHAR",
    "kind": "VARCHAR",
    "key": "VARCHAR",
    "name": "VARCHAR",
    "accelerator": "VARCHAR",
    "topology": "VARCHAR",
    "chips": "BIGINT",
}


def _schema(columns: Mapping[str, str]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in columns.items())


def create_relations(con: duckdb.DuckDBPyConnection) -> None:
    """The empty tables (``staged_*``, and ``labels``); ``define_relations`` adds the log
    and the views ``entries`` and ``retirements`` of the kinds asked for."""
    con.execute(f"CREATE TABLE staged_entries ({_schema(ENTRY_COLUMNS)})")
    con.execute(f"CREATE TABLE staged_retirements ({_schema(RETIREMENT_COLUMNS)})")
    con.execute(f"CREATE TABLE staged_observed ({_schema(OBSERVED_COLUMNS)})")
    con.execute(f"CREATE TABLE labels ({_schema(LABEL_COLUMNS)})")


def chips_of(attrs: Mapping[str, object]) -> int | None:
    """The resource's chip count; ``None`` when the attributes do not give a positive one."""
    value = attrs.get(CHIPS_ATTR)
    return value if type(value) is int and value > 0 else None


def _text(attrs: Mapping[str, object], name: str) -> str:
    value = attrs.get(name)
    return value if isinstance(value, str) else ""


def named(kind: Kind, key: str, attrs: Mapping[str, object]) -> tuple[str | None, str, str]:
    """(name or ``None``, accelerator, topology) as the Python report reads attributes."""
    name = Resource(kind, key, EventRecord(), attrs).name
    return (
        (None if name == key else name),
        _text(attrs, ACCELERATOR_ATTR),
        _text(attrs, TOPOLOGY_ATTR),
    )


class CsvRelations:
    """Rows for the three relations, written to CSV files under ``directory`` and loaded by
    ``load`` (DuckDB reads a CSV of millions of rows in a fraction of a second, where
    inserting them from Python takes minutes)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._paths = {
            "entries": directory / "entries.csv",
            "retirements": directory / "retirements.csv",
            "labels": directory / "labels.csv",
            "observed": directory / "observed.csv",
        }
        self._files: dict[str, TextIO] = {
            name: path.open("w", newline="", encoding="utf-8") for name, path in self._paths.items()
        }
        self._writers = {name: csv.writer(f) for name, f in self._files.items()}

    def record(
        self, cluster: str, kind: Kind, key: str, src: int, record: EventRecord, **row: object
    ) -> None:
        """The events of one record, in its order (``row``: retired_at and attributes)."""
        retired_at = row.get("retired_at")
        name, accelerator, topology = row.get("name"), row.get("accelerator"), row.get("topology")
        chips, has_attrs = row.get("chips"), bool(row.get("has_attrs"))
        write = self._writers["entries"].writerow
        for seq, (ts, flags) in enumerate(zip(record.timestamps, record.flags, strict=True)):
            # The attributes ride on the first row only: one row per lifetime is enough.
            if seq == 0 and has_attrs:
                write(
                    (
                        cluster,
                        kind.value,
                        key,
                        src,
                        retired_at,
                        seq,
                        ts,
                        flags,
                        True,
                        name,
                        accelerator,
                        topology,
                        chips,
                    )
                )
            else:
                write(
                    (
                        cluster,
                        kind.value,
                        key,
                        src,
                        retired_at,
                        seq,
                        ts,
                        flags,
                        False,
                        "",
                        "",
                        "",
                        "",
                    )
                )

    def live(self, cluster: str, kind: Kind, key: str, record: EventRecord) -> None:
        """A live record of a snapshot file (no attributes: they are not in the Go format)."""
        self.record(cluster, kind, key, SRC_SNAPSHOT, record)

    def archived(
        self,
        cluster: str,
        kind: Kind,
        key: str,
        record: EventRecord,
        *,
        attrs: Mapping[str, object],
        retired_at: int,
    ) -> None:
        name, accelerator, topology = named(kind, key, attrs)
        self.record(
            cluster,
            kind,
            key,
            SRC_ARCHIVE,
            record,
            retired_at=retired_at,
            has_attrs=True,
            name=name,
            accelerator=accelerator,
            topology=topology,
            chips=chips_of(attrs),
        )
        self._writers["retirements"].writerow((cluster, kind.value, key, retired_at))

    def label(self, cluster: str, kind: Kind, key: str, attrs: Mapping[str, object]) -> None:
        name, accelerator, topology = named(kind, key, attrs)
        row = (cluster, kind.value, key, name, accelerator, topology, chips_of(attrs))
        self._writers["labels"].writerow(row)

    def observed(self, cluster: str, kind: Kind, spans: Iterable[tuple[int, int]]) -> None:
        """The spans a snapshot mark says megamon was observing ``kind``."""
        for since, until in spans:
            self._writers["observed"].writerow((cluster, kind.value, since, until))

    def load(self, con: duckdb.DuckDBPyConnection) -> None:
        """Close the files and append them to the tables."""
        columns = {
            "entries": ENTRY_COLUMNS,
            "retirements": RETIREMENT_COLUMNS,
            "labels": LABEL_COLUMNS,
            "observed": OBSERVED_COLUMNS,
        }
        tables = {
            "entries": "staged_entries",
            "retirements": "staged_retirements",
            "labels": "labels",
            "observed": "staged_observed",
        }
        for name, handle in self._files.items():
            handle.close()
            path = self._paths[name]
            if path.stat().st_size == 0:
                continue
            types = "{" + ", ".join(f"'{c}': '{t}'" for c, t in columns[name].items()) + "}"
            con.execute(
                f"INSERT INTO {tables[name]} SELECT * FROM read_csv(?, header = false, "
                f"columns = {types}, quote = '\"', escape = '\"', nullstr = '')",
                [str(path)],
            )


# --- the log ---------------------------------------------------------------------------------

LOG_NAME_PARTS: dict[Kind, tuple[str, ...]] = {
    Kind.NODEPOOL: ("nodePoolName",),
    Kind.JOBSET: ("jobsetNamespace", "jobsetName"),
    Kind.JOBSET_NODES: ("jobsetNamespace", "jobsetName"),
    Kind.SLICE: ("sliceName",),
    Kind.LEADERWORKERSET: ("lwsNamespace", "lwsName"),
}
_ATTR_FIELDS = sorted(
    {ACCELERATOR_ATTR, TOPOLOGY_ATTR}
    | {part for parts in LOG_NAME_PARTS.values() for part in parts}
)
_LOG_COLUMNS = (
    "{'type': 'VARCHAR', 'kind': 'VARCHAR', 'key': 'VARCHAR', 'tsNs': 'BIGINT', "
    "'up': 'BOOLEAN', 'ed': 'BOOLEAN', 'f': 'BOOLEAN', 'attrs': 'STRUCT("
    + ", ".join(f'"{field}" VARCHAR' for field in _ATTR_FIELDS)
    + f', "{CHIPS_ATTR}" BIGINT)'
    + "'}"
)


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _name_sql() -> str:
    """The human name from the log's attributes, per kind (``NULL`` when a part is empty)."""
    cases = []
    for kind, parts in LOG_NAME_PARTS.items():
        fields = [f"nullif(attrs.\"{p}\", '')" for p in parts]
        cases.append(f"WHEN {_sql_text(kind.value)} THEN " + " || '/' || ".join(fields))
    return "CASE kind " + " ".join(cases) + " END"


def log_glob(root: Path) -> str:
    """Every segment of the history at ``root`` (``log/kind=<kind>/date=<day>/*.ndjson``)."""
    return str(root / "log" / "kind=*" / "date=*" / "*.ndjson")


def _read_log(root: Path, columns: str) -> str:
    """The segments of ``root``. A line that cannot be read (a damaged segment, which the
    recorder quarantines and never rewrites) is skipped, like a line missing a field the
    adapter needs: a report reads what is whole and never invents an event."""
    return (
        f"read_json({_sql_text(log_glob(root))}, format = 'newline_delimited', "
        f"columns = {columns}, hive_partitioning = false, ignore_errors = true)"
    )


def log_entries_sql(cluster: str, root: Path) -> str:
    """A SELECT of the log's event and attribute lines as ``entries`` rows: the one adapter
    from the log's columns to the canonical relation (with ``log_retirements_sql``).

    Heartbeats (``observed``) carry no event and are left out.
    """
    return f"""
      SELECT {_sql_text(cluster)} AS cluster, kind, key, {SRC_LOG} AS src,
             CAST(NULL AS BIGINT) AS retired_at, 0 AS seq, tsNs AS ts,
             CASE WHEN type = 'event'
                  THEN (CASE WHEN up THEN 1 ELSE 0 END) + (CASE WHEN ed THEN 2 ELSE 0 END)
                       + (CASE WHEN f THEN 4 ELSE 0 END) END AS flags,
             attrs IS NOT NULL AS has_attrs, {_name_sql()} AS name,
             coalesce(attrs."{ACCELERATOR_ATTR}", '') AS accelerator,
             coalesce(attrs."{TOPOLOGY_ATTR}", '') AS topology,
             CASE WHEN attrs."{CHIPS_ATTR}" > 0 THEN attrs."{CHIPS_ATTR}" END AS chips
      FROM {_read_log(root, _LOG_COLUMNS)}
      WHERE key IS NOT NULL AND tsNs IS NOT NULL AND kind IS NOT NULL
        AND ((type = 'event' AND up IS NOT NULL AND ed IS NOT NULL AND f IS NOT NULL)
             OR (type = 'attrs' AND attrs IS NOT NULL))
    """


_RETIRED_COLUMNS = "{'type': 'VARCHAR', 'kind': 'VARCHAR', 'key': 'VARCHAR', 'tsNs': 'BIGINT'}"


def log_retirements_sql(cluster: str, root: Path) -> str:
    """A SELECT of the log's ``retired`` lines as ``retirements`` rows."""
    return f"""
      SELECT {_sql_text(cluster)} AS cluster, kind, key, tsNs AS retired_at
      FROM {_read_log(root, _RETIRED_COLUMNS)}
      WHERE type = 'retired' AND key IS NOT NULL AND tsNs IS NOT NULL AND kind IS NOT NULL
    """


_OBSERVED_COLUMNS = "{'type': 'VARCHAR', 'kind': 'VARCHAR', 'tsNs': 'BIGINT', 'since': 'BIGINT'}"


def log_observed_sql(cluster: str, root: Path) -> str:
    """A SELECT of the log's heartbeats (``observed`` lines) as ``observed`` rows."""
    return f"""
      SELECT {_sql_text(cluster)} AS cluster, kind, since, tsNs AS until
      FROM {_read_log(root, _OBSERVED_COLUMNS)}
      WHERE type = 'observed' AND since IS NOT NULL AND tsNs IS NOT NULL AND kind IS NOT NULL
    """


def define_relations(
    con: duckdb.DuckDBPyConnection, histories: Iterable[tuple[str, Path]], kinds: Sequence[str]
) -> None:
    """Every history's log appended to the staged rows (one pass over the segments: the query
    reads the relations several times), and the views ``entries`` and ``retirements`` of
    ``kinds`` over them."""
    wanted = "(" + ", ".join(_sql_text(k) for k in kinds) + ")"
    for cluster, root in histories:
        if not any(root.glob("log/kind=*/date=*/*.ndjson")):
            continue
        entries = log_entries_sql(cluster, root)
        con.execute(f"INSERT INTO staged_entries SELECT * FROM ({entries}) WHERE kind IN {wanted}")
        retired = log_retirements_sql(cluster, root)
        con.execute(f"INSERT INTO staged_retirements {retired}")
        con.execute(f"INSERT INTO staged_observed {log_observed_sql(cluster, root)}")
    views = (
        ("entries", "staged_entries"),
        ("retirements", "staged_retirements"),
        ("observed", "staged_observed"),
    )
    for view, table in views:
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM {table} WHERE kind IN {wanted}")
