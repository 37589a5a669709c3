"""The watch cache: the latest projection of every object of one resource type.

It keeps only projections (``megamon.sources.kube.projections``), never whole objects, and hands out
read-only snapshots that are rebuilt only when something changed. A list is projected page by
page as it arrives, so the raw objects of a 65,000-node list are never all in memory at once.
An update whose projection is what the cache already holds (a node's heartbeat, a status
field megamon does not read) changes nothing: no new snapshot, no wake-up — at fleet scale
almost every watch event is one. Every real change wakes the ``on_change`` callback, so an
observer can react instead of polling. An object that cannot be projected — missing fields,
wrong types, not even a JSON object, or anything else its projection raises — is logged once
and handed to ``on_problem`` once (which counts it), so that no object can kill the watch
thread. It is unreadable, not gone: an object that could be read before keeps its last
projection (stale) until it is readable again or deleted, so a JobSet whose status turns
malformed for a while is neither retired nor, once fixed, seen as a new resource. One never
read is left out. ``alive`` says whether that thread still runs: one that died anyway must
fail liveness rather than leave its data frozen behind healthy probes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from megamon.domain.rejections import (
    REASON_INVALID,
    REASON_MALFORMED,
    REASON_UNEXPECTED,
    Rejection,
)
from megamon.errors import ObservationError
from megamon.sources.kube.slim import ItemDecoder
from megamon.sources.kube.watching import EVENT_DELETED, RawLister, WatchSettings, run_forever

log = logging.getLogger(__name__)

V = TypeVar("V")
Json = dict[str, Any]


def object_key(obj: Any) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones; ``""``
    for something that is not an object with metadata."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return ""
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def _rejection(kind: str, key: str, obj: Any, project: Callable[[Json], V]) -> Rejection | V:
    """The projection of ``obj``, or why it cannot be had. Whatever a projection raises is a
    problem of this one object, never of the watch: the thread must outlive any input."""
    if not isinstance(obj, dict):
        return Rejection(kind, key or "?", REASON_MALFORMED, f"not an object: {type(obj).__name__}")
    try:
        return project(obj)
    except ObservationError as err:
        return Rejection(kind, key or "?", REASON_INVALID, str(err))
    except Exception as err:  # the object's boundary: skip it, count it, keep watching
        return Rejection(kind, key or "?", REASON_UNEXPECTED, f"{type(err).__name__}: {err}")


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
        on_problem: Callable[[Rejection], None] | None = None,
        kind: str | None = None,
        clock: Callable[[], int] = time.time_ns,
        decode_item: ItemDecoder | None = None,
    ) -> None:
        self.name = name
        self._decode_item = decode_item
        """How a listed object is decoded: only the fields ``project`` reads (``slim.py``)."""
        self.kind = kind or name
        """The ``kind`` label of a skipped object (``jobset``, ``node``)."""
        self._lister = lister
        self._project = project
        self._settings = settings or WatchSettings()
        self._on_change = on_change or (lambda: None)
        self._on_problem = on_problem or (lambda _rejection: None)
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

    def _projected(self, obj: Any, previous: Mapping[str, V]) -> tuple[str, V | None]:
        """The key and projection of ``obj``; for one that cannot be projected, its last
        projection in ``previous`` (stale), or ``None`` when it never had one."""
        key = object_key(obj)
        view = _rejection(self.kind, key, obj, self._project)
        if isinstance(view, Rejection):
            stale = previous.get(key)
            if key not in self._reported:  # once per object, not once per update of it
                self._reported.add(key)
                kept = "; its last reading is kept" if stale is not None else ""
                log.warning("%s skipped (%s): %s%s", self.name, view.reason, view, kept)
                self._on_problem(view)
            return key, stale
        self._reported.discard(key)
        return key, view

    # Sink -------------------------------------------------------------------------------

    def replace(self, objects: Iterable[Any]) -> None:
        with self._lock:
            previous = self._items
        items: dict[str, V] = {}
        for obj in objects:
            key, view = self._projected(obj, previous)
            if view is not None:
                old = previous.get(key)
                items[key] = old if old is not None and old == view else view
        with self._lock:
            self._items = items
            self._version += 1
        self.touch()
        self.synced.set()
        self._on_change()

    def apply(self, event_type: str, obj: Any) -> None:
        if event_type == EVENT_DELETED:
            key, view = object_key(obj), None
            self._reported.discard(key)  # a bad object deleted: forget it, and report anew
        else:
            with self._lock:
                previous = self._items
            key, view = self._projected(obj, previous)
        with self._lock:
            if view is None:  # deleted, or never projectable
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
            kwargs={"decode_item": self._decode_item},
            name=f"watch-{self.name}",
            daemon=True,
        )
        self._thread.start()
        return self

    def alive(self) -> bool:
        """Whether the watch thread runs (or was never started); ``False`` once it died."""
        thread = self._thread
        return thread is None or thread.is_alive() or self._stop.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            # Wake the watch thread out of its blocking read. A stream that already ended
            # (or never got its socket, or went back to the pool: urllib3's RuntimeError)
            # refuses, and then there is nothing to wake.
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                response.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)
