"""The event log: turns batches of observations into durable, append-only history
(docs/rules.md, docs/history.md).

Appending and persisting are separate steps, so that a slow or failing store never delays or
loses a transition:

- ``append`` applies the append rules to the history held in memory at the batch's ``now``
  and queues the new lines (events, attribute changes, retirements). It touches the store to
  load a kind (snapshot + log) and to keep the writer lease.
- ``flush`` writes each kind's queued lines as one new create-only segment, plus a heartbeat
  (the span this process has been observing) with every segment and at least every
  ``heartbeat_s``. A failed flush keeps everything queued for the next one. Retired keys are
  archived before the segment that retires them, so a crash in between leaves a key in both
  places, never in neither.
- every ``snapshot_interval_s``, and on ``close``, the history of the live keys is written to
  the Go megamon's event file (compare-and-swap) and a mark beside it says which segment it
  covers.

Only the holder of the store's writer lease appends. Another process finds the lease held,
stands by (``standing_by``, logged once) and keeps trying; when the lease lapses or is
released it takes over, reading the history afresh. A flush confirms the lease with the store
before it writes; a holder whose renewal, confirmation or segment meets another writer drops
the lease and what it holds, and stands by the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from megamon.codec import history as codec
from megamon.codec.log import (
    TYPE_ATTRS,
    TYPE_EVENT,
    TYPE_OBSERVED,
    TYPE_RETIRED,
    LeaseHolder,
    LogLine,
    MarkedFile,
    SnapshotMark,
    encode_mark,
    encode_segment,
)
from megamon.domain import timestamps
from megamon.domain.events import FLAG_UP, ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.errors import Conflict, StoreError
from megamon.recording.appending import Reconciled, reconcile
from megamon.recording.loading import HistoryRefused, LoadedKind, load_kind
from megamon.recording.replay import add_span, union_records
from megamon.stores.base import EventStore
from megamon.stores.lease import DEFAULT_LEASE_SECONDS, this_process, writer_lease
from megamon.stores.segments import SegmentName, segment_date
from megamon.telemetry import Instruments

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_SNAPSHOT_INTERVAL_S = 900.0
"""How often the Go-format event files are rewritten: a Go megamon reading them is at most
this far behind, and start-up folds at most this much of the log."""
DEFAULT_HEARTBEAT_S = 60.0
"""A kind with nothing new still writes a heartbeat this often, so a restart knows the gap."""
REFUSED_RETRY_NS = 60 * timestamps.NANOS_PER_SECOND
"""A kind refused at load (its snapshot does not match its mark) is read again this often,
so a restored file is taken up without a restart and a refused one is not re-read every
cycle."""
UNOBSERVED_SLACK_NS = 2 * int(DEFAULT_HEARTBEAT_S) * timestamps.NANOS_PER_SECOND
"""A running megamon's last heartbeat may be this old; after that, a report counts the time
as unobserved (megamon stopped). One rule for the one-history and the fleet reports."""

Batch = Mapping[Kind, Mapping[str, Observation]]


@dataclass
class _KindState:
    """One kind's history in memory and what of it is not in the store yet."""

    loaded: LoadedKind
    pending: list[LogLine] = field(default_factory=list)
    retired: dict[str, ArchiveEntry] = field(default_factory=dict)
    seen: dict[str, Attrs] = field(default_factory=dict)
    """Attributes objects already compared with the recorded ones (identity fast path)."""
    applied: tuple[Mapping[str, EventRecord], Mapping[str, Observation]] | None = None
    """The live records the latest batch made, and that batch (``reconcile``'s
    ``applied``, while the records are still those)."""
    run_since: int | None = None
    last_now: int | None = None
    heartbeat_until: int | None = None
    """The end of the observed span the last segment recorded."""
    snapshot_due: int = 0
    unsnapshotted: bool = False

    @property
    def records(self) -> dict[str, EventRecord]:
        return self.loaded.history.records


