"""The event log: turns batches of observations into durable history (docs/rules.md).

Appending and persisting are separate steps, so that a slow or failing store never delays
or loses a transition:

- ``append`` applies the append rules to the history held in memory, at the batch's ``now``,
  and publishes the latest observations and records as one snapshot (readers — the report
  builder — see one consistent batch). It touches the store only once per kind, to load it.
- ``flush`` writes every kind with unsaved events, compare-and-swap. If the stored file
  moved (another writer), the two histories are merged key by key: a key only we changed
  keeps our events with their original timestamps; a key only they changed keeps theirs; a
  key both changed takes theirs plus our latest observation at its ``now``. A failed flush
  keeps everything pending for the next one. Retired keys are archived before the live file
  drops them, so a crash in between leaves a key in both places, never in neither.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.errors import Conflict, StoreError
from megamon.recording.appending import Reconciled, next_record, reconcile
from megamon.stores.base import EventStore, Snapshot
from megamon.telemetry import Instruments

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 5

Batch = Mapping[Kind, Mapping[str, Observation]]


@dataclass(frozen=True)
class LogSnapshot:
    """Latest observations and records of every kind observed so far."""

    observations: Mapping[Kind, Mapping[str, Observation]] = field(default_factory=dict)
    records: Mapping[Kind, Mapping[str, EventRecord]] = field(default_factory=dict)


@dataclass
class _KindState:
    """One kind's history: what the store had when we last synced, and what we hold now."""

    base: Snapshot
    records: dict[str, EventRecord]
    latest: dict[str, tuple[Observation, int]] = field(default_factory=dict)
    """Each observed key's latest observation and its ``now``, to re-apply after a merge."""
    retired: dict[str, ArchiveEntry] = field(default_factory=dict)
    """Keys no longer observed whose removal is not persisted yet."""
    dirty: bool = False


