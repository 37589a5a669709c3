-- megamon fleet report, BigQuery: figures summed per cluster, kind, accelerator and topology
-- (cluster '*' = the whole fleet), availability and MTTR/MTBI recomputed from the sums (time
-- weighted; unobserved time is its own sum, out of availability), and chip-weighted time
-- where the attributes give a chip count.
CREATE OR REPLACE TABLE FUNCTION megamon_fleet.availability(now_ns INT64, since_ns INT64) AS (
SELECT cluster, kind, accelerator, topology, resources, up_time, down_time, failed_time,
       expected_down_time, provisioning_time, unobserved_time, interruptions, recoveries, recovered_down_time,
       IF(up_time + down_time = 0, NULL, 100 * up_time / (up_time + down_time))
         AS availability_percent,
       IF(recoveries = 0, NULL, DIV(recovered_down_time, recoveries)) AS mttr_ns,
       IF(interruptions = 0, NULL, DIV(up_time, interruptions)) AS mtbi_ns,
       provisioned, provisioning, provisioning_failed,
       IF(provisioned = 0, NULL, DIV(provisioned_duration, provisioned))
         AS mean_provisioning_ns,
       chips, chip_hours_up, chip_hours_down, chip_hours_failed
FROM (
  SELECT IF(GROUPING(cluster) = 1, '*', cluster) AS cluster, kind, accelerator, topology,
         COUNT(*) AS resources,
         SUM(up_time) AS up_time, SUM(down_time) AS down_time, SUM(failed_time) AS failed_time,
         SUM(expected_down_time) AS expected_down_time,
         SUM(provisioning_time) AS provisioning_time,
         SUM(unobserved_time) AS unobserved_time,
         SUM(interruptions) AS interruptions, SUM(recoveries) AS recoveries,
         SUM(recovered_down_time) AS recovered_down_time,
         COUNTIF(provisioning_state = 'success') AS provisioned,
         COUNTIF(provisioning_state = 'provisioning') AS provisioning,
         COUNTIF(provisioning_state = 'failed') AS provisioning_failed,
         SUM(IF(provisioning_state = 'success', provisioning_duration, 0))
           AS provisioned_duration,
         COALESCE(SUM(chips), 0) AS chips,
         COALESCE(SUM(chips * (up_time / 3.6e12)), 0) AS chip_hours_up,
         COALESCE(SUM(chips * (down_time / 3.6e12)), 0) AS chip_hours_down,
         COALESCE(SUM(chips * (failed_time / 3.6e12)), 0) AS chip_hours_failed
  FROM megamon_fleet.figures(now_ns, since_ns)
  GROUP BY GROUPING SETS ((cluster, kind, accelerator, topology), (kind, accelerator, topology))
)
)
