"""A history opened to be read only: what ``megamon events show``, ``report`` and the other
read-only commands see.

Such a command must never change the history it reads — not by quarantining a corrupt file
(the service does that, once, with its counter and log line), not by creating a directory or
a lock file. ``ReadOnlyObjects`` wraps the real backend and refuses every write, so a code
path that would write surfaces as an error instead of a silent change.
"""

from __future__ import annotations

from collections.abc import Sequence

from megamon.errors import StoreError
from megamon.stores.base import Listed, ObjectBackend


class ReadOnlyError(StoreError):
    """A read-only command reached a write; nothing was written."""


class ReadOnlyObjects:
    """Reads go to ``inner``; uploads and copies are refused."""

    read_only = True

    def __init__(self, inner: ObjectBackend) -> None:
        self._inner = inner

    def describe(self, name: str) -> str:
        return self._inner.describe(name)

    def generation(self, name: str) -> int | None:
        return self._inner.generation(name)

    def download(self, name: str, generation: int) -> bytes:
        return self._inner.download(name, generation)

    def list(self, prefix: str, start: str = "") -> list[str]:
        return self._inner.list(prefix, start)

    def listing(self, prefix: str) -> Sequence[Listed]:
        return self._inner.listing(prefix)

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        raise ReadOnlyError(f"{self.describe(name)}: not written (this command only reads)")

    def copy(self, name: str, new_name: str, generation: int) -> None:
        raise ReadOnlyError(f"{self.describe(new_name)}: not written (this command only reads)")
