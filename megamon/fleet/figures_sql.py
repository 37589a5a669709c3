"""The fleet report's figures in SQL: the one text both engines run.

This restates ``megamon.summary.availability`` over the canonical relations
(``megamon.fleet.canonical``) and gives the same numbers to the nanosecond
(``test/fleet/test_equivalence.py`` and ``test/fleet/test_written_histories.py`` check it on
random histories). It is written once, here, in DuckDB's dialect restricted to what sqlglot
transpiles faithfully to BigQuery: no ``ASOF``, ``SEMI`` or ``ANTI`` join, no filtered
``arg_max``, no ``NULL`` given to ``greatest``/``least`` (DuckDB skips it, BigQuery returns
``NULL``), no ``NULL`` in a window's order. The DuckDB engine runs it transpiled by sqlglot
(``figures_sql``); ``megamon.fleet.bigquery`` prefixes it with the BigQuery external table's
reading and generates ``deploy/bigquery/views/`` from it (``make bigquery-views``).

1. **placed**: each event gets its *lifetime*: an archive entry's rows carry their own
   retirement, any other row belongs to the first retirement of its key at or after it (a
   running minimum over the key's events and retirements in reverse time order, only for
   keys ever retired), or to the live lifetime (``LIVE``). Key ids carry their history kind's
   id (``CK_SHIFT``). **lives**: each lifetime's attributes (the latest row carrying them).
2. **kept**: per lifetime, the rows of its *base* source (archive, else snapshot, else log)
   are kept as they are (a Go file may step back in time); another source's rows are folded in
   only when the base lacks that event's identity (timestamp, flags), once. Base rows keep
   their file order; the others go in timestamp order after equal timestamps (the log's
   fold). A chunk read from the log alone skips this (``log_only``).
3. **level1** (sort one): ``o`` numbers the events; running maximum of the timestamps
   (``mts``: skewed clocks never step back), the previous and next events. **lifetimes**:
   first event, first up and last event up to ``now``.
4. **level2** (sort two): each period's head (a period of one up bit is known by its head's
   row) and the previous period's. **level3**: rows after ``now`` left out, each row's band
   state and its band clipped to the span. A band that starts before the first up is
   provisioning: after the first up that can only be a failed band merged, across a
   zero-length up band, with the failed provisioning before it (``_split`` on merged
   bands); **provisioning_ends** says how provisioning ended.
5. **measured**: each band split into provisioning, its own state's time and unobserved time
   (the history's coverage gaps, ``_WITH_GAPS``: the unobserved time before an instant is
   found by a running maximum over the gaps and the bands of a history kind in time order);
   **per lifetime**: the time split, incidents and provisioning, as ``summarize`` decides it.

Where one row's value is wanted at the first or last row of a set (``arg_max`` in DuckDB),
small values are packed beside the row number (``o * 8 + flags``) and taken with ``max``:
exact in both dialects.
"""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp

from megamon.fleet.canonical import CK_SHIFT

S_UP, S_DOWN, S_FAILED, S_EXPECTED, S_PROVISIONING = 0, 1, 2, 3, 4
"""Band states as small integers while the rows flow through the windows (strings cost
memory per row); the report's names (``BandState``) are given at the end."""
LIVE = 9223372036854775807
"""The ``life_end`` of a live lifetime (the largest BIGINT: after every retirement)."""
DIALECT = "duckdb"
"""The dialect the text below is written in."""
NOW, SINCE = "now", "since"
"""The parameters of the text (``$now``, ``$since``: the window, integer nanoseconds;
``$since`` NULL: all history)."""

L = "kid, life_end"
W = f"PARTITION BY {L} ORDER BY o"
RUNNING = f"({W} ROWS UNBOUNDED PRECEDING)"
BEFORE = f"({W} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
K = f"PARTITION BY {L} ORDER BY {{order}}"
"""The events' order: base rows in file order, others by timestamp (``o`` numbers it)."""


