#!/usr/bin/env bash
# The megamon fleet report in BigQuery over a bucket's histories (docs/fleet.md).
#
#   deploy/bigquery/setup.sh PROJECT BUCKET [CLUSTERS_PREFIX] [DATASET] [LOCATION]
#
# One external table per cluster over gs://BUCKET/<prefix>/<cluster>/log, Hive-partitioned by
# kind and date (the log's own layout: log/kind=<kind>/date=YYYY-MM-DD/<sequence>.ndjson), a
# view `log` over all of them, and the report's table functions (views/*.sql, generated from the
# fleet report's SQL by `make bigquery-views`: edit megamon/fleet/, not them). Re-run it when
# a cluster is added: every statement is CREATE OR REPLACE.
set -euo pipefail
project=${1:?project}
bucket=${2:?bucket}
prefix=${3:-megamon/clusters}
dataset=${4:-megamon_fleet}
location=${5:-US}
here=$(cd "$(dirname "$0")" && pwd)

bq --project_id="$project" --location="$location" mk --force --dataset "$project:$dataset"

run() {  # one statement, with the dataset name substituted
  sed "s/megamon_fleet\./${dataset}./g" | bq --project_id="$project" --location="$location" \
    query --nouse_legacy_sql --quiet
}

union=""
for dir in $(gcloud storage ls "gs://$bucket/$prefix/"); do
  cluster=$(basename "$dir")
  table="log_$(echo "$cluster" | tr -c 'A-Za-z0-9_\n' '_')"
  sed -e "s|@BUCKET@|$bucket|g" -e "s|@PREFIX@|$prefix|g" -e "s|@CLUSTER@|$cluster|g" \
      -e "s|@TABLE@|$table|g" "$here/external_table.sql" | run
  union="${union:+$union UNION ALL }SELECT '$cluster' AS cluster, * EXCEPT (cluster) FROM megamon_fleet.$table"
done
echo "CREATE OR REPLACE VIEW megamon_fleet.log AS $union" | run
for view in figures availability; do
  run < "$here/views/$view.sql"
done
