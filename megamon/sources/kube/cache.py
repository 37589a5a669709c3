"""The watch cache: the latest projection of every object of one resource type.

It keeps only projections (``megamon.sources.kube.projections``), never whole objects, and hands out
read-only snapshots that are rebuilt only when something changed. A list is projected page by
page as it arrives, so the raw objects of a 65,000-node list are never all in memory at once.
An update whose projection is what the cache already holds (a node's heartbeat, a status
field megamon does not read) changes nothing: no new snapshot, no wake-up — at fleet scale
almost every watch event is one. Every real change wakes the ``on_change`` callback, so an
observer can react instead of polling. An object that cannot be projected is left out;
``on_problem`` hears of it once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from megamon.errors import ObservationError
from megamon.sources.kube.watching import EVENT_DELETED, RawLister, WatchSettings, run_forever

log = logging.getLogger(__name__)

V = TypeVar("V")
Json = dict[str, Any]


def object_key(obj: Json) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


class WatchCache(Generic[V]):
    """Projections of every object of one resource type, kept current by a watch."""

    def __init__(
        self,
        name: str,
        lister: RawLister,
        project: Callable[[Json], V],
        *,
        settings: WatchSettings | None = None,
        on_change: Callable[[], None] | None = None,
        on_problem: Callable[[str, str], None] | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.name = name
        self._lister = lister
        self._project = project
        self._settings = settings or WatchSettings()
        self._on_change = on_change or (lambda: None)
        self._on_problem = on_problem or self._log_problem
        self._clock = clock
        self._lock = threading.Lock()
        self._items: dict[str, V] = {}
        self._version = 0
        self._snapshot: tuple[int, Mapping[str, V]] = (-1, MappingProxyType({}))
        self._reported: set[str] = set()
        self.synced = threading.Event()
        self.last_contact_ns: int | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._response: Any | None = None

    def _log_problem(self, key: str, message: str) -> None:
        log.warning("%s %s skipped: %s", self.name, key, message)

    def _projected(self, obj: Json) -> tuple[str, V | None]:
        key = object_key(obj)
        try:
            view = self._project(obj)
        except ObservationError as err:
            if key not in self._reported:
                self._reported.add(key)
                self._on_problem(key, str(err))
            return key, None
        self._reported.discard(key)
        return key, view

    # Sink -------------------------------------------------------------------------------

    def replace(self, objects: Iterable[Json]) -> None:
        with self._lock:
            previous = self._items
        items: dict[str, V] = {}
        for obj in objects:
            key, view = self._projected(obj)
            if view is not None:
                old = previous.get(key)
                items[key] = old if old is not None and old == view else view
        with self._lock:
            self._items = items
            self._version += 1
        self.touch()
        self.synced.set()
        self._on_change()

    def apply(self, event_type: str, obj: Json) -> None:
        if event_type == EVENT_DELETED:
            key, view = object_key(obj), None
        else:
            key, view = self._projected(obj)
        with self._lock:
            if view is None:  # deleted, or no longer projectable
                changed = self._items.pop(key, None) is not None
            elif self._items.get(key) == view:
                changed = False  # nothing megamon reads has changed
            else:
                self._items[key] = view
                changed = True
            if changed:
                self._version += 1
        self.touch()
        if changed:
            self._on_change()

    def touch(self) -> None:
        self.last_contact_ns = self._clock()

    def streaming(self, response: Any | None) -> None:
        self._response = response

    # Readers ----------------------------------------------------------------------------

    def snapshot(self) -> Mapping[str, V]:
        """A read-only view of every projection; the same object until something changes."""
        with self._lock:
            if self._snapshot[0] != self._version:
                self._snapshot = (self._version, MappingProxyType(dict(self._items)))
            return self._snapshot[1]

    # Lifecycle --------------------------------------------------------------------------

    def start(self) -> WatchCache[V]:
        self._stop.clear()
        self._thread = threading.Thread(
            target=run_forever,
            args=(self.name, self._lister, self, self._settings, self._stop),
            name=f"watch-{self.name}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            # Wake the watch thread out of its blocking read. A stream that already ended
            # (or never got its socket) refuses, and then there is nothing to wake.
            with contextlib.suppress(ValueError, OSError):
                response.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)