def _lifetime_of(columns: str, rows: str) -> str:
    """``rows`` (with ``kid``, ``ts``, ``retired_at`` and ``columns``) of the keys ever
    retired, each with the first retirement of its key at or after it (``next_retired``):
    the key's rows and retirements in reverse time order, a retirement before the rows of
    its own instant, and the running minimum of the retirements."""
    nulls = ", ".join(f"NULL AS {c.strip()}" for c in columns.split(","))
    return f"""
    SELECT {columns}, kid, ts, retired_at, next_retired FROM (
      SELECT *, min(mark) OVER (PARTITION BY kid ORDER BY ts DESC, is_row
                                ROWS UNBOUNDED PRECEDING) AS next_retired
      FROM (
        SELECT {columns}, kid, ts, retired_at, 1 AS is_row, CAST(NULL AS BIGINT) AS mark
        FROM ({rows}) x
        UNION ALL
        SELECT {nulls}, kid, retired_at AS ts, NULL AS retired_at, 0 AS is_row,
               retired_at AS mark
        FROM retired
      ) y
    ) z
    WHERE is_row = 1"""


_PIECE_SQL = f"""
WITH
retired AS (
  SELECT DISTINCT kid, retired_at FROM retirements
),
retired_keys AS (
  SELECT DISTINCT kid FROM retired
),
placed AS (
  -- The running minimum only for the keys that were ever retired (most never are).
  SELECT e.kid, e.src, e.seq, e.ts, e.flags, coalesce(e.retired_at, {LIVE}) AS life_end
  FROM entries e
  WHERE e.flags IS NOT NULL AND NOT EXISTS (SELECT 1 FROM retired_keys r WHERE r.kid = e.kid)
  UNION ALL
  SELECT kid, src, seq, ts, flags, coalesce(retired_at, next_retired, {LIVE}) AS life_end
  FROM ({
    _lifetime_of(
        "src, seq, flags",
        "SELECT e.* FROM entries e WHERE e.flags IS NOT NULL AND EXISTS "
        "(SELECT 1 FROM retired_keys r WHERE r.kid = e.kid)",
    )
})
),
lives AS (
  -- An archive entry's attributes win; else the latest in the log. Placed apart from
  -- the events (few rows carry attributes), so that the events stream into the sorts.
  SELECT kid, life_end, name, accelerator, topology, chips FROM (
    SELECT *, row_number() OVER (PARTITION BY {L} ORDER BY priority DESC) AS latest
    FROM (
      SELECT kid, name, accelerator, topology, chips,
             coalesce(retired_at, {LIVE}) AS life_end,
             CASE WHEN src = 0 THEN {LIVE} ELSE ts END AS priority
      FROM entries e
      WHERE e.has_attrs AND NOT EXISTS (SELECT 1 FROM retired_keys r WHERE r.kid = e.kid)
      UNION ALL
      SELECT kid, name, accelerator, topology, chips,
             coalesce(retired_at, next_retired, {LIVE}) AS life_end,
             CASE WHEN src = 0 THEN {LIVE} ELSE ts END AS priority
      FROM ({
    _lifetime_of(
        "src, name, accelerator, topology, chips",
        "SELECT e.* FROM entries e WHERE e.has_attrs AND EXISTS "
        "(SELECT 1 FROM retired_keys r WHERE r.kid = e.kid)",
    )
})
    ) a
  ) b
  WHERE latest = 1
),
{{sources}}
level1 AS (
  SELECT {L}, ts AS raw_ts, flags, flags & 1 AS up,
         row_number() OVER ({K}) AS o,
         {{mts}} AS mts,
         lag(flags) OVER ({K}) AS prev_flags,
         lead(ts) OVER ({K}) AS next_raw
  FROM kept
),
lifetimes AS (
  -- Per lifetime, by grouping (not a window over the whole partition): where it starts, its
  -- first up and its last event up to now.
  SELECT {L}, min(mts) AS first_ts,
         min(o) FILTER (WHERE up = 1 AND mts <= $now) AS first_up_o,
         min(mts) FILTER (WHERE up = 1 AND mts <= $now) AS first_up_mts,
         max(o) FILTER (WHERE mts <= $now) AS last_o
  FROM level1 GROUP BY {L}
),
level2 AS (
  SELECT l.*,
         -- The current period's head and the previous one's (row and flags in one number):
         -- a period's position is its head's row, so no period count is needed.
         max(CASE WHEN starts THEN o * 8 + flags END) OVER {RUNNING} % 8 AS head_flags,
         max(CASE WHEN starts THEN o * 8 + flags END) OVER {BEFORE} AS prev_head,
         max(CASE WHEN starts THEN mts END) OVER {BEFORE} AS prev_head_mts,
         t.first_ts, t.first_up_o, t.first_up_mts, t.last_o,
         greatest(mts, coalesce(next_raw, mts)) AS next_mts
  FROM (SELECT *, prev_flags IS NULL OR up <> prev_flags & 1 AS starts FROM level1) l
  JOIN lifetimes t USING ({L})
),
level3 AS (
  SELECT *,
         CASE WHEN up = 1 THEN {S_UP}
              WHEN first_up_o IS NULL OR o < first_up_o
                THEN CASE WHEN flags & 4 = 4 THEN {S_FAILED} ELSE {S_PROVISIONING} END
              WHEN head_flags & 2 = 2 THEN {S_EXPECTED}
              WHEN flags & 4 = 4 THEN {S_FAILED}
              ELSE {S_DOWN} END AS state,
         greatest(mts, span_start) AS piece_begin,
         least(CASE WHEN o = last_o THEN span_end ELSE next_mts END, span_end) AS piece_stop
  FROM (
    SELECT *,
           greatest(CASE WHEN life_end = {LIVE} THEN $now ELSE least(life_end, $now) END,
                    first_ts) AS span_end,
           CASE WHEN $since IS NULL THEN first_ts ELSE greatest(first_ts, $since) END
             AS span_start,
           coalesce(first_up_mts, greatest(
             CASE WHEN life_end = {LIVE} THEN $now ELSE least(life_end, $now) END,
             first_ts)) AS first_up_at
    FROM level2 WHERE mts <= $now
  ) s
  WHERE $since IS NULL OR span_end > $since
),
provisioning_ends AS (
  -- How the provisioning ended (its last nonempty band's state), and the first band after
  -- the first up that is neither failed nor empty: per lifetime, a grouping, not a sort.
  SELECT {L},
         max(CASE WHEN piece_stop > piece_begin AND (first_up_o IS NULL OR o < first_up_o)
                  THEN o * 8 + state END) % 8 AS last_provisioning_state,
         min(o) FILTER (WHERE piece_stop > piece_begin AND o >= first_up_o
                          AND state <> {S_FAILED}) AS first_settled_o
  FROM level3 GROUP BY {L}
),
level4 AS (
  SELECT l.*, piece_stop > piece_begin AS nonempty, p.last_provisioning_state,
         p.first_settled_o
  FROM level3 l JOIN provisioning_ends p USING ({L})
),
classed AS (
  SELECT *,
         CASE WHEN o < first_up_o OR first_up_o IS NULL THEN {S_PROVISIONING}
              WHEN state = {S_FAILED} AND last_provisioning_state = {S_FAILED}
                   AND o < coalesce(first_settled_o, last_o + 1) THEN {S_PROVISIONING}
              ELSE state END AS class,
         o > 1 AND starts AND up = 1 AND prev_head // 8 > 1
           AND prev_head % 8 & 2 = 0 AND ($since IS NULL OR mts > $since) AS recovery
  FROM level4
),
{{measured}}
SELECT k.cluster, k.kind, k.key, nullif(f.life_end, {LIVE}) AS retired_at,
       coalesce(CASE WHEN l.kid IS NOT NULL THEN l.name ELSE lb.name END, k.key) AS name,
       coalesce(CASE WHEN l.kid IS NOT NULL THEN l.accelerator ELSE lb.accelerator END, '')
         AS accelerator,
       coalesce(CASE WHEN l.kid IS NOT NULL THEN l.topology ELSE lb.topology END, '')
         AS topology,
       CASE WHEN l.kid IS NOT NULL THEN l.chips ELSE lb.chips END AS chips,
       f.span_start, f.span_end,
       CASE f.end_code WHEN {S_UP} THEN 'up' WHEN {S_DOWN} THEN 'down'
         WHEN {S_FAILED} THEN 'failed' WHEN {S_EXPECTED} THEN 'expected-down'
         ELSE 'provisioning' END AS end_state,
       f.up_time, f.down_time, f.failed_time, f.expected_down_time, f.provisioning_time,
       f.unobserved_time, f.interruptions, f.recoveries, f.recovered_down_time,
       f.provisioning_state, f.provisioning_duration
FROM (
  SELECT {L},
         min(span_start) AS span_start, min(span_end) AS span_end,
         max(o * 8 + state) % 8 AS end_code,
         coalesce(sum(rest) FILTER (WHERE nonempty AND rest_class = {S_UP}), 0) AS up_time,
         coalesce(sum(rest) FILTER (WHERE nonempty AND rest_class IN ({S_DOWN}, {S_FAILED})), 0)
           AS down_time,
         coalesce(sum(rest) FILTER (WHERE nonempty AND rest_class = {S_FAILED}), 0)
           AS failed_time,
         coalesce(sum(rest) FILTER (WHERE nonempty AND rest_class = {S_EXPECTED}), 0)
           AS expected_down_time,
         coalesce(sum(head) FILTER (WHERE nonempty), 0) AS provisioning_time,
         coalesce(sum(unobserved) FILTER (WHERE nonempty), 0) AS unobserved_time,
         count(*) FILTER (WHERE o > 1 AND up <> prev_flags & 1 AND up = 0 AND flags & 2 = 0
                          AND ($since IS NULL OR mts > $since)) AS interruptions,
         count(*) FILTER (WHERE recovery) AS recoveries,
         coalesce(sum(mts - prev_head_mts) FILTER (WHERE recovery), 0) AS recovered_down_time,
         CASE WHEN min(o * 8 + flags) % 8 & 1 = 1 THEN ''
              WHEN count(*) FILTER (WHERE starts AND o > 1) = 0
                THEN CASE WHEN max(o * 8 + flags) % 8 & 4 = 4 THEN 'failed'
                          ELSE 'provisioning' END
              ELSE 'success' END AS provisioning_state,
         CASE WHEN min(o * 8 + flags) % 8 & 1 = 1 THEN 0
              WHEN count(*) FILTER (WHERE starts AND o > 1) = 0
                   AND max(o * 8 + flags) % 8 & 4 = 4
                THEN greatest(0, arg_max(raw_ts, o) - arg_min(raw_ts, o))
              WHEN count(*) FILTER (WHERE starts AND o > 1) = 0
                THEN greatest(0, min(span_end) - arg_min(raw_ts, o))
              -- The first period start after the first event: the order value is NULL on
              -- every other row, and both dialects' arg_min skip those.
              ELSE greatest(0, arg_min(raw_ts, CASE WHEN starts AND o > 1 THEN o END)
                               - arg_min(raw_ts, o)) END AS provisioning_duration
  FROM measured
  GROUP BY {L}
) f
JOIN key_ids k USING (kid)
LEFT JOIN lives l USING ({L})
LEFT JOIN labels lb
  ON f.life_end = {LIVE} AND lb.cluster = k.cluster AND lb.kind = k.kind AND lb.key = k.key
"""

