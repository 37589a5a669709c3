"""Leader election on a ``coordination.k8s.io/v1`` Lease, so that of several megamon replicas
exactly one observes, appends to the event log and exports.

Two replicas writing history would interleave events and double-count outages, yet running a
standby is what lets a replacement take over in seconds. The Lease is the arbiter, with the
semantics of client-go's ``leaderelection`` package:

- a candidate takes the Lease when it does not exist (create; 409 AlreadyExists means another
  replica won), when it is free (empty holder, as a release leaves it), when we already hold
  it, or when ``renewTime + leaseDurationSeconds`` is in the past;
- every write carries the resourceVersion just read, so of two racing writers one gets 409
  Conflict: a lost round, never an exception;
- the leader renews every ``retry_period``; ``is_leader()`` holds only while the last successful
  renewal is younger than ``renew_deadline`` (< ``lease_duration``), so a leader stops believing
  it leads before any standby may take over — even when its election thread hangs in a call;
- ``stop(release=True)`` first stops leading (``on_stopped_leading``), then writes an empty holder
  with an already expired renewTime, so that a standby takes over at its next retry.

One deviation: client-go times a lease from the moment *it observed* the record change; here
expiry is read from renewTime against the local clock, which assumes the replicas' clocks agree
to within ``lease_duration - renew_deadline`` (NTP-synced GKE nodes do).

Callbacks run on the election thread and must return quickly: a callback that blocks delays
renewals, and leadership then lapses (safely) at the renew deadline.
"""

from __future__ import annotations

import enum
import logging
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

NOT_FOUND = 404
CONFLICT = 409
"""AlreadyExists on create, Conflict on update: another replica wrote first."""
JITTER = 1.2
"""client-go's JitterFactor: a candidate waits ``retry_period × [1, 1 + JITTER)`` between tries."""

Callback = Callable[[], None]


class MicroTime(datetime):
    """A UTC instant that serializes as ``metav1.MicroTime`` must: RFC 3339 with exactly six
    fractional digits. The client calls ``isoformat()``, which drops the fraction when the
    microseconds are 0 — a form the API server's parser (layout ``.000000``) rejects."""

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        return self.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def micro_time(seconds: float) -> MicroTime:
    """The instant ``seconds`` after the epoch, ready for a Lease's time fields."""
    return MicroTime.fromtimestamp(seconds, UTC)


