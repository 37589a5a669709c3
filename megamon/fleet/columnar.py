"""The log's segments as Parquet, converted once: what makes a weekly fleet report fast.

A segment is create-only (``docs/history.md``), so its conversion is valid for as long as the
segment is there, unchanged. Per history and kind, the segments not converted yet are parsed
(NDJSON, explicit column types, damaged lines skipped) into one Parquet *batch*, with each key
replaced by an integer id from the kind's key dictionary (``keys.parquet``, append-only: an id
never changes). A manifest records which segment (by name, size and modification time) is in
which batch. A report reads the batches; only new segments are parsed. A batch one of whose
segments changed or went away (a lifecycle rule expired it) is dropped and its other segments
converted again, so a batch never holds a line its history no longer has.

In a batch, an event line keeps its attributes only when they matter to the report: the
report names a lifetime by its latest attributes, so a line's attributes are dropped when the
key's next line of the batch (in time order) carries the same ones in the same lifetime (no
retirement between). Every event line carries its attributes in the log; this is most of the
saving. A key whose lines are spread over several batches keeps the last attributes of each.

Rows: ``t`` (``T_EVENT``, ``T_ATTRS``, ``T_RETIRED``, ``T_OBSERVED``), ``id`` (the key's id;
``NULL`` on heartbeats), ``ts``, ``flags`` (events), ``since`` (heartbeats), ``has_attrs`` and
the attributes the report reads (``name``, ``accelerator``, ``topology``, ``chips``).
Writes land in temporary files renamed into place, the manifest last: an interrupted
conversion leaves a cache the next report trusts (at worst it converts some segments again).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson

from megamon.codec.log_sql import PATHS, T_EVENT, T_RETIRED

MANIFEST = "manifest.json"
KEYS = "keys.parquet"
SegmentStamp = tuple[int, int]
"""A segment's size and modification time (nanoseconds): a changed copy is a new segment."""


@dataclass(frozen=True, slots=True)
class Converted:
    """One history kind in Parquet: its batches and its key dictionary (``key``, ``id``)."""

    batches: tuple[Path, ...]
    keys: Path | None