_SOURCES = f"""
sources AS (
  SELECT {L}, min(src) AS base_src, max(src) AS top_src
  FROM placed GROUP BY {L}
),
events AS (
  SELECT p.kid, p.life_end, p.src, p.seq, p.ts, p.flags, s.base_src, s.top_src
  FROM placed p JOIN sources s USING ({L})
),
single AS (
  SELECT {L}, src, seq, ts, flags,
         CASE WHEN src < 2 THEN 0 ELSE ts END AS k1, 0 AS k2,
         CASE WHEN src < 2 THEN seq ELSE 0 END AS k3
  FROM events WHERE base_src = top_src
),
mixed AS (
  SELECT {L}, src, seq, ts, flags,
         min(src) OVER (PARTITION BY {L}, ts, flags) AS identity_src,
         row_number() OVER (PARTITION BY {L}, ts, flags ORDER BY src, seq) AS identity_n,
         base_src,
         CASE WHEN src = base_src AND src < 2
              THEN max(ts) OVER (PARTITION BY {L}, src ORDER BY seq ROWS UNBOUNDED PRECEDING)
              ELSE ts END AS okey
  FROM events WHERE base_src <> top_src
),
kept AS (
  SELECT {L}, ts, flags, k1, k2, k3 FROM single
  UNION ALL
  SELECT {L}, ts, flags, okey, src, seq FROM mixed
  WHERE src = base_src OR (identity_src > base_src AND identity_n = 1)
)
,"""
_LOG_ONLY = f"""
kept AS (
  -- Every lifetime's events come from the log alone: they go in timestamp order.
  SELECT {L}, ts, flags, ts AS k1, 0 AS k2, 0 AS k3 FROM placed
),"""

