"""The bounded change history behind watches and consistent paginated lists.

Every write gets the next global resourceVersion and one event here, so the history holds the
contiguous versions `floor+1 .. last`. A watch from version R replays the events after R; a
paginated list at version R reconstructs that state by undoing later events. Versions at or
above `floor` can be served; older ones are "too old" (410), exactly like an API server whose
watch cache or etcd history has moved on. The bound keeps memory flat at fleet scale, and
`compact()` lets tests force the 410 path.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson

Obj = dict[str, Any]
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass(slots=True)
class Event:
    """One committed change. `obj` is the new state (the last state, for DELETED)."""

    rv: int
    type: str
    resource: str
    key: str
    namespace: str | None
    obj: Obj
    prev: Obj | None
    _line: bytes | None = field(default=None, repr=False)

    def line(self) -> bytes:
        """The watch-stream line for this event, serialized once for all watchers."""
        if self._line is None:
            self._line = watch_line(self.type, self.obj)
        return self._line


def watch_line(event_type: str, obj: Obj) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


class History:
    """Events with contiguous resourceVersions; not thread-safe (the store locks around it)."""

    def __init__(self, capacity: int, last_rv: int = 0) -> None:
        if capacity < 1:
            raise ValueError("history capacity must be at least 1")
        self._events: deque[Event] = deque(maxlen=capacity)
        self._last = last_rv
        self._floor = last_rv

    @property
    def floor(self) -> int:
        """The oldest resourceVersion that can still be watched or listed from."""
        return self._floor

    @property
    def last(self) -> int:
        return self._last

    def append(self, event: Event) -> None:
        if event.rv != self._last + 1:
            raise ValueError(f"history gap: {event.rv} after {self._last}")
        if len(self._events) == self._events.maxlen:
            self._floor = self._events[0].rv
        self._events.append(event)
        self._last = event.rv

    def since(self, rv: int) -> list[Event] | None:
        """The events after `rv` in order, or None when `rv` is older than the floor."""
        if rv < self._floor:
            return None
        events = self._events
        return [events[i] for i in range(rv - self._floor, len(events))]

    def compact(self, new_last: int) -> None:
        """Forget every event and move the floor to `new_last` (which may skip versions)."""
        self._events.clear()
        self._last = new_last
        self._floor = new_last