def merge(
    base: Mapping[str, EventRecord],
    ours: Mapping[str, EventRecord],
    theirs: Mapping[str, EventRecord],
    latest: Mapping[str, tuple[Observation, int]],
) -> dict[str, EventRecord]:
    """Our history and another writer's, both grown from ``base``. Pure."""
    merged = dict(theirs)
    for key in ours.keys() | base.keys():
        mine, was, other = ours.get(key), base.get(key), theirs.get(key)
        if other is None:
            # Gone from theirs (retired by them, or their file was lost): we keep what we
            # still observe, with our events and timestamps.
            if mine is not None and key in latest:
                merged[key] = mine
            continue
        if mine == was:
            continue  # we changed nothing here: theirs stands
        if other == was:
            if mine is None:
                merged.pop(key, None)  # we retired it; they had not touched it
            else:
                merged[key] = mine  # only we changed it: our events and timestamps
        elif key in latest:
            observation, now = latest[key]
            merged[key] = next_record(other, observation, now)  # both: theirs, then ours
    return merged


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
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._kinds: dict[Kind, _KindState] = {}
        self._snapshot = LogSnapshot()

    @property
    def store(self) -> EventStore:
        return self._store

    @property
    def ready(self) -> bool:
        """Whether every required kind has been loaded and observed at least once."""
        return self._required <= self._snapshot.observations.keys() & self._kinds.keys()

    @property
    def pending(self) -> bool:
        """Whether some history is held in memory only (not yet flushed)."""
        with self._lock:
            return any(state.dirty for state in self._kinds.values())

    def snapshot(self) -> LogSnapshot:
        with self._lock:
            return self._snapshot

    def _state(self, kind: Kind) -> _KindState:
        state = self._kinds.get(kind)
        if state is None:
            base = self._store.read(kind)
            state = self._kinds[kind] = _KindState(base=base, records=dict(base.records))
        return state

    def append(self, batch: Batch, now: int, *, flush: bool = True) -> dict[Kind, Reconciled]:
        """Record one batch of observations at ``now``; with ``flush``, persist it too.

        Observations are published even for a kind whose history could not be loaded; a
        ``StoreError`` naming every kind that failed is raised after the batch is applied.
        """
        results: dict[Kind, Reconciled] = {}
        errors: list[str] = []
        with self._lock:
            for kind, observations in batch.items():
                try:
                    results[kind] = self._apply(kind, observations, now)
                except StoreError as err:
                    errors.append(f"{kind}: cannot load history: {err}")
            self._publish(batch)
        if flush:
            try:
                self.flush()
            except StoreError as err:
                errors.append(str(err))
        if errors:
            raise StoreError(
                f"history in {self._store.describe()} not recorded: " + "; ".join(errors)
            )
        return results

    def _apply(self, kind: Kind, observations: Mapping[str, Observation], now: int) -> Reconciled:
        state = self._state(kind)
        previous = {k: o for k, (o, _) in state.latest.items()}
        result = reconcile(state.records, observations, now)
        for key, record in result.retired.items():
            attrs = previous[key].attrs.model_dump(by_alias=True) if key in previous else {}
            state.retired[key] = ArchiveEntry(
                kind=kind.value, key=key, retired_at=now, attrs=attrs, record=record
            )
        for key in observations:
            state.retired.pop(key, None)
        state.records = result.records
        state.latest = {key: (obs, now) for key, obs in observations.items()}
        state.dirty = state.dirty or result.dirty
        return result

    def _publish(self, batch: Batch) -> None:
        observations = dict(self._snapshot.observations)
        records = dict(self._snapshot.records)
        for kind, observed in batch.items():
            observations[kind] = dict(observed)
            if kind in self._kinds:
                records[kind] = self._kinds[kind].records
        self._snapshot = LogSnapshot(observations=observations, records=records)

    def flush(self) -> None:
        """Persist every kind with unsaved history; ``StoreError`` if some could not be."""
        with self._flush_lock:
            with self._lock:
                dirty = [kind for kind, state in self._kinds.items() if state.dirty]
            errors = []
            for kind in dirty:
                try:
                    self._flush_kind(kind)
                except StoreError as err:
                    errors.append(f"{kind}: {err}")
            if errors:
                raise StoreError("; ".join(errors))

    def _flush_kind(self, kind: Kind) -> None:
        for _ in range(self._max_attempts):
            with self._lock:
                state = self._kinds[kind]
                base, ours, latest = state.base, dict(state.records), dict(state.latest)
                retired = dict(state.retired)
            stored = self._store.read(kind)
            target = (
                ours
                if stored.version == base.version
                else merge(base.records, ours, stored.records, latest)
            )
            for key in sorted(retired):
                entry = retired[key]
                if key in stored.records and stored.records[key] != base.records.get(key):
                    entry = entry.model_copy(update={"record": stored.records[key]})
                self._archive(entry)
                target.pop(key, None)
            try:
                version = self._store.write(kind, target, stored.version)
            except Conflict:
                self._instruments.store_conflicts.labels(kind=kind.value).inc()
                log.info("%s history changed underneath; merging and writing again", kind)
                continue
            self._synced(kind, ours, retired, Snapshot(target, version))
            return
        raise StoreError(f"{kind} history: gave up after {self._max_attempts} conflicting writes")

    def _synced(
        self,
        kind: Kind,
        written_from: dict[str, EventRecord],
        retired: dict[str, ArchiveEntry],
        written: Snapshot,
    ) -> None:
        """Adopt what was written; appends that arrived meanwhile are rebased onto it."""
        with self._lock:
            state = self._kinds[kind]
            state.base = written
            for key in retired:
                state.retired.pop(key, None)
            if state.records == written_from:
                state.records = dict(written.records)
                state.dirty = bool(state.retired)
            else:
                state.records = merge(written_from, state.records, written.records, state.latest)
                state.dirty = True
            records = dict(self._snapshot.records)
            records[kind] = state.records
            self._snapshot = LogSnapshot(self._snapshot.observations, records)

    def _archive(self, entry: ArchiveEntry) -> None:
        name = self._store.archive(entry)
        log.info(
            "%s %r is no longer observed; its history is archived as %s",
            entry.kind,
            entry.key,
            name,
        )
