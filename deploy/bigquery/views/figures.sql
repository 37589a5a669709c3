-- megamon fleet report, BigQuery: the figures of every resource lifetime over [since_ns, now_ns]
-- (integer nanoseconds; since_ns NULL = all history), from the append-only log.
-- The definitions are megamon's report (docs/report.md); test/fleet/test_bigquery.py
-- transpiles this file to DuckDB and checks it against `megamon report --clusters`.
CREATE OR REPLACE TABLE FUNCTION megamon_fleet.figures(now_ns INT64, since_ns INT64) AS (
WITH
retired AS (
  SELECT DISTINCT cluster, kind, key, tsNs AS retired_at
  FROM megamon_fleet.log WHERE type = 'retired'
),
-- Each event's lifetime: the first retirement of its key at or after it, else the live one.
placed AS (
  SELECT DISTINCT e.cluster, e.kind, e.key, e.tsNs AS ts,
         IF(e.up, 1, 0) + IF(e.ed, 2, 0) + IF(e.f, 4, 0) AS flags,
         COALESCE((SELECT MIN(r.retired_at) FROM retired r
                   WHERE r.cluster = e.cluster AND r.kind = e.kind AND r.key = e.key
                     AND r.retired_at >= e.tsNs), 9223372036854775807) AS life_end
  FROM megamon_fleet.log e WHERE e.type = 'event'
),
attributed AS (
  SELECT a.cluster, a.kind, a.key, a.tsNs AS ts, a.attrs,
         COALESCE((SELECT MIN(r.retired_at) FROM retired r
                   WHERE r.cluster = a.cluster AND r.kind = a.kind AND r.key = a.key
                     AND r.retired_at >= a.tsNs), 9223372036854775807) AS life_end,
         ROW_NUMBER() OVER (PARTITION BY a.cluster, a.kind, a.key ORDER BY a.tsNs DESC) AS n
  FROM megamon_fleet.log a WHERE a.type IN ('event', 'attrs') AND a.attrs IS NOT NULL
),
lives AS (
  SELECT cluster, kind, key, life_end,
         CASE kind
           WHEN 'nodepool' THEN NULLIF(JSON_VALUE(attrs, '$.nodePoolName'), '')
           WHEN 'jobset' THEN NULLIF(JSON_VALUE(attrs, '$.jobsetNamespace'), '') || '/'
                              || NULLIF(JSON_VALUE(attrs, '$.jobsetName'), '')
           WHEN 'jobset_nodes' THEN NULLIF(JSON_VALUE(attrs, '$.jobsetNamespace'), '') || '/'
                                    || NULLIF(JSON_VALUE(attrs, '$.jobsetName'), '')
           WHEN 'slice' THEN NULLIF(JSON_VALUE(attrs, '$.sliceName'), '')
           WHEN 'leaderworkerset' THEN NULLIF(JSON_VALUE(attrs, '$.lwsNamespace'), '') || '/'
                                       || NULLIF(JSON_VALUE(attrs, '$.lwsName'), '')
         END AS name,
         COALESCE(JSON_VALUE(attrs, '$.tpuAccelerator'), '') AS accelerator,
         COALESCE(JSON_VALUE(attrs, '$.tpuTopology'), '') AS topology,
         SAFE_CAST(JSON_VALUE(attrs, '$.tpuChipCount') AS INT64) AS chips
  FROM (
    SELECT *, ROW_NUMBER() OVER (
      PARTITION BY cluster, kind, key, life_end ORDER BY ts DESC) AS latest
    FROM attributed
  )
  WHERE latest = 1
),
-- Running maximum of the timestamps: a clock that steps back never makes time negative.
ordered AS (
  SELECT cluster, kind, key, life_end, ts AS raw_ts, flags,
         ROW_NUMBER() OVER (PARTITION BY cluster, kind, key, life_end ORDER BY ts, flags) AS o
  FROM placed
),
monotonic AS (
  SELECT *, MAX(raw_ts) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o
                              ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS mts
  FROM ordered
),
-- The events megamon knew at now_ns.
prefix AS (
  SELECT *, flags & 1 AS up,
         LAG(flags & 1) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o) AS prev_up,
         LEAD(mts) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o) AS next_mts,
         MAX(o) OVER (PARTITION BY cluster, kind, key, life_end) AS last_o
  FROM monotonic WHERE mts <= now_ns
),
spans AS (
  SELECT cluster, kind, key, life_end,
         MIN(mts) AS first_ts,
         MIN(IF(up = 1, o, NULL)) AS first_up_o,
         MIN(IF(up = 1, mts, NULL)) AS first_up_mts,
         MIN(IF(o = 1, raw_ts, NULL)) AS first_raw,
         MIN(IF(o = last_o, raw_ts, NULL)) AS last_raw,
         MIN(IF(o = last_o, flags, NULL)) AS last_flags,
         MIN(IF(o = 1, flags, NULL)) AS first_flags
  FROM prefix GROUP BY cluster, kind, key, life_end
),
windowed AS (
  SELECT *,
         IF(since_ns IS NULL, first_ts, GREATEST(first_ts, COALESCE(since_ns, 0))) AS span_start,
         COALESCE(first_up_mts, span_end) AS first_up_at
  FROM (
    SELECT *,
           GREATEST(IF(life_end = 9223372036854775807, now_ns, LEAST(life_end, now_ns)), first_ts)
             AS span_end
    FROM spans
  )
  WHERE since_ns IS NULL OR span_end > since_ns
),
periods AS (
  SELECT p.*, w.span_start, w.span_end, w.first_up_o, w.first_up_at,
         SUM(IF(p.prev_up IS NULL OR p.up <> p.prev_up, 1, 0)) OVER (
           PARTITION BY p.cluster, p.kind, p.key, p.life_end ORDER BY p.o
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS period
  FROM prefix p JOIN windowed w USING (cluster, kind, key, life_end)
),
heads AS (
  SELECT *,
         FIRST_VALUE(flags) OVER (PARTITION BY cluster, kind, key, life_end, period ORDER BY o)
           AS head_flags,
         FIRST_VALUE(mts) OVER (PARTITION BY cluster, kind, key, life_end, period ORDER BY o)
           AS head_mts
  FROM periods
),
-- Each event's band: its state, from it to the next event, clipped to the span.
states AS (
  SELECT *,
         CASE WHEN up = 1 THEN 'up'
              WHEN first_up_o IS NULL OR o < first_up_o
                THEN IF(flags & 4 = 4, 'failed', 'provisioning')
              WHEN head_flags & 2 = 2 THEN 'expected-down'
              WHEN flags & 4 = 4 THEN 'failed'
              ELSE 'down' END AS state,
         GREATEST(mts, span_start) AS piece_begin,
         LEAST(COALESCE(next_mts, span_end), span_end) AS piece_stop,
         LAG(period) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o) AS prev_period,
         LAG(head_flags) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o)
           AS prev_head_flags,
         LAG(head_mts) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o)
           AS prev_head_mts
  FROM heads
),
incidents AS (
  SELECT cluster, kind, key, life_end,
         COUNTIF(o > 1 AND up <> prev_up AND up = 0 AND flags & 2 = 0
                 AND (since_ns IS NULL OR mts > since_ns)) AS interruptions,
         COUNTIF(o > 1 AND up <> prev_up AND up = 1 AND prev_period >= 2
                 AND prev_head_flags & 2 = 0 AND (since_ns IS NULL OR mts > since_ns)) AS recoveries,
         COALESCE(SUM(IF(o > 1 AND up <> prev_up AND up = 1 AND prev_period >= 2
                         AND prev_head_flags & 2 = 0 AND (since_ns IS NULL OR mts > since_ns),
                         mts - prev_head_mts, 0)), 0) AS recovered_down_time,
         MAX(period) AS periods,
         MIN(IF(period = 2, raw_ts, NULL)) AS second_period_raw,
         MIN(IF(o = last_o, state, NULL)) AS end_state
  FROM states GROUP BY cluster, kind, key, life_end
),
-- Adjacent bands of one state merge; a merged band that starts before the first up is
-- provisioning time.
pieces AS (
  SELECT *,
         SUM(IF(prev_state IS NULL OR prev_state <> state, 1, 0)) OVER (
           PARTITION BY cluster, kind, key, life_end ORDER BY o
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS grp
  FROM (
    SELECT *, LAG(state) OVER (PARTITION BY cluster, kind, key, life_end ORDER BY o)
                AS prev_state
    FROM states WHERE piece_stop > piece_begin
  )
),
-- Time megamon was not observing a kind: the gaps between its heartbeats' spans, and after
-- the last one when it is older than 120 s (twice the heartbeat: megamon stopped). It is
-- carved out of the bands as its own figure, left out of availability.
observed AS (
  SELECT cluster, kind, since, tsNs AS until
  FROM megamon_fleet.log WHERE type = 'observed' AND since IS NOT NULL AND tsNs IS NOT NULL
),
gaps AS (
  SELECT cluster, kind, g_start, g_end FROM (
    SELECT cluster, kind, last_end AS g_start, LEAST(since, now_ns) AS g_end
    FROM (
      SELECT *, MAX(until) OVER (PARTITION BY cluster, kind ORDER BY since, until
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last_end
      FROM observed
    )
    WHERE since > last_end
    UNION ALL
    SELECT cluster, kind, MAX(until) AS g_start, now_ns AS g_end
    FROM observed GROUP BY cluster, kind HAVING now_ns - MAX(until) > 120000000000
  )
  WHERE g_end > g_start
),
-- A merged band that starts before the first up is provisioning time, up to the first gap
-- that ends at or after the first up: the band carved after that gap starts after the
-- first up, so it counts by its state. `cut` splits each piece there.
classed AS (
  SELECT *,
         IF(grp_start < first_up_at,
            GREATEST(piece_begin, LEAST(piece_stop, COALESCE(
              (SELECT MIN(g.g_end) FROM gaps g
               WHERE g.cluster = c.cluster AND g.kind = c.kind AND g.g_end >= c.first_up_at),
              piece_stop))),
            piece_begin) AS cut
  FROM (
    SELECT *, MIN(piece_begin) OVER (PARTITION BY cluster, kind, key, life_end, grp)
                AS grp_start
    FROM pieces
  ) c
),
measured AS (
  SELECT *,
         cut - piece_begin - (
           SELECT COALESCE(SUM(LEAST(m.cut, g.g_end) - GREATEST(m.piece_begin, g.g_start)), 0)
           FROM gaps g WHERE g.cluster = m.cluster AND g.kind = m.kind
                         AND g.g_start < m.cut AND g.g_end > m.piece_begin) AS head,
         piece_stop - cut - (
           SELECT COALESCE(SUM(LEAST(m.piece_stop, g.g_end) - GREATEST(m.cut, g.g_start)), 0)
           FROM gaps g WHERE g.cluster = m.cluster AND g.kind = m.kind
                         AND g.g_start < m.piece_stop AND g.g_end > m.cut) AS rest
  FROM classed m
),
times AS (
  SELECT cluster, kind, key, life_end,
         SUM(IF(state = 'up', rest, 0)) AS up_time,
         SUM(IF(state IN ('down', 'failed'), rest, 0)) AS down_time,
         SUM(IF(state = 'failed', rest, 0)) AS failed_time,
         SUM(IF(state = 'expected-down', rest, 0)) AS expected_down_time,
         SUM(head) AS provisioning_time,
         SUM(piece_stop - piece_begin - head - rest) AS unobserved_time
  FROM measured GROUP BY cluster, kind, key, life_end
)
SELECT w.cluster, w.kind, w.key,
       IF(w.life_end = 9223372036854775807, NULL, w.life_end) AS retired_at,
       COALESCE(l.name, w.key) AS name,
       COALESCE(l.accelerator, '') AS accelerator,
       COALESCE(l.topology, '') AS topology,
       IF(l.chips > 0, l.chips, NULL) AS chips,
       w.span_start, w.span_end, i.end_state,
       COALESCE(t.up_time, 0) AS up_time,
       COALESCE(t.down_time, 0) AS down_time,
       COALESCE(t.failed_time, 0) AS failed_time,
       COALESCE(t.expected_down_time, 0) AS expected_down_time,
       COALESCE(t.provisioning_time, 0) AS provisioning_time,
       COALESCE(t.unobserved_time, 0) AS unobserved_time,
       i.interruptions, i.recoveries, i.recovered_down_time,
       CASE WHEN w.first_flags & 1 = 1 THEN ''
            WHEN i.periods = 1 AND w.last_flags & 4 = 4 THEN 'failed'
            WHEN i.periods = 1 THEN 'provisioning'
            ELSE 'success' END AS provisioning_state,
       CASE WHEN w.first_flags & 1 = 1 THEN 0
            WHEN i.periods = 1 AND w.last_flags & 4 = 4
              THEN GREATEST(0, w.last_raw - w.first_raw)
            WHEN i.periods = 1 THEN GREATEST(0, w.span_end - w.first_raw)
            ELSE GREATEST(0, i.second_period_raw - w.first_raw) END AS provisioning_duration
FROM windowed w
JOIN incidents i USING (cluster, kind, key, life_end)
LEFT JOIN times t USING (cluster, kind, key, life_end)
LEFT JOIN lives l USING (cluster, kind, key, life_end)
)
