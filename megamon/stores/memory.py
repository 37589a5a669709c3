"""``MemoryEventStore``: the event store in process memory, for simulation mode and tests.

A dictionary of objects with GCS-like generations, so it keeps the same contract (compare-and-
swap, create-only archive, quarantine) as the durable stores.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from megamon.errors import Conflict
from megamon.stores.base import Listed, Moved
from megamon.stores.objects import ObjectEventStore
from megamon.telemetry import Instruments


class MemoryObjects:
    """Objects in a dict; generations count up from 1 across the whole namespace."""

    def __init__(self) -> None:
        self._objects: dict[str, tuple[int, bytes]] = {}
        self._next_generation = 1
        self._lock = threading.Lock()

    def describe(self, name: str) -> str:
        return f"memory:/{name}"

    def generation(self, name: str) -> int | None:
        with self._lock:
            found = self._objects.get(name)
        return found[0] if found else None

    def download(self, name: str, generation: int) -> bytes:
        with self._lock:
            found = self._objects.get(name)
        if found is None or found[0] != generation:
            raise Moved(f"{self.describe(name)} is no longer at generation {generation}")
        return found[1]

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        with self._lock:
            found = self._objects.get(name)
            current = found[0] if found else 0
            if current != if_generation:
                raise Conflict(
                    f"{self.describe(name)} is at generation {current}, not {if_generation}"
                )
            generation = self._next_generation
            self._next_generation += 1
            self._objects[name] = (generation, bytes(data))
            return generation

    def copy(self, name: str, new_name: str, generation: int) -> None:
        self.upload(new_name, self.download(name, generation), 0)

    def list(self, prefix: str, start: str = "") -> list[str]:
        with self._lock:
            return sorted(n for n in self._objects if n.startswith(prefix) and n >= start)

    def listing(self, prefix: str) -> Sequence[Listed]:
        with self._lock:
            found = [(n, g, len(d)) for n, (g, d) in self._objects.items() if n.startswith(prefix)]
        return [Listed(*entry) for entry in sorted(found)]

    def delete(self, name: str) -> None:
        """Remove an object (tests use it to lose a file underneath megamon)."""
        with self._lock:
            self._objects.pop(name, None)

    def put_raw(self, name: str, data: bytes) -> int:
        """Replace an object unconditionally (tests use it to plant a corrupt file)."""
        with self._lock:
            generation = self._next_generation
            self._next_generation += 1
            self._objects[name] = (generation, data)
            return generation


class MemoryEventStore(ObjectEventStore):
    """An event store that forgets everything when the process ends."""

    def __init__(
        self,
        path: str = "",
        *,
        instruments: Instruments | None = None,
        objects: MemoryObjects | None = None,
    ) -> None:
        """``objects``: share a namespace with another store (two processes, one bucket)."""
        self.objects = objects or MemoryObjects()
        super().__init__(self.objects, path, instruments=instruments)
