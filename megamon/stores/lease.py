"""``WriterLease``: one writer per history, kept in the store itself.

The lease is one object (``log/writer-lease.json``) naming its holder and when it expires.
Every change is a compare-and-swap on the object's generation:

- taking it: create it (generation 0), or replace one that has expired by our clock;
- keeping it: replace the generation we wrote last. This works even after our own expiry
  (a long store outage): if nobody took it meanwhile, nobody else appended either, so the
  history held in memory is still ours to write;
- losing it: the generation moved. The caller drops what it holds and stands by;
- releasing it (clean shutdown): replace ours with one that has already expired, so a
  standby takes over at once.

Expiry compares the holder's clock with the taker's: clocks must agree to well within the
lease's duration (NTP does). A stale holder is also fenced by segment names: two writers
cannot create the same segment.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from megamon.codec.log import LeaseRecord, decode_lease, encode_lease
from megamon.domain import timestamps
from megamon.errors import Conflict, EventFileError, StoreError
from megamon.stores.base import Moved, ObjectBackend
from megamon.stores.segments import LEASE_NAME, SegmentLog

log = logging.getLogger(__name__)

DEFAULT_LEASE_SECONDS = 30.0
"""How long a holder that stopped renewing keeps others out."""
RENEW_FRACTION = 3
"""Renewed when a third of the duration has passed."""


def holder_gone(holder: str) -> bool:
    """Whether ``holder`` (``host/pid``) was a process of this host that no longer exists.

    A megamon killed and restarted on the same host (a container restarted in its pod keeps
    its hostname) then takes over at once instead of waiting for the lease to lapse; a
    second live ``megamon run`` on the same host still stands by.
    """
    host, _, pid = holder.rpartition("/")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


@dataclass(frozen=True)
class LeaseState:
    """What the lease object says now; ``None`` fields when there is none."""

    record: LeaseRecord | None
    generation: int


class WriterLease:
    """This process's claim on the history whose lease object is ``name``."""

    def __init__(
        self,
        backend: ObjectBackend,
        name: str,
        holder: str,
        *,
        duration_s: float = DEFAULT_LEASE_SECONDS,
        clock: Callable[[], int] = time.time_ns,
        gone: Callable[[str], bool] | None = None,
    ) -> None:
        """``gone`` says whether a holder is known to have ended (``holder_gone``)."""
        self._backend = backend
        self._gone = gone or holder_gone
        self._name = name
        self.holder = holder
        self._duration = int(duration_s * timestamps.NANOS_PER_SECOND)
        self._clock = clock
        self._generation: int | None = None
        self._renew_at = 0
        self.other: LeaseRecord | None = None
        """The other holder seen last, while standing by."""

    @property
    def held(self) -> bool:
        return self._generation is not None

    @property
    def renewal_due(self) -> bool:
        """Whether ``ensure`` would write (to keep a held lease)."""
        return self._generation is not None and self._clock() >= self._renew_at

    def describe(self) -> str:
        return self._backend.describe(self._name)

    def read(self) -> LeaseState:
        """The lease object as stored; an unreadable one counts as expired."""
        for _ in range(3):
            generation = self._backend.generation(self._name)
            if generation is None:
                return LeaseState(None, 0)
            try:
                data = self._backend.download(self._name, generation)
            except Moved:
                continue
            try:
                return LeaseState(decode_lease(data, self.describe()), generation)
            except EventFileError as err:
                log.warning("writer lease unreadable (%s); treating it as expired", err)
                return LeaseState(LeaseRecord("", 0, 0), generation)
        raise StoreError(f"{self.describe()} kept changing while being read")

    def _write(self, expected: int, expires: int) -> bool:
        now = self._clock()
        record = LeaseRecord(self.holder, expires, now)
        try:
            self._generation = self._backend.upload(self._name, encode_lease(record), expected)
        except Conflict:
            # Our own upload, retried by the client after it had landed, fails its
            # precondition too: the object then is exactly what we wrote.
            state = self.read()
            if state.record != record:
                self._generation = None
                return False
            self._generation = state.generation
        self._renew_at = now + self._duration // RENEW_FRACTION
        self.other = None
        return True

    def ensure(self) -> bool:
        """Hold the lease (taking or renewing it as due); ``False``: another writer holds it.

        ``StoreError`` when the store cannot say: the caller neither writes nor gives up.
        """
        now = self._clock()
        if self._generation is not None:
            if now < self._renew_at:
                return True
            if self._write(self._generation, now + self._duration):
                return True
            log.warning("writer lease %s was taken over by another process", self.describe())
        state = self.read()
        record = state.record
        if (
            record is not None
            and record.holder != self.holder
            and now < record.expires
            and not self._gone(record.holder)
        ):
            self.other = record
            return False
        return self._write(state.generation, now + self._duration)

    def release(self) -> None:
        """Let a standby take over now (best effort: an error leaves it to expire)."""
        if self._generation is None:
            return
        try:
            self._write(self._generation, 0)
        except StoreError as err:
            log.warning("cannot release the writer lease (it expires by itself): %s", err)
        self._generation = None


def writer_lease(
    log: SegmentLog,
    holder: str,
    *,
    duration_s: float = DEFAULT_LEASE_SECONDS,
    clock: Callable[[], int] = time.time_ns,
) -> WriterLease:
    """The lease of the history ``log`` belongs to."""
    return WriterLease(
        log.backend, log.name(LEASE_NAME), holder, duration_s=duration_s, clock=clock
    )
