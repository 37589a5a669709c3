"""The report's figures in SQL (DuckDB): window functions over each lifetime's events.

This is ``megamon.summary.availability`` restated over relations, and must give the same
numbers to the nanosecond (``test/fleet/test_equivalence.py`` checks it on random
histories). The input is the canonical ``entries`` relation (``megamon.fleet.canonical``):
one row per event (or attribute change) of any source, plus ``retirements`` and ``labels``.

The steps, each one CTE:

1. **placed**: every entry is given its *lifetime*: an archive entry's rows carry their own
   retirement; any other row belongs to the first retirement of its key at or after it
   (``NULL``: the live lifetime).
2. **kept**: per lifetime, the rows of its *base* source (archive, else snapshot, else log)
   are kept as they are (a Go file may hold steps back in time); the other sources' rows are
   folded in only when the base lacks that event's identity (key, timestamp, flags), once.
3. **ordered**: base rows keep their file order, the others go in timestamp order after
   equal timestamps (the log's fold); ``mts`` is the running maximum (skewed clocks never
   step back); rows later than ``now`` are dropped.
4. **periods**: consecutive rows of one up bit form a period; each row's band state.
5. **pieces**: each row's band clipped to the span, merged groups of one state (a band that
   starts before the first up is provisioning, as ``_split`` decides on merged bands).
6. **figures**: per lifetime, the time split, incidents and provisioning.
"""

from __future__ import annotations

LIFETIME = "cluster, kind, key, life_end"
LIVE = 9223372036854775807
"""The ``life_end`` of a live lifetime (the largest BIGINT: after every retirement), so that
lifetimes join on equal keys."""

