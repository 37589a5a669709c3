"""The report's figures in DuckDB SQL: window functions over each lifetime's events.

This restates ``megamon.summary.availability`` over the canonical relations
(``megamon.fleet.canonical``) and gives the same numbers to the nanosecond
(``test/fleet/test_equivalence.py`` checks it on random histories with coverage gaps). It
is the fast form of ``deploy/bigquery/views/figures.sql`` (the same steps, one CTE each, in
BigQuery SQL; its test compares the two): the events are sorted twice per lifetime, where
the step-per-CTE form sorts them about ten times; what is per lifetime is found by grouping.

1. **placed**: each row gets its *lifetime*: an archive entry's rows carry their own
   retirement, any other row belongs to the first retirement of its key at or after it (an
   ``ASOF`` join, only for keys ever retired), or to the live lifetime (``LIVE``). Key ids
   carry their history kind's id (``CK_SHIFT``). **lives**: each lifetime's attributes.
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
   (the history's coverage gaps, ``_WITH_GAPS``); **per lifetime**: the time split,
   incidents and provisioning, as ``summarize`` decides it.
"""

from __future__ import annotations

from megamon.fleet.canonical import CK_SHIFT

S_UP, S_DOWN, S_FAILED, S_EXPECTED, S_PROVISIONING = 0, 1, 2, 3, 4
"""Band states as small integers while the rows flow through the windows (strings cost
memory per row); the report's names (``BandState``) are given at the end."""
LIVE = 9223372036854775807
"""The ``life_end`` of a live lifetime (the largest BIGINT: after every retirement)."""

L = "kid, life_end"
W = f"PARTITION BY {L} ORDER BY o"
WHOLE = f"({W} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
RUNNING = f"({W} ROWS UNBOUNDED PRECEDING)"
BEFORE = f"({W} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
K = f"PARTITION BY {L} ORDER BY {{order}}"
"""The events' order: base rows in file order, others by timestamp (``o`` numbers it)."""

_PIECE_SQL = f"""
WITH
retired AS (
  SELECT DISTINCT kid, retired_at FROM retirements
),
retired_keys AS (
  SELECT DISTINCT kid FROM retired
),
placed AS (
  -- The ASOF join only for the keys that were ever retired (most never are).
  SELECT e.* EXCLUDE (retired_at), coalesce(e.retired_at, {LIVE}) AS life_end
  FROM entries e ANTI JOIN retired_keys USING (kid)
  UNION ALL
  SELECT e.* EXCLUDE (retired_at),
         coalesce(e.retired_at, r.retired_at, {LIVE}) AS life_end
  FROM (SELECT * FROM entries SEMI JOIN retired_keys USING (kid)) e
  ASOF LEFT JOIN retired r ON e.kid = r.kid AND r.retired_at >= e.ts
),
lives AS (
  SELECT {L},
         arg_max_null(name, priority) AS name,
         arg_max_null(accelerator, priority) AS accelerator,
         arg_max_null(topology, priority) AS topology,
         arg_max_null(chips, priority) AS chips
  FROM (
    -- An archive entry's attributes win; else the latest in the log. Placed apart from
    -- the events (few rows carry attributes), so that the events stream into the sorts.
    SELECT e.*, coalesce(e.retired_at, r.retired_at, {LIVE}) AS life_end,
           CASE WHEN src = 0 THEN {LIVE} ELSE ts END AS priority
    FROM (SELECT * FROM entries WHERE has_attrs) e
    ASOF LEFT JOIN retired r ON e.kid = r.kid AND r.retired_at >= e.ts
  )
  GROUP BY ALL
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
  FROM level1 GROUP BY ALL
),
level2 AS (
  SELECT l.*,
         -- The current period's head and the previous one's (row and flags in one number):
         -- a period's position is its head's row, so no period count is needed.
         max(CASE WHEN starts THEN o * 8 + flags END) OVER {RUNNING} % 8 AS head_flags,
         max(CASE WHEN starts THEN o * 8 + flags END) OVER {BEFORE} AS prev_head,
         max(CASE WHEN starts THEN mts END) OVER {BEFORE} AS prev_head_mts,
         t.first_ts, t.first_up_o, t.first_up_mts, t.last_o,
         greatest(mts, next_raw) AS next_mts
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
  )
  WHERE $since IS NULL OR span_end > $since
),
provisioning_ends AS (
  -- How the provisioning ended (its last nonempty band's state), and the first band after
  -- the first up that is neither failed nor empty: per lifetime, a grouping, not a sort.
  SELECT {L},
         arg_max(state, o) FILTER (WHERE piece_stop > piece_begin
                                     AND (first_up_o IS NULL OR o < first_up_o))
           AS last_provisioning_state,
         min(o) FILTER (WHERE piece_stop > piece_begin AND o >= first_up_o
                          AND state <> {S_FAILED}) AS first_settled_o
  FROM level3 GROUP BY ALL
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
       f.* EXCLUDE (kid, life_end, end_code),
       CASE f.end_code WHEN {S_UP} THEN 'up' WHEN {S_DOWN} THEN 'down'
         WHEN {S_FAILED} THEN 'failed' WHEN {S_EXPECTED} THEN 'expected-down'
         ELSE 'provisioning' END AS end_state
FROM (
  SELECT {L},
         min(span_start) AS span_start, min(span_end) AS span_end,
         arg_max(state, o) AS end_code,
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
         CASE WHEN arg_min(flags, o) & 1 = 1 THEN ''
              WHEN count(*) FILTER (WHERE starts AND o > 1) = 0
                THEN CASE WHEN arg_max(flags, o) & 4 = 4 THEN 'failed' ELSE 'provisioning' END
              ELSE 'success' END AS provisioning_state,
         CASE WHEN arg_min(flags, o) & 1 = 1 THEN 0
              WHEN count(*) FILTER (WHERE starts AND o > 1) = 0 AND arg_max(flags, o) & 4 = 4
                THEN greatest(0, arg_max(raw_ts, o) - arg_min(raw_ts, o))
              WHEN count(*) FILTER (WHERE starts AND o > 1) = 0
                THEN greatest(0, min(span_end) - arg_min(raw_ts, o))
              ELSE greatest(0, arg_min(raw_ts, o) FILTER (WHERE starts AND o > 1)
                               - arg_min(raw_ts, o)) END AS provisioning_duration
  FROM measured
  GROUP BY ALL
) f
JOIN key_ids k USING (kid)
LEFT JOIN lives l USING ({L})
LEFT JOIN labels lb
  ON f.life_end = {LIVE} AND lb.cluster = k.cluster AND lb.kind = k.kind AND lb.key = k.key
"""

