"""``LatestObservations``: what was seen of every kind in its latest batch.

Kept apart from the event log: the history is durable and appended to, the latest
observations are replaced wholesale each batch and only feed the report builder. A reader gets
one immutable mapping per call, so it never sees half of a batch.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation

Observed = Mapping[Kind, Mapping[str, Observation]]


class LatestObservations:
    """The latest observations per kind, replaced batch by batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observations: Observed = {}

    def publish(self, batch: Observed) -> None:
        """Replace the kinds of ``batch`` (copy-on-write: earlier readers keep theirs)."""
        with self._lock:
            updated = dict(self._observations)
            for kind, observed in batch.items():
                updated[kind] = dict(observed)
            self._observations = updated

    def snapshot(self) -> Observed:
        with self._lock:
            return self._observations

    def observed(self, kinds: frozenset[Kind]) -> bool:
        """Whether every kind of ``kinds`` was observed at least once."""
        return kinds <= self.snapshot().keys()
