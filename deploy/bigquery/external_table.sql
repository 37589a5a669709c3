-- One cluster's log as an external table: the segments as they are in the bucket, NDJSON,
-- Hive-partitioned by kind and date (so a query on a week reads only that week's segments).
-- `kind` is the partition column; the same field inside each line is left out of the schema.
CREATE OR REPLACE EXTERNAL TABLE megamon_fleet.@TABLE@ (
  type STRING,
  cluster STRING,
  key STRING,
  ts STRING,
  tsNs INT64,
  state STRING,
  up BOOL,
  ed BOOL,
  f BOOL,
  attrs JSON,
  since INT64
)
WITH PARTITION COLUMNS (kind STRING, date DATE)
OPTIONS (
  format = 'NEWLINE_DELIMITED_JSON',
  uris = ['gs://@BUCKET@/@PREFIX@/@CLUSTER@/log/kind=*'],
  hive_partition_uri_prefix = 'gs://@BUCKET@/@PREFIX@/@CLUSTER@/log',
  require_hive_partition_filter = false,
  ignore_unknown_values = true
)
