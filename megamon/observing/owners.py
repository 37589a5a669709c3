"""The slice→owner map the slice observer reads and updates, behind an injected store.

A slice that vanishes while its owner still runs is down until the owner ends; to know that
after a restart, the map of which workload owned each slice must outlive the process. The
observer itself stays pure (``observe_slices`` takes the map and returns the next one); this
object holds the map between cycles, loads it from its store once and saves it only when it
changed. ``megamon run`` keeps it in a ConfigMap (``sources/kube/ownermap.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from megamon.domain.owners import SliceOwner
from megamon.errors import MegamonError

log = logging.getLogger(__name__)


class OwnerMapStore(Protocol):
    """Where the map lives between processes."""

    def load(self) -> dict[str, SliceOwner]: ...

    def save(self, owners: Mapping[str, SliceOwner]) -> None: ...

    def describe(self) -> str: ...


class MemoryOwnerMapStore:
    """A map that lives as long as the process: tests, and the single-process tools."""

    def __init__(self, owners: Mapping[str, SliceOwner] | None = None) -> None:
        self.owners = dict(owners or {})
        self.saves = 0

    def load(self) -> dict[str, SliceOwner]:
        return dict(self.owners)

    def save(self, owners: Mapping[str, SliceOwner]) -> None:
        self.owners = dict(owners)
        self.saves += 1

    def describe(self) -> str:
        return "memory"


class SliceOwners:
    """The map between cycles: loaded on first use, saved when it changes.

    A store that cannot be read leaves the map empty (logged); one that cannot be written
    keeps the new map in memory and is written again at the next change or the next cycle.
    """

    def __init__(self, store: OwnerMapStore) -> None:
        self._store = store
        self._owners: dict[str, SliceOwner] | None = None
        self._saved: dict[str, SliceOwner] | None = None

    def current(self) -> dict[str, SliceOwner]:
        if self._owners is None:
            try:
                self._owners = self._store.load()
                self._saved = dict(self._owners)
            except MegamonError as err:
                log.error("cannot load the slice owner map (starting empty): %s", err)
                self._owners = {}
        return dict(self._owners)

    def update(self, owners: Mapping[str, SliceOwner]) -> None:
        self._owners = dict(owners)
        if self._saved == self._owners:
            return
        try:
            self._store.save(self._owners)
        except MegamonError as err:
            log.error("cannot save the slice owner map (kept, retried): %s", err)
            return
        self._saved = dict(self._owners)
