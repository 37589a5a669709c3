"""The log's segments read by SQL: the one adapter from the NDJSON columns to rows an engine
computes with, beside the codec that writes them (``megamon.codec.log``).

``megamon.codec.log`` writes and reads a segment line by line in Python; an engine that reads
millions of lines (the fleet report on DuckDB) reads the same columns with ``read_json``. This
module is that reading, so a change to the log's columns is made in one package: a line
becomes ``t`` (``T_EVENT``, ``T_ATTRS``, ``T_RETIRED``, ``T_OBSERVED``), ``key``, ``ts``,
``flags`` (an event's state bits: ``up`` 1, ``ed`` 2, ``f`` 4, as ``megamon.domain.events``;
a down event's ``reason`` is not a state and is left out), ``since`` (heartbeats),
``has_attrs`` and the attributes a report reads (``name``, ``accelerator``, ``topology``,
``chips``), which the caller names (``LogAttributes``).

A line that cannot be read (a damaged segment, which the recorder quarantines and never
rewrites) is skipped, like a line missing a field it needs: a report reads what is whole and
never invents an event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from megamon.codec.log import TYPE_ATTRS, TYPE_EVENT, TYPE_OBSERVED, TYPE_RETIRED
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP

T_EVENT = 0
T_ATTRS = 1
T_RETIRED = 2
T_OBSERVED = 3
"""A row's line type as a small integer (a string per row costs memory in a columnar batch)."""
PATHS = "{paths}"
"""Where the segments' paths go (an SQL list of strings) in ``log_rows_sql``'s text."""


@dataclass(frozen=True, slots=True)
class LogAttributes:
    """Which attributes of one kind's lines name and shape a resource: ``name_parts``
    (joined with ``/``), and the accelerator, topology and chip count keys."""

    name_parts: Sequence[str]
    accelerator: str
    topology: str
    chips: str

    def fields(self) -> list[str]:
        """Every text attribute read, sorted (the chip count is an integer)."""
        return sorted({*self.name_parts, self.accelerator, self.topology})


def sql_text(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def _columns(attributes: LogAttributes) -> str:
    struct = ", ".join(f'"{field}" VARCHAR' for field in attributes.fields())
    return (
        "{'type': 'VARCHAR', 'key': 'VARCHAR', 'tsNs': 'BIGINT', 'since': 'BIGINT', "
        "'up': 'BOOLEAN', 'ed': 'BOOLEAN', 'f': 'BOOLEAN', "
        f"'attrs': 'STRUCT({struct}, \"{attributes.chips}\" BIGINT)'}}"
    )


def _name_sql(attributes: LogAttributes) -> str:
    """The human name from a line's attributes (``NULL`` when a part is empty)."""
    if not attributes.name_parts:
        return "NULL :: VARCHAR"
    return " || '/' || ".join(f"nullif(attrs.\"{p}\", '')" for p in attributes.name_parts)


def log_rows_sql(attributes: LogAttributes) -> str:
    """The ``SELECT`` that reads one kind's segments (``PATHS``) as rows (the module's
    docstring)."""
    chips = f'attrs."{attributes.chips}"'
    return f"""
SELECT CASE type WHEN {sql_text(TYPE_EVENT)} THEN {T_EVENT}
                 WHEN {sql_text(TYPE_ATTRS)} THEN {T_ATTRS}
                 WHEN {sql_text(TYPE_RETIRED)} THEN {T_RETIRED} ELSE {T_OBSERVED} END AS t,
       CASE WHEN type <> {sql_text(TYPE_OBSERVED)} THEN key END AS key, tsNs AS ts,
       CASE WHEN type = {sql_text(TYPE_EVENT)}
            THEN (CASE WHEN up THEN {FLAG_UP} ELSE 0 END)
                 + (CASE WHEN ed THEN {FLAG_EXPECTED_DOWN} ELSE 0 END)
                 + (CASE WHEN f THEN {FLAG_FAILED} ELSE 0 END) END :: TINYINT AS flags,
       CASE WHEN type = {sql_text(TYPE_OBSERVED)} THEN since END AS since,
       type IN ({sql_text(TYPE_EVENT)}, {sql_text(TYPE_ATTRS)}) AND attrs IS NOT NULL
         AS has_attrs,
       {_name_sql(attributes)} AS name,
       coalesce(attrs."{attributes.accelerator}", '') AS accelerator,
       coalesce(attrs."{attributes.topology}", '') AS topology,
       CASE WHEN {chips} > 0 THEN {chips} END AS chips
FROM read_json({PATHS}, format = 'newline_delimited', columns = {_columns(attributes)},
               hive_partitioning = false, ignore_errors = true)
WHERE tsNs IS NOT NULL
  AND ((type = {sql_text(TYPE_EVENT)} AND key IS NOT NULL AND up IS NOT NULL
        AND ed IS NOT NULL AND f IS NOT NULL)
       OR (type = {sql_text(TYPE_ATTRS)} AND key IS NOT NULL AND attrs IS NOT NULL)
       OR (type = {sql_text(TYPE_RETIRED)} AND key IS NOT NULL)
       OR (type = {sql_text(TYPE_OBSERVED)} AND since IS NOT NULL))
"""
