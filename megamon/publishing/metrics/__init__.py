"""The fleet's Prometheus metrics: names (the docs/metrics.md contract), the collector rendering
the latest report, and the HTTP servers for ``/metrics`` and the probes.

Metrics only read the report; they never observe the cluster or touch the event history.
"""