def history_directory(cache: Path, root: Path) -> Path:
    """Where the conversions of the history at ``root`` are kept."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:24]
    return cache / digest


def _stamp(path: Path) -> SegmentStamp:
    st = path.stat()
    return (st.st_size, st.st_mtime_ns)


def _well_formed(manifest: object) -> bool:
    if not isinstance(manifest, dict) or not isinstance(manifest.get("segments"), dict):
        return False
    entries = manifest["segments"].values()
    return (
        all(
            isinstance(e, list)
            and len(e) == 3
            and all(type(v) is int for v in e[:2])
            and isinstance(e[2], str)
            for e in entries
        )
        and isinstance(manifest.get("batches", []), list)
        and type(manifest.get("next", 1)) is int
    )


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _paths_sql(paths: Sequence[Path]) -> str:
    return "[" + ", ".join(_sql_text(str(p)) for p in paths) + "]"


class ColumnarCache:
    """Converted segments under ``directory`` (one subdirectory per history and kind)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _load_manifest(self, here: Path) -> dict[str, Any]:
        try:
            manifest: dict[str, Any] = orjson.loads((here / MANIFEST).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {"segments": {}, "batches": [], "next": 1}
        if not _well_formed(manifest):  # a damaged cache is converted again, not trusted
            return {"segments": {}, "batches": [], "next": 1}
        return manifest

    def _save_manifest(self, here: Path, manifest: dict[str, Any]) -> None:
        temporary = here / f".{MANIFEST}.{os.getpid()}"
        temporary.write_bytes(orjson.dumps(manifest))
        temporary.replace(here / MANIFEST)

    def convert(
        self,
        con: duckdb.DuckDBPyConnection,
        root: Path,
        kind: str,
        segments: Sequence[Path],
        read_sql: str,
    ) -> Converted:
        """The kind's segments under ``root`` in Parquet, converting the new ones.

        ``read_sql`` reads segments (its ``{paths}``) as rows of ``t, key, ts, flags, since,
        has_attrs, name, accelerator, topology, chips`` (``megamon.fleet.canonical``)."""
        here = history_directory(self.directory, root) / kind
        here.mkdir(parents=True, exist_ok=True)
        manifest = self._load_manifest(here)
        stamps = {str(p.relative_to(root)): _stamp(p) for p in segments}
        known: dict[str, list[Any]] = manifest["segments"]
        stale = {
            entry[2]
            for name, entry in known.items()
            if tuple(entry[:2]) != stamps.get(name) or not (here / entry[2]).exists()
        }
        kept = {n: e for n, e in known.items() if e[2] not in stale and n in stamps}
        batches = [b for b in manifest.get("batches", []) if b not in stale and (here / b).exists()]
        new = sorted(n for n in stamps if n not in kept)
        if new:
            batch = f"batch-{int(manifest.get('next', 1)):08d}.parquet"
            self._write_batch(con, here, batch, [root / n for n in new], read_sql)
            batches.append(batch)
            kept.update({n: [*stamps[n], batch] for n in new})
            manifest["next"] = int(manifest.get("next", 1)) + 1
        manifest["segments"], manifest["batches"] = kept, batches
        self._save_manifest(here, manifest)
        for name in stale:
            (here / name).unlink(missing_ok=True)
        keys = here / KEYS
        return Converted(tuple(here / b for b in batches), keys if keys.exists() else None)

    def _write_batch(
        self,
        con: duckdb.DuckDBPyConnection,
        here: Path,
        batch: str,
        paths: Sequence[Path],
        read_sql: str,
    ) -> None:
        """Parse ``paths`` once into ``batch``; new keys get ids in the dictionary."""
        keys = here / KEYS
        rows = read_sql.replace(PATHS, _paths_sql(paths))
        con.execute("CREATE OR REPLACE TEMP TABLE conv_rows AS " + rows)
        if keys.exists():
            con.execute(
                "CREATE OR REPLACE TEMP TABLE conv_keys AS "
                f"SELECT * FROM read_parquet({_sql_text(str(keys))})"
            )
        else:
            con.execute("CREATE OR REPLACE TEMP TABLE conv_keys (key VARCHAR, id BIGINT)")
        con.execute(
            """INSERT INTO conv_keys
               SELECT key, (SELECT coalesce(max(id), 0) FROM conv_keys)
                           + row_number() OVER (ORDER BY key)
               FROM (SELECT DISTINCT key FROM conv_rows WHERE key IS NOT NULL
                     EXCEPT SELECT key FROM conv_keys)"""
        )
        temporary = here / f".{batch}.{os.getpid()}"
        con.execute(f"COPY ({_BATCH_SQL}) TO {_sql_text(str(temporary))} (FORMAT parquet)")
        temporary.replace(here / batch)
        temporary_keys = here / f".{KEYS}.{os.getpid()}"
        con.execute(f"COPY conv_keys TO {_sql_text(str(temporary_keys))} (FORMAT parquet)")
        temporary_keys.replace(keys)
        con.execute("DROP TABLE conv_rows")
        con.execute("DROP TABLE conv_keys")


_BATCH_SQL = f"""
WITH numbered AS (
  SELECT r.t, k.id, r.ts, r.flags, r.since, r.has_attrs, r.name, r.accelerator, r.topology,
         r.chips
  FROM conv_rows r LEFT JOIN conv_keys k USING (key)
),
attributed AS (
  -- The key's next attribute-carrying or retired line, in time order (a retirement after an
  -- attributes line at the same instant: that line is still in the lifetime it ends).
  SELECT *,
         lead(t) OVER w AS next_t,
         lead(name) OVER w IS NOT DISTINCT FROM name
           AND lead(accelerator) OVER w IS NOT DISTINCT FROM accelerator
           AND lead(topology) OVER w IS NOT DISTINCT FROM topology
           AND lead(chips) OVER w IS NOT DISTINCT FROM chips AS same_as_next
  FROM numbered WHERE has_attrs OR t = {T_RETIRED}
  WINDOW w AS (PARTITION BY id ORDER BY ts, t = {T_RETIRED})
),
superseded AS (
  SELECT *, next_t IS NOT NULL AND next_t <> {T_RETIRED} AND same_as_next AS drop_attrs
  FROM attributed WHERE has_attrs
)
SELECT t, id, ts, flags, since, has_attrs AND NOT drop_attrs AS has_attrs,
       CASE WHEN drop_attrs THEN NULL ELSE name END AS name,
       CASE WHEN drop_attrs THEN NULL ELSE accelerator END AS accelerator,
       CASE WHEN drop_attrs THEN NULL ELSE topology END AS topology,
       CASE WHEN drop_attrs THEN NULL ELSE chips END AS chips
FROM superseded WHERE t = {T_EVENT} OR NOT drop_attrs
UNION ALL
SELECT t, id, ts, flags, since, has_attrs, name, accelerator, topology, chips
FROM numbered WHERE NOT has_attrs
"""
