"""``WriterLease``: one writer per history, kept in the store itself.

The lease is one object (``log/writer-lease.json``) naming its holder and for how long it
holds. Every change is a compare-and-swap on the object's generation:

- taking it: create it (generation 0), or replace one that is released, whose holder is
  known to have ended, or that has not changed for its whole duration while we watched;
- keeping it: replace the generation we wrote last, every third of the duration;
- losing it: the generation moved (a renewal or a check before appending meets another
  writer's). The caller drops what it holds and stands by until it takes the lease again;
- releasing it (clean shutdown): replace ours with one that has already expired, so a
  standby takes over at once.

No decision compares wall clocks, which can step (NTP, a VM resumed, a mistyped ``date``):
the holder times its renewals and its own deadline on its monotonic clock, measured from
before the renewal was sent; a standby times the lease's stillness on its own monotonic clock,
from when it first saw that generation (as Kubernetes' leader election does). The holder's
deadline therefore always ends before any standby may take over, as long as both monotonic
clocks run at about the same rate. The wall-clock times in the object are for operators.

Appends are fenced twice (docs/history.md): ``confirm`` re-reads the lease's generation
before a flush writes anything, and refuses past the holder's deadline without a renewal;
and every segment is created at the next sequence number with a "must not exist"
precondition, so two writers can never both extend the log from the same point.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from megamon.codec.log import LeaseHolder, LeaseRecord, decode_lease, encode_lease
from megamon.domain import timestamps
from megamon.errors import Conflict, EventFileError, StoreError
from megamon.stores.base import Moved, ObjectBackend
from megamon.stores.segments import LEASE_NAME, SegmentLog

log = logging.getLogger(__name__)

DEFAULT_LEASE_SECONDS = 30.0
"""How long a holder that stopped renewing keeps others out."""
RENEW_FRACTION = 3
"""Renewed when a third of the duration has passed."""
MAX_WAIT_FACTOR = 10
"""A standby waits for the duration a lease states, but never more than ten times its own:
a damaged or hostile lease object cannot lock every writer out."""
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_PID_NAMESPACE = "/proc/self/ns/pid"


def _read_boot_id() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""


def _read_pid_namespace() -> str:
    try:
        return os.readlink(_PID_NAMESPACE)
    except OSError:
        return ""


def this_process() -> LeaseHolder:
    """This process, as the writer lease names it: ``host/pid`` for operators, plus the boot
    id, PID namespace and a fresh nonce, so that no two processes ever share an identity."""
    host, pid = socket.gethostname(), os.getpid()
    return LeaseHolder(
        f"{host}/{pid}",
        host=host,
        pid=pid,
        boot_id=_read_boot_id(),
        pid_namespace=_read_pid_namespace(),
        nonce=secrets.token_hex(8),
    )


def holder_gone(holder: LeaseHolder) -> bool:
    """Whether ``holder`` was a process that this process can see has ended.

    Only a holder of this very host, boot and PID namespace can be checked by pid: a megamon
    killed and restarted in one container then takes over at once. A holder with the same
    host name in another PID namespace (another container, a ``hostNetwork`` pod) cannot be
    seen from here and is never taken for gone; neither can a pid that now belongs to
    another process.
    """
    here = (socket.gethostname(), _read_boot_id(), _read_pid_namespace())
    if (
        holder.pid <= 0
        or holder.pid == os.getpid()
        or not all(here)
        or (holder.host, holder.boot_id, holder.pid_namespace) != here
    ):
        return False
    try:
        os.kill(holder.pid, 0)
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


_UNREADABLE = LeaseRecord(LeaseHolder(""), 0, 0)
"""What an unreadable lease object counts as: released."""


class WriterLease:
    """This process's claim on the history whose lease object is ``name``."""

    def __init__(
        self,
        backend: ObjectBackend,
        name: str,
        holder: LeaseHolder,
        *,
        duration_s: float = DEFAULT_LEASE_SECONDS,
        clock: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], int] = time.monotonic_ns,
        gone: Callable[[LeaseHolder], bool] | None = None,
    ) -> None:
        """``clock`` stamps the object for operators; ``monotonic`` times every decision;
        ``gone`` says whether a holder is known to have ended (``holder_gone``)."""
        self._backend = backend
        self._gone = gone or holder_gone
        self._name = name
        self.holder = holder
        self._duration = int(duration_s * timestamps.NANOS_PER_SECOND)
        self._clock = clock
        self._monotonic = monotonic
        self._generation: int | None = None
        self._renew_at = 0
        self._deadline = 0
        self._seen: tuple[int, int] | None = None
        """The other holder's generation and when (monotonic) we first saw it."""
        self.other: LeaseRecord | None = None
        """The other holder seen last, while standing by."""

    @property
    def held(self) -> bool:
        return self._generation is not None

    @property
    def renewal_due(self) -> bool:
        """Whether ``ensure`` would write (to keep a held lease)."""
        return self._generation is not None and self._monotonic() >= self._renew_at

    def describe(self) -> str:
        return self._backend.describe(self._name)

    def read(self) -> LeaseState:
        """The lease object as stored; an unreadable one counts as released."""
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
                log.warning("writer lease unreadable (%s); treating it as released", err)
                return LeaseState(_UNREADABLE, generation)
        raise StoreError(f"{self.describe()} kept changing while being read")

    def _write(self, expected: int, *, release: bool = False) -> bool:
        """Replace generation ``expected`` with our claim; ``False`` if it moved."""
        started, now = self._monotonic(), self._clock()
        record = LeaseRecord(self.holder, 0 if release else now + self._duration, now)
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
        self._renew_at = started + self._duration // RENEW_FRACTION
        self._deadline = started + self._duration
        self._seen = None
        self.other = None
        return True

    def ensure(self) -> bool:
        """Hold the lease (taking or renewing it as due); ``False``: another writer holds it,
        or our renewal just met another writer's (stand by until it lapses).

        ``StoreError`` when the store cannot say: the caller neither writes nor gives up.
        """
        if self._generation is not None:
            if self._monotonic() < self._renew_at:
                return True
            if self._write(self._generation):
                return True
            log.warning("writer lease %s was taken over by another process", self.describe())
            return False
        state = self.read()
        if self._free(state):
            return self._write(state.generation)
        self.other = state.record
        return False

    def _free(self, state: LeaseState) -> bool:
        """Whether we may take the lease as it is now."""
        record = state.record
        if record is None or record.released or record.holder == self.holder:
            return True
        if self._gone(record.holder):
            return True
        now = self._monotonic()
        if self._seen is None or self._seen[0] != state.generation:
            self._seen = (state.generation, now)
        wait = min(max(record.duration, self._duration), MAX_WAIT_FACTOR * self._duration)
        return now - self._seen[1] >= wait

    def confirm(self) -> bool:
        """Whether we still hold the lease, checked with the store just before appending:
        past our own deadline it must be renewed first, otherwise its generation must still
        be ours. ``False`` (the lease is dropped): another writer took it.

        ``StoreError`` when the store cannot say: the caller must not write.
        """
        if self._generation is None:
            return False
        if self._monotonic() >= self._deadline:
            return self._write(self._generation)
        if self._backend.generation(self._name) == self._generation:
            return True
        log.warning("writer lease %s was taken over by another process", self.describe())
        self.drop()
        return False

    def drop(self) -> None:
        """Forget our claim without writing: another writer was found appending."""
        self._generation = None

    def release(self) -> None:
        """Let a standby take over now (best effort: an error leaves it to expire)."""
        if self._generation is None:
            return
        try:
            self._write(self._generation, release=True)
        except StoreError as err:
            log.warning("cannot release the writer lease (it expires by itself): %s", err)
        self._generation = None


def writer_lease(
    log: SegmentLog,
    holder: LeaseHolder,
    *,
    duration_s: float = DEFAULT_LEASE_SECONDS,
    clock: Callable[[], int] = time.time_ns,
    monotonic: Callable[[], int] = time.monotonic_ns,
) -> WriterLease:
    """The lease of the history ``log`` belongs to."""
    return WriterLease(
        log.backend,
        log.name(LEASE_NAME),
        holder,
        duration_s=duration_s,
        clock=clock,
        monotonic=monotonic,
    )