_OBSERVED_EVERYWHERE = f"""
measured AS (
  -- No history has a coverage gap: every piece is observed whole.
  SELECT *,
         CASE WHEN class = {S_PROVISIONING} THEN piece_stop - piece_begin ELSE 0 END AS head,
         CASE WHEN class = {S_PROVISIONING} THEN 0 ELSE piece_stop - piece_begin END AS rest,
         class AS rest_class, 0 AS unobserved
  FROM classed
)
"""

_PIECE_COLUMNS = (
    "kid",
    "life_end",
    "o",
    "raw_ts",
    "flags",
    "up",
    "prev_flags",
    "mts",
    "starts",
    "prev_head_mts",
    "span_start",
    "span_end",
    "state",
    "class",
    "recovery",
    "nonempty",
    "piece_begin",
    "piece_stop",
)
"""What the measuring and the per-lifetime figures read of each piece."""


def _gap_before(pieces: str, at: str, prefix: str) -> str:
    """``pieces`` (``_PIECE_COLUMNS`` and more), each with the last gap of its history kind
    that starts at or before ``at`` (``{prefix}_start``, ``_end``, ``_before``; ``NULL``
    when none): the pieces and the gaps in time order, a gap before the pieces of its
    instant, and running maxima of the gaps' values, which grow from gap to gap (the gaps
    are disjoint, in order, and ``before`` sums the earlier ones)."""
    carried = [c for c in _PIECE_COLUMNS if c not in {"kid"}]
    columns = ", ".join(f"p.{c}" for c in carried)
    nulls = ", ".join(f"NULL AS {c}" for c in carried)
    window = "(PARTITION BY ck ORDER BY instant, is_piece ROWS UNBOUNDED PRECEDING)"
    return f"""
  SELECT * FROM (
    SELECT *, max(g_start) OVER {window} AS {prefix}_start,
              max(g_end) OVER {window} AS {prefix}_end,
              max(before) OVER {window} AS {prefix}_before
    FROM (
      SELECT p.kid, {columns}, p.ck, p.cut_at, p.u_cut, p.u_begin, {at} AS instant, 1 AS is_piece,
             CAST(NULL AS BIGINT) AS g_start, CAST(NULL AS BIGINT) AS g_end,
             CAST(NULL AS BIGINT) AS before
      FROM {pieces} p
      UNION ALL
      SELECT NULL AS kid, {nulls}, ck, NULL AS cut_at, NULL AS u_cut, NULL AS u_begin,
             g_start AS instant, 0 AS is_piece, g_start, g_end, before
      FROM gaps
    ) x
  ) y
  WHERE is_piece = 1"""


