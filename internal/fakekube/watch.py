"""Watch streams: replay from a resourceVersion, follow live changes, bookmarks, timeouts.

A watch is where informer-style clients (megamon's collectors) are most fragile, so the stream
follows kube-apiserver closely: replay strictly after the requested version, synthetic ADDED
events when the version is unset or "0", an in-stream ERROR event with a 410 Status when the
version left the history, ADDED/DELETED for objects that start/stop matching a selector,
periodic BOOKMARKs carrying only the version, and an end at `timeoutSeconds`. Sessions are
registered in a hub so tests can drop them (gracefully or by resetting the socket).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from internal.fakekube import errors
from internal.fakekube.errors import ApiError
from internal.fakekube.history import ADDED, DELETED, MODIFIED, Event, watch_line
from internal.fakekube.listing import key_range
from internal.fakekube.resources import ResourceType
from internal.fakekube.selectors import ObjectFilter
from internal.fakekube.store import Store, parse_rv
from internal.fakekube.strategy import served_as

Obj = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class WatchRequest:
    rt: ResourceType
    namespace: str | None
    keep: ObjectFilter
    resource_version: str | None
    allow_bookmarks: bool
    send_initial_events: bool | None
    timeout: float


class WatchSession:
    """One open watch. `begin()` validates (may raise ApiError); `lines()` streams."""

    def __init__(self, store: Store, request: WatchRequest, bookmark_interval: float) -> None:
        self.store = store
        self.request = request
        self.bookmark_interval = bookmark_interval
        self.pos = 0
        self.dropped = False
        self.sock: socket.socket | None = None
        self._initial: list[Obj] = []
        self._expired: ApiError | None = None
        self._deadline = time.monotonic() + request.timeout
        self._match = request.keep.predicate()

    def begin(self) -> None:
        """Fix the start version under the store lock, before any byte is sent."""
        req = self.request
        with self.store.lock:
            current = self.store.rv
            initial = req.send_initial_events
            if initial is None:
                initial = req.resource_version in (None, "", "0")
            if req.resource_version in (None, "", "0"):
                self.pos = current
            else:
                wanted = parse_rv(req.resource_version)
                if wanted > current:
                    raise errors.too_large(wanted, current)
                if wanted < self.store.history.floor:
                    self._expired = errors.too_old(wanted, self.store.history.floor)
                self.pos = current if initial else wanted
            if initial and self._expired is None:
                self._initial = self._current_objects()

    def _current_objects(self) -> list[Obj]:
        bucket = self.store.bucket(self.request.rt)
        keys = bucket.sorted_keys()
        lo, hi = key_range(keys, self.request.namespace)
        return [o for o in (bucket.objects[k] for k in keys[lo:hi]) if self._match(o)]

    def drop(self, abrupt: bool) -> None:
        """End this stream: cleanly (terminating chunk) or by resetting the connection."""
        self.dropped = True
        if abrupt and self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)

    def lines(self) -> Iterator[bytes]:
        """Newline-terminated JSON events until timeout, drop or error."""
        if self._expired is not None:
            yield _error_line(self._expired)
            return
        for obj in self._initial:
            yield watch_line(ADDED, served_as(self.request.rt, obj))
        self._initial = []
        if self.request.send_initial_events and self.request.allow_bookmarks:
            yield self._bookmark({INITIAL_EVENTS_END: "true"})
        next_bookmark = time.monotonic() + self.bookmark_interval
        while True:
            events, stop = self._wait(next_bookmark)
            for event in events:
                line = self._translate(event)
                if line is not None:
                    yield line
            if self._expired is not None:
                yield _error_line(self._expired)
                return
            now = time.monotonic()
            if stop or now >= self._deadline:
                return
            if self.request.allow_bookmarks and now >= next_bookmark:
                yield self._bookmark(None)
                next_bookmark = now + self.bookmark_interval

    def _wait(self, next_bookmark: float) -> tuple[list[Event], bool]:
        """Block until there are events, a bookmark or the deadline is due, or a drop."""
        history = self.store.history
        with self.store.changed:
            while not self.dropped and history.last <= self.pos and self.pos >= history.floor:
                wake = self._deadline
                if self.request.allow_bookmarks:
                    wake = min(wake, next_bookmark)
                remaining = wake - time.monotonic()
                if remaining <= 0:
                    return [], False
                self.store.changed.wait(remaining)
            if self.dropped:
                return [], True
            events = history.since(self.pos)
            if events is None:
                self._expired = errors.too_old(self.pos, history.floor)
                return [], True
            self.pos = history.last
            return events, False

    def _translate(self, event: Event) -> bytes | None:
        """The line this watcher sees for `event`, honouring namespace and selectors."""
        req = self.request
        if event.resource != req.rt.qualified:
            return None
        if req.namespace is not None and event.namespace != req.namespace:
            return None
        if req.keep.empty:
            return self._line(event)
        now_matches = self._match(event.obj)
        if event.type != MODIFIED or event.prev is None:
            return self._line(event) if now_matches else None
        before = self._match(event.prev)
        if now_matches and before:
            return self._line(event)
        if now_matches:
            return watch_line(ADDED, served_as(req.rt, event.obj))
        if before:
            gone = dict(event.prev)
            gone["metadata"] = dict(event.prev["metadata"], resourceVersion=str(event.rv))
            return watch_line(DELETED, served_as(req.rt, gone))
        return None

    def _line(self, event: Event) -> bytes:
        """The event's line, serialized once for every watcher of the version it was
        written at; converted for a watcher of another version."""
        obj = served_as(self.request.rt, event.obj)
        return event.line() if obj is event.obj else watch_line(event.type, obj)

    def _bookmark(self, annotations: dict[str, str] | None) -> bytes:
        meta: Obj = {"resourceVersion": str(self.pos)}
        if annotations:
            meta["annotations"] = annotations
        rt = self.request.rt
        obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        return watch_line("BOOKMARK", obj)


def _error_line(error: ApiError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": error.status()}) + b"\n"


class WatchHub:
    """The open watch sessions, so they can be counted, dropped or moved past a compaction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._sessions: set[WatchSession] = set()
        self._lock = threading.Lock()

    def open(self, request: WatchRequest, bookmark_interval: float) -> WatchSession:
        session = WatchSession(self.store, request, bookmark_interval)
        with self.store.lock:  # so that a compaction cannot slip in between
            session.begin()
            with self._lock:
                self._sessions.add(session)
        return session

    def close(self, session: WatchSession) -> None:
        with self._lock:
            self._sessions.discard(session)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._sessions)

    def drop_all(self, abrupt: bool = False) -> int:
        """End every open watch now; returns how many were open."""
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.drop(abrupt)
        with self.store.changed:
            self.store.changed.notify_all()
        return len(sessions)

    def advance(self, old_last: int, new_floor: int) -> None:
        """After a compaction, watchers that had seen everything missed nothing: move them on."""
        with self.store.lock, self._lock:
            for session in self._sessions:
                if session.pos == old_last:
                    session.pos = new_floor