FIGURES_SQL = f"""
WITH
retired AS (
  SELECT DISTINCT cluster, kind, key, retired_at FROM retirements
),
stream AS (
  SELECT cluster, kind, key, src, retired_at, seq, ts, flags, has_attrs, name, accelerator,
         topology, chips, CAST(NULL AS BIGINT) AS ret, 0 AS is_ret
  FROM entries
  UNION ALL
  SELECT cluster, kind, key, NULL, NULL, NULL, retired_at, NULL, NULL, NULL, NULL, NULL, NULL,
         retired_at, 1
  FROM retired
),
placed AS (
  SELECT * EXCLUDE (ret, is_ret, retired_at),
         coalesce(retired_at, min(ret) OVER (
           PARTITION BY cluster, kind, key ORDER BY ts, is_ret
           ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), {LIVE}) AS life_end
  FROM stream
),
lives AS (
  SELECT {LIFETIME}, bool_or(has_attrs) AS has_attrs,
         arg_max(name, (-src, ts, seq)) FILTER (WHERE has_attrs) AS name,
         arg_max(accelerator, (-src, ts, seq)) FILTER (WHERE has_attrs) AS accelerator,
         arg_max(topology, (-src, ts, seq)) FILTER (WHERE has_attrs) AS topology,
         arg_max(chips, (-src, ts, seq)) FILTER (WHERE has_attrs) AS chips
  FROM placed WHERE src IS NOT NULL
  GROUP BY ALL
),
identified AS (
  SELECT {LIFETIME}, src, seq, ts, flags,
         min(src) OVER (PARTITION BY {LIFETIME}) AS base_src,
         min(src) OVER (PARTITION BY {LIFETIME}, ts, flags) AS identity_src,
         row_number() OVER (PARTITION BY {LIFETIME}, ts, flags ORDER BY src, seq) AS identity_n
  FROM placed WHERE flags IS NOT NULL
),
kept AS (
  SELECT {LIFETIME}, src, seq, ts, flags,
         CASE WHEN src = base_src AND src < 2
              THEN max(ts) OVER (PARTITION BY {LIFETIME}, src ORDER BY seq
                                 ROWS UNBOUNDED PRECEDING)
              ELSE ts END AS okey
  FROM identified
  WHERE src = base_src OR (identity_src > base_src AND identity_n = 1)
),
ordered AS (
  SELECT {LIFETIME}, ts AS raw_ts, flags,
         row_number() OVER (PARTITION BY {LIFETIME} ORDER BY okey, src, seq, flags) AS o
  FROM kept
),
monotonic AS (
  SELECT *, max(raw_ts) OVER (PARTITION BY {LIFETIME} ORDER BY o ROWS UNBOUNDED PRECEDING)
         AS mts
  FROM ordered
),
prefix AS (
  SELECT *, flags & 1 AS up,
         lag(flags & 1) OVER (PARTITION BY {LIFETIME} ORDER BY o) AS prev_up,
         lead(mts) OVER (PARTITION BY {LIFETIME} ORDER BY o) AS next_mts
  FROM monotonic WHERE mts <= $now
),
spans AS (
  SELECT {LIFETIME},
         min(mts) AS first_ts,
         min(o) FILTER (WHERE up = 1) AS first_up_o,
         min(mts) FILTER (WHERE up = 1) AS first_up_mts,
         max(o) AS last_o,
         arg_min(raw_ts, o) AS first_raw,
         arg_max(raw_ts, o) AS last_raw,
         arg_max(flags, o) AS last_flags,
         arg_min(flags, o) AS first_flags
  FROM prefix GROUP BY ALL
),
bounded AS (
  SELECT s.*,
         greatest(CASE WHEN s.life_end = {LIVE} THEN $now ELSE least(s.life_end, $now) END,
                  s.first_ts) AS span_end
  FROM spans s
),
windowed AS (
  SELECT b.*,
         CASE WHEN $since IS NULL THEN b.first_ts ELSE greatest(b.first_ts, $since) END
           AS span_start,
         coalesce(b.first_up_mts, b.span_end) AS first_up_at
  FROM bounded b
  WHERE $since IS NULL OR b.span_end > $since
),
periods AS (
  SELECT p.*, w.span_start, w.span_end, w.first_up_o, w.first_up_at,
         sum(CASE WHEN p.prev_up IS NULL OR p.up <> p.prev_up THEN 1 ELSE 0 END) OVER (
           PARTITION BY p.cluster, p.kind, p.key, p.life_end ORDER BY p.o
           ROWS UNBOUNDED PRECEDING) AS period
  FROM prefix p JOIN windowed w USING ({LIFETIME})
),
period_heads AS (
  SELECT *,
         first_value(flags) OVER (PARTITION BY {LIFETIME}, period ORDER BY o) AS head_flags,
         first_value(mts) OVER (PARTITION BY {LIFETIME}, period ORDER BY o) AS head_mts
  FROM periods
),
states AS (
  SELECT *,
         CASE WHEN up = 1 THEN 'up'
              WHEN first_up_o IS NULL OR o < first_up_o
                THEN CASE WHEN flags & 4 = 4 THEN 'failed' ELSE 'provisioning' END
              WHEN head_flags & 2 = 2 THEN 'expected-down'
              WHEN flags & 4 = 4 THEN 'failed'
              ELSE 'down' END AS state,
         greatest(mts, span_start) AS piece_begin,
         least(coalesce(next_mts, span_end), span_end) AS piece_stop,
         lag(period) OVER (PARTITION BY {LIFETIME} ORDER BY o) AS prev_period,
         lag(head_flags) OVER (PARTITION BY {LIFETIME} ORDER BY o) AS prev_head_flags,
         lag(head_mts) OVER (PARTITION BY {LIFETIME} ORDER BY o) AS prev_head_mts
  FROM period_heads
),
incidents AS (
  SELECT {LIFETIME},
         count(*) FILTER (WHERE o > 1 AND up <> prev_up AND up = 0 AND flags & 2 = 0
                          AND ($since IS NULL OR mts > $since)) AS interruptions,
         count(*) FILTER (WHERE o > 1 AND up <> prev_up AND up = 1 AND prev_period >= 2
                          AND prev_head_flags & 2 = 0
                          AND ($since IS NULL OR mts > $since)) AS recoveries,
         coalesce(sum(mts - prev_head_mts) FILTER (
                    WHERE o > 1 AND up <> prev_up AND up = 1 AND prev_period >= 2
                    AND prev_head_flags & 2 = 0
                    AND ($since IS NULL OR mts > $since)), 0) AS recovered_down_time,
         max(period) AS periods,
         arg_min(raw_ts, o) FILTER (WHERE period = 2) AS second_period_raw,
         arg_max(state, o) AS end_state
  FROM states GROUP BY ALL
),
pieces AS (
  SELECT *,
         sum(CASE WHEN prev_state IS NULL OR prev_state <> state THEN 1 ELSE 0 END) OVER (
           PARTITION BY {LIFETIME} ORDER BY o ROWS UNBOUNDED PRECEDING) AS grp
  FROM (
    SELECT *, lag(state) OVER (PARTITION BY {LIFETIME} ORDER BY o) AS prev_state
    FROM states WHERE piece_stop > piece_begin
  )
),
classed AS (
  SELECT *, piece_stop - piece_begin AS length,
         CASE WHEN min(piece_begin) OVER (PARTITION BY {LIFETIME}, grp) < first_up_at
              THEN 'provisioning' ELSE state END AS class
  FROM pieces
),
times AS (
  SELECT {LIFETIME},
         coalesce(sum(length) FILTER (WHERE class = 'up'), 0) AS up_time,
         coalesce(sum(length) FILTER (WHERE class IN ('down', 'failed')), 0) AS down_time,
         coalesce(sum(length) FILTER (WHERE class = 'failed'), 0) AS failed_time,
         coalesce(sum(length) FILTER (WHERE class = 'expected-down'), 0) AS expected_down_time,
         coalesce(sum(length) FILTER (WHERE class = 'provisioning'), 0) AS provisioning_time
  FROM classed GROUP BY ALL
)
SELECT w.cluster, w.kind, w.key, nullif(w.life_end, {LIVE}) AS retired_at,
       coalesce(CASE WHEN l.has_attrs THEN l.name ELSE lb.name END, w.key) AS name,
       coalesce(CASE WHEN l.has_attrs THEN l.accelerator ELSE lb.accelerator END, '')
         AS accelerator,
       coalesce(CASE WHEN l.has_attrs THEN l.topology ELSE lb.topology END, '') AS topology,
       CASE WHEN l.has_attrs THEN l.chips ELSE lb.chips END AS chips,
       w.span_start, w.span_end, i.end_state,
       coalesce(t.up_time, 0) AS up_time, coalesce(t.down_time, 0) AS down_time,
       coalesce(t.failed_time, 0) AS failed_time,
       coalesce(t.expected_down_time, 0) AS expected_down_time,
       coalesce(t.provisioning_time, 0) AS provisioning_time,
       i.interruptions, i.recoveries, i.recovered_down_time,
       CASE WHEN w.first_flags & 1 = 1 THEN ''
            WHEN i.periods = 1 AND w.last_flags & 4 = 4 THEN 'failed'
            WHEN i.periods = 1 THEN 'provisioning'
            ELSE 'success' END AS provisioning_state,
       CASE WHEN w.first_flags & 1 = 1 THEN 0
            WHEN i.periods = 1 AND w.last_flags & 4 = 4
              THEN greatest(0, w.last_raw - w.first_raw)
            WHEN i.periods = 1 THEN greatest(0, w.span_end - w.first_raw)
            ELSE greatest(0, i.second_period_raw - w.first_raw) END AS provisioning_duration
FROM windowed w
JOIN incidents i USING ({LIFETIME})
LEFT JOIN times t USING ({LIFETIME})
LEFT JOIN lives l USING ({LIFETIME})
LEFT JOIN labels lb
  ON w.life_end = {LIVE} AND lb.cluster = w.cluster AND lb.kind = w.kind AND lb.key = w.key
"""