_WITH_GAPS = f"""
spans AS (
  -- Distinct: a span is in the snapshot mark and in the heartbeat it came from.
  SELECT DISTINCT ck, since, until FROM observed
),
after_spans AS (
  SELECT ck, since, until,
         max(until) OVER (PARTITION BY ck ORDER BY since, until
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last_end
  FROM spans
),
raw_gaps AS (
  -- Between observed spans, and after the last one when it ended more than the slack
  -- before now (megamon stopped); before the first span nothing is known either way.
  SELECT ck, last_end AS g_start, least(since, $now) AS g_end
  FROM after_spans WHERE since > last_end
  UNION ALL
  SELECT ck, max(until) AS g_start, $now AS g_end
  FROM spans GROUP BY ck HAVING $now - max(until) > {{slack}}
),
gaps AS (
  -- ``before``: the unobserved time of the history's earlier gaps, so that the unobserved
  -- time before any instant t is one lookup (``U(t)``).
  SELECT ck, g_start, g_end,
         coalesce(sum(g_end - g_start) OVER (PARTITION BY ck ORDER BY g_start
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
  FROM raw_gaps WHERE g_end > g_start
),
carved AS (
  -- A provisioning band stretched past the first up (a failed band merged across a
  -- zero-length up) stays provisioning up to the first gap that ends at or after the first
  -- up: the band carved after that gap starts after the first up, so it is down time.
  -- (Few lifetimes: a join, the first such gap by its end; ``before`` grows with it.)
  SELECT l.kid, l.life_end, min(g.g_end) AS cut_at, min(g.before + (g.g_end - g.g_start)) AS u_cut
  FROM (SELECT DISTINCT kid, life_end, kid // {CK_SHIFT} AS ck, first_up_at FROM classed
        WHERE class = {S_PROVISIONING} AND o >= first_up_o) l
  JOIN gaps g ON l.ck = g.ck AND l.first_up_at <= g.g_end
  GROUP BY l.kid, l.life_end
),
cut_pieces AS (
  SELECT {", ".join(f"c.{c}" for c in _PIECE_COLUMNS)}, c.kid // {CK_SHIFT} AS ck,
         coalesce(t.cut_at, c.piece_stop) AS cut_at, t.u_cut, CAST(NULL AS BIGINT) AS u_begin
  FROM classed c LEFT JOIN carved t USING ({L})
),
located AS (
  SELECT {", ".join(_PIECE_COLUMNS)}, ck, cut_at, u_cut,
         coalesce(b_before + least(piece_begin - b_start, b_end - b_start), 0) AS u_begin
  FROM ({_gap_before("cut_pieces", "p.piece_begin", "b")}) lb
),
bounded AS (
  SELECT *,
         coalesce(s_before + least(piece_stop - s_start, s_end - s_start), 0) AS u_stop,
         CASE WHEN class = {S_PROVISIONING}
              THEN greatest(piece_begin, least(piece_stop, cut_at)) ELSE piece_begin END AS cut
  FROM ({_gap_before("located", "p.piece_stop", "s")}) ls
),
measured AS (
  SELECT *,
         (cut - piece_begin) - (u_at_cut - u_begin) AS head,
         (piece_stop - cut) - (u_stop - u_at_cut) AS rest,
         CASE WHEN class = {S_PROVISIONING} THEN state ELSE class END AS rest_class,
         u_stop - u_begin AS unobserved
  FROM (
    SELECT *, CASE WHEN cut = piece_begin THEN u_begin WHEN cut = piece_stop THEN u_stop
                   ELSE u_cut END AS u_at_cut
    FROM bounded
  ) m
)
"""