_SOURCES = f"""
sources AS (
  SELECT {L}, min(src) AS base_src, max(src) AS top_src
  FROM placed WHERE flags IS NOT NULL GROUP BY ALL
),
events AS (
  SELECT p.kid, p.life_end, p.src, p.seq, p.ts, p.flags, s.base_src, s.top_src
  FROM placed p JOIN sources s USING ({L})
  WHERE p.flags IS NOT NULL
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
  SELECT {L}, ts, flags, ts AS k1, 0 AS k2, 0 AS k3 FROM placed WHERE flags IS NOT NULL
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
  SELECT l.kid, l.life_end, g.g_end AS cut_at, g.before + (g.g_end - g.g_start) AS u_cut
  FROM (SELECT DISTINCT kid, life_end, kid // {CK_SHIFT} AS ck, first_up_at FROM classed
        WHERE class = {S_PROVISIONING} AND o >= first_up_o) l
  ASOF JOIN gaps g ON l.ck = g.ck AND l.first_up_at <= g.g_end
),
located AS (
  SELECT c.*, coalesce(t.cut_at, piece_stop) AS cut_at, t.u_cut,
         coalesce(b.before + least(piece_begin - b.g_start, b.g_end - b.g_start), 0) AS u_begin
  FROM (SELECT *, kid // {CK_SHIFT} AS ck FROM classed) c
  LEFT JOIN carved t USING ({L})
  ASOF LEFT JOIN gaps b ON c.ck = b.ck AND c.piece_begin >= b.g_start
),
bounded AS (
  SELECT c.*,
         coalesce(s.before + least(piece_stop - s.g_start, s.g_end - s.g_start), 0) AS u_stop,
         CASE WHEN class = {S_PROVISIONING}
              THEN greatest(piece_begin, least(piece_stop, cut_at)) ELSE piece_begin END AS cut
  FROM located c
  ASOF LEFT JOIN gaps s ON c.ck = s.ck AND c.piece_stop >= s.g_start
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
  )
)
"""


def figures_sql(*, gaps: bool, slack: int, log_only: bool = False) -> str:
    """The figures query; ``gaps``: some history has unobserved time to carve out (the
    query without it skips the interval lookups), ``slack``: how old a running megamon's
    last heartbeat may be (nanoseconds) before the time after it is unobserved;
    ``log_only``: no snapshot or archive rows, so no lifetime has two sources to fold."""
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