class EventLog:
    """Durable up/down history, per kind, written by one process at a time."""

    def __init__(
        self,
        store: EventStore,
        required: Iterable[Kind],
        *,
        cluster: str = "",
        holder: str | None = None,
        snapshot_interval_s: float = DEFAULT_SNAPSHOT_INTERVAL_S,
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        lease_s: float = DEFAULT_LEASE_SECONDS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        instruments: Instruments | None = None,
        clock: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], int] = time.monotonic_ns,
        on_retired: Callable[[ArchiveEntry], object] | None = None,
        on_snapshot: Callable[[Kind, Mapping[str, EventRecord], str], object] | None = None,
    ) -> None:
        """``holder`` names this writer in the lease (default: this process, see
        ``this_process``); ``clock`` stamps what is written, ``monotonic`` times the lease."""
        self._store = store
        self._on_retired = on_retired
        self._on_snapshot = on_snapshot
        """Told of each snapshot written (its kind, records and digest), after its mark: the
        report assembly writes the summary state beside it."""
        """Told of each retirement as it is recorded (the report assembly keeps counting the
        resource from its archive entry without reading the archive again)."""
        self._required = frozenset(required)
        self._cluster = cluster
        self._snapshot_ns = int(snapshot_interval_s * timestamps.NANOS_PER_SECOND)
        self._heartbeat_ns = int(heartbeat_s * timestamps.NANOS_PER_SECOND)
        self._max_attempts = max_attempts
        self._instruments = instruments or Instruments.unregistered()
        self._clock = clock
        self._lease = writer_lease(
            store.log,
            LeaseHolder(holder) if holder is not None else this_process(),
            duration_s=lease_s,
            clock=clock,
            monotonic=monotonic,
        )
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._kinds: dict[Kind, _KindState] = {}
        self._applied: set[Kind] = set()
        self._records: dict[Kind, Mapping[str, EventRecord]] = {}
        self._standing_by = False
        self._epoch = 0
        self._refused: dict[Kind, tuple[int, HistoryRefused]] = {}
        self._failure: str | None = None

    @property
    def store(self) -> EventStore:
        return self._store

    @property
    def ready(self) -> bool:
        """Whether every required kind has been loaded and observed at least once."""
        return self._required <= self._applied

    @property
    def epoch(self) -> int:
        """How many times this process dropped the history it held (standing by, handing
        over): another writer may have grown it meanwhile, so what a reader kept of it is to
        be counted again from the history as read next."""
        return self._epoch

    @property
    def standing_by(self) -> bool:
        """Whether another process holds the writer lease (this one records nothing)."""
        return self._standing_by

    @property
    def pending(self) -> bool:
        """Whether some history is held in memory only (not yet flushed)."""
        with self._lock:
            return any(s.pending or s.retired for s in self._kinds.values())

    @property
    def due(self) -> bool:
        """Whether ``flush`` has something to do: unsaved history, a heartbeat, a snapshot or
        the lease's renewal (the persist loop calls it only then)."""
        if self._lease.renewal_due:
            return True
        clock = self._clock()
        with self._lock:
            return any(
                s.pending
                or s.retired
                or self._heartbeat_due(s, s.last_now, final=False)
                or (s.unsnapshotted and clock >= s.snapshot_due)
                for s in self._kinds.values()
            )

    @property
    def refused(self) -> list[Kind]:
        """The kinds whose history is refused (``HistoryRefused``): nothing of them is
        recorded until their snapshot is restored."""
        return sorted(self._refused)

    @property
    def failure(self) -> str | None:
        """Why the store refused a write of the latest flush (a segment, snapshot, archive or
        the writer lease's renewal), ``None`` when none was refused."""
        return self._failure

    def records(self) -> Mapping[Kind, Mapping[str, EventRecord]]:
        """The live records of every kind, as of the latest batch (an immutable view)."""
        with self._lock:
            return self._records

    def snapshot_digests(self) -> dict[Kind, str | None]:
        """Per kind, the digest of the snapshot its history was read from or last written
        (``None``: none this process trusts): what a summary state must have been written
        beside to be used."""
        with self._lock:
            return {
                kind: state.loaded.file.digest if state.loaded.file is not None else None
                for kind, state in self._kinds.items()
            }

    def coverage(self) -> dict[Kind, tuple[tuple[int, int], ...]]:
        """Per kind, the spans its history records as observed, this process's running span
        included (what its next heartbeat writes): the time megamon was watching."""
        with self._lock:
            result = {}
            for kind, state in self._kinds.items():
                spans = state.loaded.history.observed
                if state.run_since is not None and state.last_now is not None:
                    spans = add_span(spans, (state.run_since, state.last_now))
                result[kind] = tuple(spans)
            return result

    # the writer lease ---------------------------------------------------------------------

    def _writable(self) -> bool:
        """Hold the lease, or stand by; a store error keeps a lease we hold (``flush``
        confirms it before writing)."""
        try:
            held = self._lease.ensure()
        except StoreError as err:
            if not self._lease.held:
                log.error("cannot read the writer lease %s: %s", self._lease.describe(), err)
            else:
                self._write_failed(f"writer lease {self._lease.describe()}: {err}")
            return self._lease.held
        if not held:
            self._stand_by()
        elif self._standing_by:
            log.info("took over the writer lease %s", self._lease.describe())
            self._standing_by = False
            self._instruments.writer_standing_by.set(0)
        return held

    def _stand_by(self) -> None:
        """Drop what we hold: the lease holder records the same world."""
        with self._lock:
            if not self._standing_by:
                other = self._lease.other
                log.warning(
                    "standing by: the history in %s is written by %s (lease renewed %s)",
                    self._store.describe(),
                    other.holder if other else "another process",
                    timestamps.format_ns(other.acquired) if other else "recently",
                )
            self._standing_by = True
            self._instruments.writer_standing_by.set(1)
            self._kinds.clear()
            self._applied.clear()
            self._records = {}
            self._epoch += 1

    # appending ----------------------------------------------------------------------------

    def _state(self, kind: Kind, now: int | None = None) -> _KindState:
        """The kind's state, its history loaded at ``now`` (the batch's, else the clock)
        on first use; what is dated beyond the clock skew allowance is refused and counted."""
        state = self._kinds.get(kind)
        if state is None:
            loaded = self._load(kind, self._clock() if now is None else now)
            if loaded.refused:
                self._instruments.refused_events.labels(kind=kind.value).inc(len(loaded.refused))
            state = self._kinds[kind] = _KindState(
                loaded=loaded,
                snapshot_due=self._clock() + self._snapshot_ns,
                unsnapshotted=loaded.segments_read > 0,
            )
        return state

    def _load(self, kind: Kind, now: int) -> LoadedKind:
        """Read a kind; one refused (``HistoryRefused``) stays refused, and is said so in
        ``megamon_history_refused``, until a read ``REFUSED_RETRY_NS`` later succeeds."""
        clock = self._clock()
        refused = self._refused.get(kind)
        if refused is not None and clock < refused[0]:
            raise refused[1]
        try:
            loaded = load_kind(self._store, kind, now)
        except HistoryRefused as err:
            self._refused[kind] = (clock + REFUSED_RETRY_NS, err)
            self._instruments.history_refused.labels(kind=kind.value).set(1)
            raise
        if self._refused.pop(kind, None) is not None:
            self._instruments.history_refused.labels(kind=kind.value).set(0)
        if loaded.rebuilt:
            self._instruments.history_rebuilds.labels(kind=kind.value).inc()
        return loaded

    def append(self, batch: Batch, now: int, *, flush: bool = True) -> dict[Kind, Reconciled]:
        """Record one batch of observations at ``now``; with ``flush``, persist it too.

        Nothing is recorded while standing by. A ``StoreError`` naming every kind whose
        history could not be loaded is raised after the rest of the batch is applied.
        """
        results: dict[Kind, Reconciled] = {}
        errors: list[str] = []
        # A held lease is renewed by ``flush`` (the persist loop): no store call here.
        if not self._lease.held and not self._writable():
            return results
        with self._lock:
            for kind, observations in batch.items():
                try:
                    results[kind] = self._apply(kind, observations, now)
                except StoreError as err:
                    errors.append(f"{kind}: cannot load history: {err}")
            records = dict(self._records)
            for kind in results:
                records[kind] = self._kinds[kind].records
            self._records = records
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
        state = self._state(kind, now)
        history = state.loaded.history
        before = history.records
        made = state.applied
        applied = made[1] if made is not None and made[0] is before else None
        result = reconcile(before, observations, now, applied)
        for key in result.changed:
            old, new = before.get(key), result.records[key]
            start = len(old) if old is not None else 0
            observation = observations[key]
            attrs = self._attrs(state, key, observation.attrs, force=True)
            for ts, flags in zip(new.timestamps[start:], new.flags[start:], strict=True):
                detail = "" if flags & FLAG_UP else observation.reason_detail
                state.pending.append(LogLine(TYPE_EVENT, key, ts, flags, attrs, detail=detail))
        seen = state.seen.get
        for key, observation in observations.items():
            if seen(key) is not observation.attrs and key not in result.changed:
                attrs = self._attrs(state, key, observation.attrs, force=False)
                if attrs is not None:
                    state.pending.append(LogLine(TYPE_ATTRS, key, now, attrs=attrs))
        for key, record in result.retired.items():
            attrs = dict(history.attrs.pop(key, {}))
            state.seen.pop(key, None)
            entry = ArchiveEntry(
                kind=kind.value, key=key, retired_at=now, attrs=attrs, record=record
            )
            state.retired[key] = entry
            state.pending.append(LogLine(TYPE_RETIRED, key, now))
            if self._on_retired is not None:
                self._on_retired(entry)
        history.records = result.records
        state.applied = (result.records, observations)
        state.run_since = now if state.run_since is None else state.run_since
        state.last_now = now
        self._applied.add(kind)
        return result

    def _attrs(
        self, state: _KindState, key: str, attrs: Attrs, *, force: bool
    ) -> Mapping[str, object] | None:
        """The key's attributes to record: always with an event (``force``), otherwise only
        when they differ from the recorded ones; ``None`` when unchanged.

        ``seen`` holds the attrs object whose dump the recorded attributes equal: an event
        of a key whose attrs object is the same carries the recorded dump as it is."""
        recorded = state.loaded.history.attrs
        if state.seen.get(key) is attrs:
            if not force:
                return None
            found = recorded.get(key)
            if found is not None:
                return found
        state.seen[key] = attrs
        dumped = attrs.model_dump(by_alias=True)
        if not force and recorded.get(key) == dumped:
            return None
        recorded[key] = dumped
        return dumped

    # flushing -----------------------------------------------------------------------------

    def flush(self, *, final: bool = False) -> None:
        """Persist every kind's queued lines, and snapshots that are due; ``StoreError`` if
        some could not be (they stay queued). ``final``: a heartbeat up to the latest batch
        too, due or not (shutdown)."""
        with self._flush_lock:
            self._failure = None
            if not self._kinds or not self._writable():
                return
            if not self._confirmed():
                return
            errors = []
            with self._lock:
                kinds = list(self._kinds)
            for kind in kinds:
                state = self._kinds.get(kind)
                if state is None:
                    continue  # dropped meanwhile: this process stood by
                try:
                    self._flush_kind(kind, state, final)
                    if self._clock() >= state.snapshot_due:
                        self._snapshot_kind(kind, state)
                except Conflict as err:
                    log.warning("%s: another writer appended to this history (%s)", kind, err)
                    self._lease.drop()
                    self._stand_by()
                    return
                except StoreError as err:
                    self._write_failed(f"{kind}: {err}")
                    errors.append(f"{kind}: {err}")
            if errors:
                raise StoreError("; ".join(errors))

    def _confirmed(self) -> bool:
        """The fence before a flush writes: the store still names us as the lease's holder.
        Otherwise stand by; ``StoreError`` when the store cannot say (nothing is written)."""
        try:
            if self._lease.confirm():
                return True
        except StoreError as err:
            raise StoreError(f"cannot confirm the writer lease: {err}") from None
        self._stand_by()
        return False

    def _write_failed(self, reason: str) -> None:
        """Count a write the store refused (a full disk, an outage); the aggregator turns a
        minute of them into a failed readiness probe."""
        self._failure = reason
        self._instruments.history_write_failures.inc()

    def _written(self) -> None:
        self._instruments.history_last_write.set(self._clock() / timestamps.NANOS_PER_SECOND)

    def _flush_kind(self, kind: Kind, state: _KindState, final: bool = False) -> None:
        with self._lock:
            lines = list(state.pending)
            retired = dict(state.retired)
            since, until = state.run_since, state.last_now
            covers = state.loaded.covers
        clock = self._clock()
        if not lines and not retired and not self._heartbeat_due(state, until, final):
            return
        for key in sorted(retired):
            self._archive(retired[key])
        taken = len(lines)
        if since is not None and until is not None:
            lines.append(LogLine(TYPE_OBSERVED, "", until, since=since))
        date = segment_date(clock, covers)
        name = SegmentName((covers.sequence if covers is not None else 0) + 1, date)
        self._store.log.create(kind, name, encode_segment(self._cluster, kind.value, lines))
        self._written()
        with self._lock:
            del state.pending[:taken]
            for key in retired:
                state.retired.pop(key, None)
            state.loaded.covers = name
            state.heartbeat_until = until
            state.unsnapshotted = True
            if since is not None and until is not None:
                history = state.loaded.history
                history.observed = add_span(history.observed, (since, until))

    def _heartbeat_due(self, state: _KindState, until: int | None, final: bool) -> bool:
        """On the batches' own timeline, so a replayed or scripted history is covered as
        densely as a live one."""
        if until is None:
            return False
        last = state.heartbeat_until
        if last is None:
            return True
        return until > last if final else until - last >= self._heartbeat_ns

    def _archive(self, entry: ArchiveEntry) -> None:
        name = self._store.archive(entry)
        log.info(
            "%s %r is no longer observed; its history is archived as %s",
            entry.kind,
            entry.key,
            name,
        )

    # snapshots ----------------------------------------------------------------------------

    def _snapshot_kind(self, kind: Kind, state: _KindState) -> None:
        """Write the live history to the Go-format event file, then its mark."""
        with self._lock:
            state.snapshot_due = self._clock() + self._snapshot_ns
            if not state.unsnapshotted or state.pending or state.retired:
                return  # nothing new in the log, or lines not in a segment yet
            history = state.loaded.history
            records, attrs = history.records, dict(history.attrs)
            observed, covers = tuple(history.observed), state.loaded.covers
            expected = state.loaded.file_generation
            previous = state.loaded.file
        if covers is None:
            return
        mark = SnapshotMark(0, covers.text(), attrs, observed, previous=previous)
        generation, written, digest = self._write_snapshot(kind, records, expected, mark)
        marked = replace(mark, generation=generation, digest=digest)
        self._store.log.write_mark(kind, encode_mark(marked))
        self._written()
        if self._on_snapshot is not None:
            self._on_snapshot(kind, written, digest)
        with self._lock:
            state.loaded.file_generation = generation
            state.loaded.file = MarkedFile(covers.text(), digest)
            if written is not records:  # another program's events were found: keep them
                state.loaded.history.records = union_records(history.records, written)
                self._records = {**self._records, kind: state.loaded.history.records}
            state.unsnapshotted = state.loaded.covers != covers

    def _write_snapshot(
        self,
        kind: Kind,
        records: Mapping[str, EventRecord],
        expected: int | None,
        mark: SnapshotMark,
    ) -> tuple[int, Mapping[str, EventRecord], str]:
        """Write the event file, compare-and-swap. Before each attempt the mark is written
        with the digest of the file about to be written (``mark.previous`` still vouching for
        the one there), so whichever of the two a crash leaves is one the mark names."""
        for _ in range(self._max_attempts):
            digest = codec.file_digest(codec.encode_event_file(records))
            intent = replace(mark, generation=expected or 0, digest=digest)
            self._store.log.write_mark(kind, encode_mark(intent))
            try:
                version = self._store.write(
                    kind, records, str(expected) if expected is not None else None
                )
                return int(version), records, digest
            except Conflict:
                self._instruments.store_conflicts.labels(kind=kind.value).inc()
                theirs = self._store.read(kind)
                log.info("%s event file changed underneath; keeping its events too", kind)
                records = union_records(records, theirs.records)
                expected = int(theirs.version) if theirs.version is not None else None
        raise StoreError(f"{kind} snapshot: gave up after {self._max_attempts} conflicting writes")

    def compact(self) -> list[Kind]:
        """Write a snapshot of every kind with segments newer than its snapshot, now."""
        written = []
        with self._flush_lock:
            with self._lock:
                states = list(self._kinds.items())
            for kind, state in states:
                if state.unsnapshotted and not state.pending and not state.retired:
                    self._snapshot_kind(kind, state)
                    written.append(kind)
        return written

    def load(self, kinds: Iterable[Kind]) -> bool:
        """Take the lease and read ``kinds`` (for ``megamon events compact``); ``False`` when
        another process holds the lease."""
        if not self._writable():
            return False
        with self._lock:
            for kind in kinds:
                self._state(kind)
        return True

    def hand_over(self) -> None:
        """This process stops leading (leader election): write what it holds, release the
        writer lease so that the next leader appends at once, not after the lease expires,
        and forget the history, which the next leader will grow."""
        if not self._lease.held:
            return
        try:
            self.flush()
        except StoreError as err:
            log.warning("handing over with history unwritten (%s): the next leader sees it", err)
        finally:
            self._lease.release()
            with self._lock:
                self._kinds.clear()
                self._applied.clear()
                self._records = {}
                self._epoch += 1
            log.info("handed the writer lease %s over", self._lease.describe())

    def close(self) -> None:
        """Flush, snapshot and let a standby take over (a clean shutdown)."""
        try:
            self.flush(final=True)
            if not self._standing_by:
                self.compact()
        finally:
            self._lease.release()
