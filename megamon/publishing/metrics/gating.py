"""Metrics only the leader publishes: a standby replica must not publish series that the
leader publishes too, or dashboards would count them twice."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric


class LeaderOnly:
    """Everything registered in ``inner``, but only while ``is_leader()``."""

    def __init__(self, inner: CollectorRegistry, is_leader: Callable[[], bool]) -> None:
        self._inner = inner
        self._is_leader = is_leader

    def collect(self) -> Iterator[Metric]:
        if self._is_leader():
            yield from self._inner.collect()

    def describe(self) -> Iterator[Metric]:
        yield from self._inner.collect()
