"""``ObjectEventStore``: the event store over any object backend.

Layout (the bucket's, or a directory's): ``<path>/<event file>`` per kind, and
``<path>/archive/<kind>/<key>.json`` per retired resource; a key retired again in a later
lifetime (other events) gets ``<key>@<retired-at ns>.json`` so no retirement ever replaces
another, and a lifetime already archived is never archived twice.

Three rules protect the history:
- reads are cached by generation, so an unchanged file is never downloaded twice;
- a file that cannot be parsed is never overwritten before it is copied aside to
  ``<file>.corrupt-<UTC timestamp>``; one error line names both, the corrupt-object counter
  rises, and the kind starts a fresh record set (written with compare-and-swap against the
  corrupt generation, so nothing else is clobbered);
- a file deleted underneath a running megamon is recreated from the records it last saw.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import quote, unquote

from megamon.codec import history as codec
from megamon.codec.eventscan import scan_event_file
from megamon.domain import timestamps
from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind, event_file
from megamon.errors import Conflict, EventFileError, StoreError
from megamon.stores.base import Moved, ObjectBackend, Snapshot
from megamon.stores.segments import SegmentLog
from megamon.telemetry import Instruments

log = logging.getLogger(__name__)

ARCHIVE_DIR = "archive"
_DIGEST_APART_BYTES = 1 << 20
"""From this size on, a file's digest is taken on a thread of its own while it is parsed."""


@contextlib.contextmanager
def _digest_beside(data: bytes) -> Iterator[Future[str]]:
    """The digest of ``data``, taken beside the caller's work. hashlib lets go of the GIL on
    large buffers, so on a snapshot of hundreds of megabytes the digest (about a second at
    65,000 nodes with a year of history) runs on another core while the file is parsed,
    instead of before it."""
    if len(data) < _DIGEST_APART_BYTES:
        done: Future[str] = Future()
        done.set_result(codec.file_digest(data))
        yield done
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-digest") as pool:
        yield pool.submit(codec.file_digest, data)


_READ_ATTEMPTS = 3


MAX_STEM = 120
"""Longest quoted key kept whole in an archive's object name: with the digest, the
retirement suffix and ``.json`` a name stays under the 255 bytes a file name may have."""
HASHED = "+h"
"""Marks a stem cut short and followed by a digest (``quote`` always escapes ``+``)."""


def archive_stem(key: str) -> str:
    """The object-name stem of ``key``'s archive: the key percent-quoted (any character is
    safe, ``/`` and ``..`` included), cut and suffixed with a SHA-256 digest when long."""
    quoted = quote(key, safe="")
    if len(quoted) <= MAX_STEM:
        return quoted
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"{quoted[:MAX_STEM]}{HASHED}{digest}"