def figures_text(*, gaps: bool, slack: int, log_only: bool = False) -> str:
    """The figures query as written (DuckDB's dialect, ``$now`` and ``$since``): ``gaps``:
    some history has unobserved time to carve out (the query without it skips the gap
    lookups), ``slack``: how old a running megamon's last heartbeat may be (nanoseconds)
    before the time after it is unobserved; ``log_only``: no snapshot or archive rows, so no
    lifetime has two sources to fold."""
    measured = _WITH_GAPS.format(slack=int(slack)) if gaps else _OBSERVED_EVERYWHERE
    return _PIECE_SQL.format(
        measured=measured,
        sources=_LOG_ONLY if log_only else _SOURCES,
        order="k1, flags" if log_only else "k1, k2, k3, flags",
        # In timestamp order the running maximum of the timestamps is the timestamp.
        mts="ts"
        if log_only
        else f"max(ts) OVER ({K.format(order='k1, k2, k3, flags')} ROWS UNBOUNDED PRECEDING)",
    )


AGGREGATES_SQL = """
SELECT CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
       kind, accelerator, topology,
       count(*) AS resources,
       sum(up_time) AS up_time, sum(down_time) AS down_time, sum(failed_time) AS failed_time,
       sum(expected_down_time) AS expected_down_time,
       sum(provisioning_time) AS provisioning_time, sum(unobserved_time) AS unobserved_time,
       sum(interruptions) AS interruptions, sum(recoveries) AS recoveries,
       sum(recovered_down_time) AS recovered_down_time,
       count(*) FILTER (WHERE provisioning_state = 'success') AS provisioned,
       count(*) FILTER (WHERE provisioning_state = 'provisioning') AS provisioning,
       count(*) FILTER (WHERE provisioning_state = 'failed') AS provisioning_failed,
       count(*) FILTER (WHERE provisioning_state = '') AS not_provisioned,
       coalesce(sum(provisioning_duration) FILTER (WHERE provisioning_state = 'success'), 0)
         AS provisioned_duration,
       coalesce(sum(chips), 0) AS chips,
       -- Chip-nanoseconds, exact: past a BIGINT for a large fleet.
       coalesce(sum(CAST(chips AS DECIMAL(38, 0)) * up_time), 0) AS chip_up_time,
       coalesce(sum(CAST(chips AS DECIMAL(38, 0)) * down_time), 0) AS chip_down_time,
       coalesce(sum(CAST(chips AS DECIMAL(38, 0)) * failed_time), 0) AS chip_failed_time,
       grouping(cluster) AS fleet_row
FROM figures
GROUP BY GROUPING SETS ((cluster, kind, accelerator, topology), (kind, accelerator, topology))
"""
"""The figures (the relation ``figures``, one row per lifetime) summed per cluster, kind,
accelerator and topology, and over every cluster (``fleet_row`` = 1, cluster ``*``)."""


def parse(text: str, dialect: str = DIALECT) -> exp.Expr:
    """One statement of ``dialect`` (this module's unless said)."""
    return sqlglot.parse_one(text, read=dialect)


@functools.cache
def figures_sql(*, gaps: bool, slack: int, log_only: bool = False) -> str:
    """The figures query the DuckDB engine runs: ``figures_text`` transpiled by sqlglot (the
    same path as the BigQuery views', so what DuckDB runs is what they were made from);
    cached, since parsing takes a while."""
    return parse(figures_text(gaps=gaps, slack=slack, log_only=log_only)).sql(dialect="duckdb")


@functools.cache
def aggregates_sql() -> str:
    """``AGGREGATES_SQL`` as the DuckDB engine runs it (transpiled, as ``figures_sql``)."""
    return parse(AGGREGATES_SQL).sql(dialect="duckdb")
