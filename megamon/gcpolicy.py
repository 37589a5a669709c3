"""How megamon uses Python's cyclic garbage collector: one policy for the whole process.

At 65,000 nodes the watch caches hold ~500,000 long-lived, acyclic objects. With the
collector's defaults a full collection scans all of them (0.28 s) almost every cycle, and a
list of 500 objects parsed while the collector runs triggers several middle collections
(docs/performance.md). So the service:

- collects the oldest generation only after 100 middle collections instead of 10;
- pauses automatic collection while a page of a list is parsed and taken in (the pause nests
  across the watch threads);
- once the caches have synced, collects once and freezes what survived, so later
  collections never scan it again.

The collector is process-wide, so ``megamon run`` builds exactly one ``GcPolicy`` (in
``megamon/app.py``) and hands its ``collector_paused`` to the watch caches. Commands and tests
that build no policy leave the collector as Python configures it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

GC_THRESHOLDS = (700, 10, 100)
"""``gc.set_threshold`` for a service whose heap is mostly long-lived caches."""
SYNC_WAIT_SECONDS = 60.0


class GcPolicy:
    """The collector settings of one process and the nesting count of its pauses."""

    def __init__(self, thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> None:
        self._thresholds = thresholds
        self._lock = threading.Lock()
        self._pauses = 0
        self._was_enabled = False

    def apply(self) -> None:
        """Set the thresholds (once, at start)."""
        gc.set_threshold(*self._thresholds)

    @contextmanager
    def collector_paused(self) -> Iterator[None]:
        """No automatic collection meanwhile, in any thread; pauses nest across threads and
        the collector comes back as it was when the last one ends."""
        with self._lock:
            if self._pauses == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._pauses += 1
        try:
            yield
        finally:
            with self._lock:
                self._pauses -= 1
                if self._pauses == 0 and self._was_enabled:
                    gc.enable()

    def freeze_when_synced(self, wait_synced: Callable[[float], bool]) -> threading.Thread:
        """In the background: once ``wait_synced`` returns true, collect and freeze."""

        def freeze() -> None:
            while not wait_synced(SYNC_WAIT_SECONDS):
                continue
            gc.collect()
            gc.freeze()

        thread = threading.Thread(target=freeze, name="gc-freeze", daemon=True)
        thread.start()
        return thread
