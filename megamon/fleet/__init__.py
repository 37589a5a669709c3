"""The fleet report: many clusters' histories in one report, computed in SQL (DuckDB), with
the histories of a bucket kept in a local cache (docs/fleet.md). Below the CLI, above the
service: it reads histories through ``megamon.stores`` and the codec, and restates
``megamon.summary.availability`` in SQL."""