def _as_micro(moment: datetime | None) -> MicroTime | None:
    if moment is None or isinstance(moment, MicroTime):
        return moment
    return micro_time(_epoch(moment))


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:  # the API always says Z; read a bare time as UTC all the same
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def default_identity() -> str:
    """A name unique to this process: hostname (the pod name in a cluster) and a random id."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex}"


class Outcome(enum.Enum):
    """How one round ended."""

    WON = "won"  # we hold the Lease now
    HELD = "held"  # another replica holds a valid Lease
    LOST = "lost"  # a write conflicted (409) or the API failed: try again


def _check_durations(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    if min(lease_duration, renew_deadline, retry_period) <= 0:
        raise ValueError("leader election durations must be positive")
    if lease_duration <= renew_deadline:
        raise ValueError("lease_duration must be greater than renew_deadline")
    if renew_deadline <= JITTER * retry_period:
        raise ValueError(f"renew_deadline must be greater than {JITTER} × retry_period")


class LeaseElector:
    """Competes for the Lease ``namespace/name`` as ``identity`` (see the module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.time,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
    ) -> None:
        _check_durations(lease_duration, renew_deadline, retry_period)
        self._api = k8s.CoordinationV1Api(api_client)
        self._namespace = namespace
        self._name = name
        self.identity = identity
        self._duration_seconds = max(1, math.ceil(lease_duration))  # never promise less
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._request_timeout = renew_deadline / 2  # a round (read, write) fits the deadline
        self._clock = clock
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._lock = threading.Lock()
        self._leading = False
        self._renewed_at = 0.0  # by `clock`, when the last successful round started
        self._holder: str | None = None  # last holder seen, to log changes only
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def describe(self) -> str:
        return f"lease {self._namespace}/{self._name}"

    # -- public API ---------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True while we lead and the last successful renewal is younger than the deadline."""
        with self._lock:
            fresh = self._clock() - self._renewed_at < self._renew_deadline
            return self._leading and fresh

    def start(self) -> None:
        """Compete (and, once leading, renew) in a daemon thread until `stop()`."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"leader-election-{self._name}", daemon=True
        )
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        """Stop competing; a leader stops leading, then (with `release`) frees the Lease."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=2 * self._request_timeout + self._retry_period)
            if thread.is_alive():
                log.warning("%s: election thread still blocked in an API call", self.describe())
        with self._lock:
            was_leading, self._leading = self._leading, False
        if was_leading:
            log.info("%s: %s stops leading", self.describe(), self.identity)
            self._notify(self._on_stopped)
            if release:
                self._release()

    def try_acquire_or_renew(self) -> bool:
        """One round: acquire or renew the Lease; True if we lead after it. Never raises for
        API errors. A stopped elector does not acquire."""
        started = self._clock()
        outcome = self._attempt(started)
        return self._settle(outcome, started)

    # -- one round ----------------------------------------------------------------------------

    def _attempt(self, now: float) -> Outcome:
        try:
            lease = self._read()
            if lease is not None:
                self._observe_holder(lease)
                if self._held_elsewhere(lease, now):
                    return Outcome.HELD
            if self._stopping.is_set():
                return Outcome.LOST
            if lease is None:
                self._create(now)
            else:
                self._replace(self._claimed(lease, now))
            return Outcome.WON
        except ApiException as err:
            if err.status == CONFLICT:
                log.info("%s: another replica wrote first (409); round lost", self.describe())
            else:
                log.warning("%s: HTTP %s %s", self.describe(), err.status, err.reason)
            return Outcome.LOST
        except (urllib3.exceptions.HTTPError, OSError) as err:
            log.warning("%s: API unreachable: %s", self.describe(), type(err).__name__)
            return Outcome.LOST

    def _settle(self, outcome: Outcome, started: float) -> bool:
        """Turn a round's outcome into leading or not, and call the callbacks on a change.

        A win counts only if the round ended within the renew deadline (the renewTime we wrote
        is `started`); a lapsed term ends (on_stopped_leading) even if this round renewed it.
        """
        finished = self._clock()
        won = outcome is Outcome.WON and finished - started < self._renew_deadline
        won = won and not self._stopping.is_set()
        with self._lock:
            lapsed = finished - self._renewed_at >= self._renew_deadline
            ended = self._leading and (outcome is Outcome.HELD or lapsed)
            if ended:
                self._leading = False
            began = won and not self._leading
            if won:
                self._leading = True
                self._renewed_at = started
        if ended:
            why = "another replica holds it" if outcome is Outcome.HELD else "renewals failed"
            log.warning("%s: %s stops leading: %s", self.describe(), self.identity, why)
            self._notify(self._on_stopped)
        if began:
            log.info("%s: %s starts leading", self.describe(), self.identity)
            self._notify(self._on_started)
        return won

    def _held_elsewhere(self, lease: k8s.V1Lease, now: float) -> bool:
        spec = lease.spec
        if spec is None or not spec.holder_identity or spec.holder_identity == self.identity:
            return False
        if spec.renew_time is None:
            return False  # no way to tell when it was renewed: treat as expired
        duration = spec.lease_duration_seconds
        if duration is None:
            duration = self._duration_seconds
        return _epoch(spec.renew_time) + duration > now

    def _claimed(self, lease: k8s.V1Lease, now: float) -> k8s.V1Lease:
        """The read Lease (its resourceVersion kept) rewritten to name us as holder."""
        spec = lease.spec or k8s.V1LeaseSpec()
        if spec.holder_identity != self.identity:
            spec.holder_identity = self.identity
            spec.acquire_time = micro_time(now)
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
        spec.lease_duration_seconds = self._duration_seconds
        spec.renew_time = micro_time(now)
        lease.spec = spec
        return lease

    def _observe_holder(self, lease: k8s.V1Lease) -> None:
        holder = lease.spec.holder_identity if lease.spec else None
        if holder not in (self._holder, self.identity):
            log.info("%s: held by %s", self.describe(), holder or "nobody")
        self._holder = holder

    # -- API calls ------------------------------------------------------------------------------

    def _read(self) -> k8s.V1Lease | None:
        try:
            return self._api.read_namespaced_lease(
                self._name, self._namespace, _request_timeout=self._request_timeout
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return None
            raise

    def _create(self, now: float) -> None:
        spec = k8s.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=self._duration_seconds,
            acquire_time=micro_time(now),
            renew_time=micro_time(now),
            lease_transitions=0,
        )
        body = k8s.V1Lease(
            api_version="coordination.k8s.io/v1",
            kind="Lease",
            metadata=k8s.V1ObjectMeta(name=self._name, namespace=self._namespace),
            spec=spec,
        )
        self._api.create_namespaced_lease(
            self._namespace, body, _request_timeout=self._request_timeout
        )

    def _replace(self, lease: k8s.V1Lease) -> None:
        if lease.spec is not None:  # times read back are plain datetimes: keep six digits
            lease.spec.acquire_time = _as_micro(lease.spec.acquire_time)
            lease.spec.renew_time = _as_micro(lease.spec.renew_time)
        self._api.replace_namespaced_lease(
            self._name, self._namespace, lease, _request_timeout=self._request_timeout
        )

    def _release(self) -> None:
        """Free the Lease if it still names us, with an already expired renewTime."""
        try:
            lease = self._read()
            if lease is None or lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = ""
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = micro_time(self._clock() - 1.0)
            self._replace(lease)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as err:
            log.warning(
                "%s: release failed (%s); standbys take over when it expires",
                self.describe(),
                err.status if isinstance(err, ApiException) else type(err).__name__,
            )

    # -- the loop -------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                leading = self.try_acquire_or_renew()
            except Exception:  # a bug, not an API error (those end a round): keep electing
                log.exception("%s: election round failed", self.describe())
                leading = False
            self._stopping.wait(self._pause(leading))

    def _pause(self, leading: bool) -> float:
        if leading:
            return self._retry_period
        return self._retry_period * (1.0 + random.random() * JITTER)

    @staticmethod
    def _notify(callback: Callback | None) -> None:
        if callback is None:
            return
        try:
            callback()
        except Exception:
            log.exception("leader election callback failed")
