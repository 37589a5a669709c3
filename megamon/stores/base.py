"""What the event log needs from a store, and the object backend stores are built on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.errors import StoreError

if TYPE_CHECKING:
    from megamon.stores.segments import SegmentLog


@dataclass(frozen=True)
class Snapshot:
    """One kind's records and the version they were read at (``None``: no file yet)."""

    records: Mapping[str, EventRecord]
    version: str | None
    digest: str | None = field(default=None, compare=False)
    """The SHA-256 of the file's bytes (``None``: no file), checked against its mark."""


class EventStore(Protocol):
    """Durable history with optimistic concurrency.

    ``write`` succeeds only if the stored version is still ``version``, and raises
    ``Conflict`` otherwise; archive entries are create-only and never replaced.
    """

    def describe(self) -> str:
        """Where the history lives, for messages (``gs://bucket/path``, a directory)."""
        ...

    @property
    def log(self) -> SegmentLog:
        """The append-only log of this history."""
        ...

    def read(self, kind: Kind) -> Snapshot: ...

    def write(self, kind: Kind, records: Mapping[str, EventRecord], version: str | None) -> str: ...

    def archive(self, entry: ArchiveEntry) -> str:
        """Store a retired record; returns the object name it was stored under."""
        ...

    def archived_keys(self, kind: Kind) -> list[str]: ...

    def read_archive(self, kind: Kind, key: str) -> list[ArchiveEntry]:
        """Every retirement of ``key``, oldest first."""
        ...


class Moved(StoreError):
    """The object changed between reading its generation and its content."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One object as a listing shows it: what a mirror of the objects needs to tell a copy
    that is still current from one to fetch again, without reading the object."""

    name: str
    generation: int
    size: int
    """Bytes."""


class ObjectBackend(Protocol):
    """A bucket-like namespace of objects with generations (GCS semantics).

    Generation 0 means "does not exist" in ``upload``'s precondition.
    """

    def describe(self, name: str) -> str: ...

    def generation(self, name: str) -> int | None: ...

    def download(self, name: str, generation: int) -> bytes:
        """The content at exactly ``generation``; ``Moved`` if it is not current any more."""
        ...

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        """Replace (or create, when ``if_generation`` is 0); ``Conflict`` if it moved."""
        ...

    def copy(self, name: str, new_name: str, generation: int) -> None:
        """Copy ``name`` at ``generation`` to a new object that must not exist yet."""
        ...

    def list(self, prefix: str, start: str = "") -> list[str]:
        """Names under ``prefix``, sorted; only those ``>= start`` when given."""
        ...

    def listing(self, prefix: str) -> Sequence[Listed]:
        """The objects under ``prefix`` with their generations and sizes, sorted by name: one
        listing instead of a ``generation`` call per object (the fleet report's cache)."""
        ...
