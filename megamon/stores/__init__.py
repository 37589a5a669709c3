"""The event store: where the durable history lives (GCS, a local directory, or memory).

Every store is an ``ObjectEventStore`` over a small object backend with generations and
compare-and-swap, so the three behave the same and one contract test suite covers them.
"""
