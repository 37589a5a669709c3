"""The event log: turns batches of observations into durable history (DESIGN §1, §4).

For each batch it reads each kind's records from the store, applies the append rules, writes
only the kinds that changed (compare-and-swap), and archives keys that are no longer
observed — archive first, then the live file, so a crash in between leaves a key in both
places, never in neither. A lost compare-and-swap re-reads and re-applies the same batch, so
two replicas writing at once lose nothing.

It also keeps the latest observations and records per kind in memory; a batch is published
under one lock, so a reader (the report builder) sees one consistent snapshot.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from megamon.errors import Conflict, StoreError
from megamon.history.appending import Reconciled, reconcile
from megamon.records.events import ArchiveEntry, EventRecord
from megamon.records.kinds import Kind
from megamon.records.observations import Observation
from megamon.store.base import EventStore
from megamon.telemetry import Instruments

log = logging.getLogger("megamon.eventlog")

DEFAULT_MAX_ATTEMPTS = 5

Batch = Mapping[Kind, Mapping[str, Observation]]


@dataclass(frozen=True)
class LogSnapshot:
    """Latest observations and records of every kind observed so far."""

    observations: Mapping[Kind, Mapping[str, Observation]] = field(default_factory=dict)
    records: Mapping[Kind, Mapping[str, EventRecord]] = field(default_factory=dict)


class EventLog:
    """Durable up/down history plus the latest observations, per kind."""

    def __init__(
        self,
        store: EventStore,
        required: Iterable[Kind],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        instruments: Instruments | None = None,
    ) -> None:
        self._store = store
        self._required = frozenset(required)
        self._max_attempts = max_attempts
        self._instruments = instruments or Instruments.unregistered()
        self._lock = threading.Lock()
        self._snapshot = LogSnapshot()

    @property
    def store(self) -> EventStore:
        return self._store

    @property
    def ready(self) -> bool:
        """Whether every required kind has been observed at least once."""
        return self._required <= self._snapshot.observations.keys()

    def snapshot(self) -> LogSnapshot:
        with self._lock:
            return self._snapshot

    def append(self, batch: Batch, now: int) -> dict[Kind, Reconciled]:
        """Record one batch of observations at ``now``; returns what changed per kind.

        Every kind is attempted; observations are published even for a kind whose history
        could not be written (it is retried with the next batch), and then one ``StoreError``
        naming every kind that failed is raised.
        """
        previous = self.snapshot()
        results: dict[Kind, Reconciled] = {}
        errors: list[str] = []
        for kind, observations in batch.items():
            last_seen = previous.observations.get(kind, {})
            try:
                results[kind] = self._append_kind(kind, observations, last_seen, now)
            except StoreError as err:
                errors.append(f"{kind}: {err}")
        self._publish(batch, results)
        if errors:
            raise StoreError(
                f"history in {self._store.describe()} not recorded: " + "; ".join(errors)
            )
        return results

    def _append_kind(
        self,
        kind: Kind,
        observations: Mapping[str, Observation],
        last_seen: Mapping[str, Observation],
        now: int,
    ) -> Reconciled:
        for _ in range(self._max_attempts):
            snapshot = self._store.read(kind)
            result = reconcile(snapshot.records, observations, now)
            for key, record in sorted(result.retired.items()):
                self._archive(kind, key, record, last_seen.get(key), now)
            if not result.dirty:
                return result
            try:
                self._store.write(kind, result.records, snapshot.version)
            except Conflict:
                self._instruments.store_conflicts.labels(kind=kind.value).inc()
                log.info("%s history changed underneath; re-reading and re-applying", kind)
                continue
            return result
        raise StoreError(f"{kind} history: gave up after {self._max_attempts} conflicting writes")

    def _archive(
        self, kind: Kind, key: str, record: EventRecord, observed: Observation | None, now: int
    ) -> None:
        attrs = observed.attrs.model_dump(by_alias=True) if observed is not None else {}
        entry = ArchiveEntry(kind=kind.value, key=key, retired_at=now, attrs=attrs, record=record)
        name = self._store.archive(entry)
        log.info("%s %r is no longer observed; its history is archived as %s", kind, key, name)

    def _publish(self, batch: Batch, results: Mapping[Kind, Reconciled]) -> None:
        with self._lock:
            observations = dict(self._snapshot.observations)
            records = dict(self._snapshot.records)
            for kind, observed in batch.items():
                observations[kind] = dict(observed)
            for kind, result in results.items():
                records[kind] = result.records
            self._snapshot = LogSnapshot(observations=observations, records=records)