class ObjectEventStore:
    """An ``EventStore`` over an ``ObjectBackend`` rooted at ``path``."""

    def __init__(
        self,
        backend: ObjectBackend,
        path: str = "",
        *,
        instruments: Instruments | None = None,
        clock: Callable[[], int] = time.time_ns,
        read_only: bool = False,
    ) -> None:
        """``read_only``: a corrupt file is an ``EventFileError`` for the caller, never
        quarantined (the read-only commands)."""
        self._backend = backend
        self._read_only = read_only
        self._path = path  # as the Go megamon names objects: see config.bucket_prefix
        self._instruments = instruments or Instruments.unregistered()
        self._clock = clock
        self._cache: dict[Kind, tuple[int, Snapshot]] = {}
        self._lock = threading.Lock()
        self.log = SegmentLog(backend, self._path, instruments=self._instruments)
        """The append-only log beside the event files (docs/history.md)."""

    def _name(self, *parts: str) -> str:
        return "/".join(p for p in (self._path, *parts) if p)

    def describe(self) -> str:
        return self._backend.describe(self._path)

    def read(self, kind: Kind) -> Snapshot:
        name = self._name(event_file(kind))
        for _ in range(_READ_ATTEMPTS):
            generation = self._backend.generation(name)
            with self._lock:
                cached = self._cache.get(kind)
            if generation is None:
                return self._vanished(name, cached[1] if cached else None)
            if cached is not None and cached[0] == generation:
                return cached[1]
            try:
                data = self._backend.download(name, generation)
            except Moved:
                continue
            snapshot = self._decode(kind, name, data, generation)
            with self._lock:
                self._cache[kind] = (generation, snapshot)
            return snapshot
        raise StoreError(f"{self._backend.describe(name)} kept changing while being read")

    def _vanished(self, name: str, last_seen: Snapshot | None) -> Snapshot:
        """No file: new history, or one deleted underneath us — then restore what we saw."""
        if last_seen is None or not last_seen.records:
            return Snapshot({}, None)
        log.warning(
            "event file %s was deleted underneath megamon; restoring the %d records it last saw",
            self._backend.describe(name),
            len(last_seen.records),
        )
        return Snapshot(last_seen.records, None)

    def _decode(self, kind: Kind, name: str, data: bytes, generation: int) -> Snapshot:
        with _digest_beside(data) as digest:
            scanned = scan_event_file(data)  # the canonical layout, without a document in memory
            if scanned is not None:
                return Snapshot(scanned, str(generation), digest.result())
            try:
                records = codec.decode_event_file(data, self._backend.describe(name))
            except EventFileError as err:
                if self._read_only:
                    raise
                self._quarantine(kind, name, generation, err)
                return Snapshot({}, str(generation), digest.result())
            return Snapshot(records, str(generation), digest.result())

    def _quarantine(self, kind: Kind, name: str, generation: int, err: EventFileError) -> None:
        aside = f"{name}.corrupt-{timestamps.format_ns(self._clock())}"
        # Conflict: another replica quarantined this generation at the same instant.
        with contextlib.suppress(Conflict):
            self._backend.copy(name, aside, generation)
        self._instruments.corrupt_objects.labels(kind=kind.value).inc()
        log.error(
            "event file %s cannot be parsed (%s); copied to %s, starting a fresh record set",
            self._backend.describe(name),
            err.reason,
            self._backend.describe(aside),
        )

    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str:
        name = self._name(event_file(kind))
        expected = int(version) if version is not None else 0
        data = codec.encode_event_file(records)
        generation = self._backend.upload(name, data, expected)
        snapshot = Snapshot(dict(records), str(generation), codec.file_digest(data))
        with self._lock:
            self._cache[kind] = (generation, snapshot)
        return str(generation)

    def _archive_name(self, kind: Kind, key: str, suffix: str = "") -> str:
        return self._name(ARCHIVE_DIR, kind.value, archive_stem(key) + suffix + ".json")

    def archive(self, entry: ArchiveEntry) -> str:
        """Archive ``entry`` once per lifetime: a retirement whose events are already
        archived (a process killed between archiving a key and recording its retirement
        archives it again when it restarts, later) writes nothing and returns that object."""
        kind = Kind(entry.kind)
        data = codec.encode_archive_entry(entry)
        first = self._archive_name(kind, entry.key)
        try:
            self._backend.upload(first, data, 0)
            return first
        except Conflict:
            pass
        same = self._archived_lifetime(kind, entry)
        if same is not None:
            return same
        again = self._archive_name(kind, entry.key, f"@{entry.retired_at}")
        try:
            self._backend.upload(again, data, 0)
            return again
        except Conflict:
            if self._same_content(again, data):
                return again  # written before, e.g. by a retried cycle
        raise StoreError(
            f"archive of {entry.kind} {entry.key!r} retired at "
            f"{timestamps.format_ns(entry.retired_at)} exists with other content"
        )

    def _archived_lifetime(self, kind: Kind, entry: ArchiveEntry) -> str | None:
        """The object already archiving ``entry``'s lifetime (the same events), if any."""
        for name, archived in self._archive_entries(kind, entry.key):
            if archived.record == entry.record:
                return name
        return None

    def _same_content(self, name: str, data: bytes) -> bool:
        generation = self._backend.generation(name)
        if generation is None:
            return False
        try:
            return self._backend.download(name, generation) == data
        except Moved:
            return False

    def archived_keys(self, kind: Kind) -> list[str]:
        prefix = self._name(ARCHIVE_DIR, kind.value) + "/"
        keys = set()
        for name in self._backend.list(prefix):
            if not name.endswith(".json"):
                continue
            stem = name[len(prefix) :].removesuffix(".json").split("@", 1)[0]
            keys.add(self._hashed_key(name) if HASHED in stem else unquote(stem))
        return sorted(keys)

    def _hashed_key(self, name: str) -> str:
        """The key of an archive whose name carries a digest: read from the entry itself."""
        generation = self._backend.generation(name)
        if generation is None:
            raise StoreError(f"{self._backend.describe(name)} vanished while being listed")
        data = self._backend.download(name, generation)
        return codec.decode_archive_entry(data, self._backend.describe(name)).key

    def read_archive(self, kind: Kind, key: str) -> list[ArchiveEntry]:
        return _one_per_retirement([entry for _, entry in self._archive_entries(kind, key)])

    def _archive_entries(self, kind: Kind, key: str) -> list[tuple[str, ArchiveEntry]]:
        """Every archive object of ``key`` (``<key>.json``, ``<key>@<ns>.json``), decoded."""
        base = self._archive_name(kind, key).removesuffix(".json")
        entries = []
        for name in self._backend.list(base):
            rest = name[len(base) :]
            if rest != ".json" and not (rest.startswith("@") and rest.endswith(".json")):
                continue
            generation = self._backend.generation(name)
            if generation is None:
                continue
            data = self._backend.download(name, generation)
            entries.append((name, codec.decode_archive_entry(data, self._backend.describe(name))))
        return entries


def _one_per_retirement(entries: list[ArchiveEntry]) -> list[ArchiveEntry]:
    """Entries by retirement time, a retirement written twice counted once.

    A process killed between archiving a key and recording its retirement archives it again
    when it restarts, later and with the same events: the same retirement, never a second
    lifetime of the resource. The earliest entry of each history stands.
    """
    kept: list[ArchiveEntry] = []
    seen: set[tuple[tuple[int, ...], bytes]] = set()
    for entry in sorted(entries, key=lambda e: e.retired_at):
        history = (entry.record.timestamps, entry.record.flags)
        if history not in seen:
            seen.add(history)
            kept.append(entry)
    return kept
