"""The canonical relations the fleet report's SQL reads, and the ways histories reach them.

Whatever wrote a history (today's megamon, the Go megamon, the append-only log), the SQL sees
these relations, keys named by integer ids:

``history_ids`` / ``key_ids``
    ``cluster, kind, ck`` and ``cluster, kind, key, kid``: a history kind's id and a key's
    (``kid`` = ``ck × CK_SHIFT`` + the key's id in the kind's dictionary).
``entries``
    one row per event or attribute change: ``kid, src, retired_at, seq, ts, flags,
    has_attrs, name, accelerator, topology, chips``. ``src`` ranks the sources of one
    lifetime (``SRC_ARCHIVE`` < ``SRC_SNAPSHOT`` < ``SRC_LOG``); ``retired_at`` is set on an
    archive entry's rows (the lifetime they belong to); ``seq`` is the row's position in its
    file; ``flags`` is the event's flag byte (``megamon.domain.events``), ``NULL`` for a
    change of attributes alone; ``has_attrs`` says the row carries the key's attributes
    (``name`` is the human name, ``NULL`` when the attributes lack it).
``retirements``
    ``kid, retired_at``: when a key stopped being observed.
``labels``
    ``cluster, kind, key, name, accelerator, topology, chips``: from ``reports/latest.json``,
    the fallback for live keys the history does not name (the Go megamon's histories).
``observed``
    ``ck, since, until``: spans megamon was observing a kind without a break (the log's
    heartbeats, and the spans a snapshot mark keeps); the gaps between them are the
    unobserved time the report leaves out of availability.

The snapshot files, archive entries and marks are decoded by the codec (the same decoders
as every other reader) and handed to DuckDB as CSV (``CsvRelations``); the log's segments
are read from their Parquet batches (``megamon.fleet.columnar``), converted once through
``megamon.codec.log_sql``, the one adapter from the log's columns to these. ``Relations.use`` points
the views at one chunk of histories at a time.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import duckdb

from megamon.codec.log_sql import (
    T_ATTRS,
    T_EVENT,
    T_OBSERVED,
    T_RETIRED,
    LogAttributes,
    log_rows_sql,
    sql_text,
)
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.fleet.columnar import ColumnarCache, Converted
from megamon.summary.availability import (
    ACCELERATOR_ATTR,
    TOPOLOGY_ATTR,
    Resource,
    name_attrs,
)
from megamon.summary.chips import CHIPS_ATTR

SRC_ARCHIVE = 0
SRC_SNAPSHOT = 1
SRC_LOG = 2
CK_SHIFT = 1 << 40
"""A key id is ``history kind id × CK_SHIFT + n``: room for a trillion keys per history."""
STATE_BITS = FLAG_UP | FLAG_EXPECTED_DOWN | FLAG_FAILED
"""The bits of an event's flag byte that are its state. The byte also holds the reason of a
down event (since v0.2.0, ``REASON_SHIFT``), which no figure depends on and the log's rows
leave out: a snapshot's copy of an event has the log line's identity only without it."""

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
        for seq, (ts, byte) in enumerate(zip(record.timestamps, record.flags, strict=True)):
            flags = byte & STATE_BITS
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

    def live(
        self,
        cluster: str,
        kind: Kind,
        key: str,
        record: EventRecord,
        attrs: Mapping[str, object] | None = None,
    ) -> None:
        """A live record of a snapshot file, with the attributes its snapshot mark keeps
        (``None``: the Go format has none, and a file the Go megamon wrote has no mark)."""
        if attrs is None:
            self.record(cluster, kind, key, SRC_SNAPSHOT, record)
            return
        name, accelerator, topology = named(kind, key, attrs)
        self.record(
            cluster,
            kind,
            key,
            SRC_SNAPSHOT,
            record,
            has_attrs=True,
            name=name,
            accelerator=accelerator,
            topology=topology,
            chips=chips_of(attrs),
        )

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


def segments_of(root: Path, kind: str) -> list[Path]:
    """Every segment of one kind of the history at ``root``
    (``log/kind=<kind>/date=<day>/*.ndjson``)."""
    return sorted((root / "log" / f"kind={kind}").glob("date=*/*.ndjson"))


def _read_sql(kind: str) -> str:
    """One kind's segments as a columnar batch's rows (``megamon.codec.log_sql``), with the
    attributes the Python report names and shapes resources by."""
    attributes = LogAttributes(
        name_parts=name_attrs(Kind(kind)),
        accelerator=ACCELERATOR_ATTR,
        topology=TOPOLOGY_ATTR,
        chips=CHIPS_ATTR,
    )
    return log_rows_sql(attributes)


def define_relations(
    con: duckdb.DuckDBPyConnection,
    histories: Sequence[tuple[str, Path]],
    kinds: Sequence[str],
    columnar: ColumnarCache,
) -> Relations:
    """The relations the figures read, over the staged rows (snapshots, archives, labels)
    and every history's log in Parquet (converted where new): ``history_ids`` (``cluster,
    kind, ck``), ``key_ids`` (``cluster, kind, key, kid``) and the views ``entries``,
    ``retirements`` (``kid, retired_at``) and ``observed`` (``ck, since, until``) over the
    history kinds ``Relations.use`` names."""
    con.execute("CREATE TABLE history_ids (cluster VARCHAR, kind VARCHAR, ck BIGINT)")
    con.execute("CREATE TABLE key_ids (cluster VARCHAR, kind VARCHAR, key VARCHAR, kid BIGINT)")
    parts: list[tuple[int, Converted, int]] = []
    ck = 0
    for cluster, root in histories:
        for kind in kinds:
            ck += 1
            con.execute("INSERT INTO history_ids VALUES (?, ?, ?)", [cluster, kind, ck])
            segments = segments_of(root, kind)
            if not segments:
                continue
            converted = columnar.convert(con, root, kind, segments, _read_sql(kind))
            if converted.keys is not None:
                con.execute(
                    f"INSERT INTO key_ids SELECT ?, ?, key, ? * {CK_SHIFT} + id "
                    f"FROM read_parquet({sql_text(str(converted.keys))})",
                    [cluster, kind, ck],
                )
            if converted.batches:
                parts.append((ck, converted, _rows(con, converted)))
    # Keys only the snapshots and archives name: ids after the dictionary's.
    con.execute(
        f"""INSERT INTO key_ids
        SELECT s.cluster, s.kind, s.key,
               h.ck * {CK_SHIFT} + coalesce(m.top, 0) + row_number() OVER (
                 PARTITION BY s.cluster, s.kind ORDER BY s.key) AS kid
        FROM (SELECT DISTINCT cluster, kind, key FROM staged_entries
              UNION SELECT DISTINCT cluster, kind, key FROM staged_retirements) s
        JOIN history_ids h USING (cluster, kind)
        LEFT JOIN (SELECT cluster, kind, max(kid) % {CK_SHIFT} AS top FROM key_ids
                   GROUP BY ALL) m USING (cluster, kind)
        ANTI JOIN key_ids k USING (cluster, kind, key)"""
    )
    return Relations(tuple(parts), tuple(range(1, ck + 1)))


CHUNK_ROWS = 2_000_000
"""About how many log rows one figures query reads: histories are computed in chunks of
whole histories (a lifetime never spans two), so that the windows' sorts stay in memory
however large the fleet."""


@dataclass(frozen=True, slots=True)
class Relations:
    """The histories' log in Parquet (per history kind id ``ck``), for ``use``."""

    parts: tuple[tuple[int, Converted, int], ...]
    """(ck, its batches, their rows)."""
    cks: tuple[int, ...]
    """Every history kind, with a log or not."""

    def chunks(self, rows: int = CHUNK_ROWS) -> list[tuple[int, ...]]:
        """The history kinds in groups of about ``rows`` log rows (one group at least)."""
        logged = {ck: n for ck, _, n in self.parts}
        chunks: list[list[int]] = [[]]
        total = 0
        for ck in self.cks:
            n = logged.get(ck, 0)
            if chunks[-1] and total + n > rows:
                chunks.append([])
                total = 0
            chunks[-1].append(ck)
            total += n
        return [tuple(c) for c in chunks]

    def use(self, con: duckdb.DuckDBPyConnection, cks: Sequence[int]) -> bool:
        """The views ``entries``, ``retirements`` and ``observed`` over the history kinds
        ``cks`` only; whether they read only the log (no snapshot or archive rows)."""
        wanted = set(cks)
        _views(con, [(ck, c) for ck, c, _ in self.parts if ck in wanted], cks)
        among = _among(cks)
        staged = con.execute(
            "SELECT count(*) FROM staged_entries e JOIN key_ids k USING (cluster, kind, key) "
            f"WHERE k.kid // {CK_SHIFT} IN {among}"
        ).fetchone()
        return not (staged and staged[0])


def _among(cks: Sequence[int]) -> str:
    """``cks`` as an SQL list (``(NULL)`` when empty: no history)."""
    return "(" + (", ".join(str(int(ck)) for ck in cks) or "NULL") + ")"


def _rows(con: duckdb.DuckDBPyConnection, converted: Converted) -> int:
    paths = "[" + ", ".join(sql_text(str(b)) for b in converted.batches) + "]"
    row = con.execute(f"SELECT sum(num_rows) FROM parquet_file_metadata({paths})").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _views(
    con: duckdb.DuckDBPyConnection, parts: Sequence[tuple[int, Converted]], cks: Sequence[int]
) -> None:
    def log_part(ck: int, converted: Converted, columns: str, where: str) -> str:
        return (
            f"SELECT {ck} AS ck, {columns} FROM read_parquet("
            + "["
            + ", ".join(sql_text(str(b)) for b in converted.batches)
            + f"]) WHERE {where}"
        )

    among = _among(cks)
    entry_columns = (
        f"{ck_kid('id')} AS kid, {SRC_LOG} :: TINYINT AS src, NULL :: BIGINT AS retired_at, "
        "0 :: BIGINT AS seq, ts, flags :: INTEGER AS flags, has_attrs, name, accelerator, "
        "topology, chips"
    )
    staged = (
        "SELECT k.kid, e.src, e.retired_at, e.seq, e.ts, e.flags, e.has_attrs, e.name, "
        "e.accelerator, e.topology, e.chips FROM staged_entries e "
        f"JOIN key_ids k USING (cluster, kind, key) WHERE k.kid // {CK_SHIFT} IN {among}"
    )
    logged = [log_part(ck, c, entry_columns, f"t IN ({T_EVENT}, {T_ATTRS})") for ck, c in parts]
    con.execute(
        "CREATE OR REPLACE VIEW entries AS "
        + " UNION ALL ".join([staged, *(f"SELECT * EXCLUDE (ck) FROM ({q})" for q in logged)])
    )
    retired = [
        log_part(ck, c, f"{ck_kid('id')} AS kid, ts AS retired_at", f"t = {T_RETIRED}")
        for ck, c in parts
    ]
    con.execute(
        "CREATE OR REPLACE VIEW retirements AS "
        + " UNION ALL ".join(
            [
                "SELECT k.kid, r.retired_at FROM staged_retirements r "
                f"JOIN key_ids k USING (cluster, kind, key) WHERE k.kid // {CK_SHIFT} IN {among}",
                *(f"SELECT kid, retired_at FROM ({q})" for q in retired),
            ]
        )
    )
    observed = [log_part(ck, c, "since, ts AS until", f"t = {T_OBSERVED}") for ck, c in parts]
    con.execute(
        "CREATE OR REPLACE VIEW observed AS "
        + " UNION ALL ".join(
            [
                "SELECT h.ck, o.since, o.until FROM staged_observed o "
                f"JOIN history_ids h USING (cluster, kind) WHERE h.ck IN {among}",
                *observed,
            ]
        )
    )


def ck_kid(id_column: str) -> str:
    """A key's id in the report: its history kind's id (``ck``) in the high bits."""
    return f"ck * {CK_SHIFT} + {id_column}"
