"""``LocalEventStore``: the event store in a local directory, the embedded default.

The directory stands for ``<bucket>/<EventsBucketPath>``: it holds the event files
themselves (``node-pools.json``, …), ``archive/`` and ``reports/``. Each object's generation
is kept beside it (``.<name>.generation``), with the file's fingerprint as written (size,
mtime, ctime, inode): a file changed by anything else — edited by hand, copied over — no
longer matches it and gets a generation of its own, so a compare-and-swap against the one
megamon wrote conflicts instead of overwriting the change. Writes go to a temporary file that
is fsynced and renamed into place, so a crash leaves the old file or the new one, never half
of one; a file lock makes compare-and-swap safe between processes on one host.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from filelock import FileLock

from megamon.errors import Conflict, StoreError
from megamon.stores.base import Listed, Moved, ObjectBackend
from megamon.stores.objects import ObjectEventStore
from megamon.stores.readonly import ReadOnlyObjects
from megamon.telemetry import Instruments

LOCK_FILE = ".megamon.lock"


class LocalObjects:
    """Objects as files under ``root``; object names are relative paths."""

    def __init__(self, root: Path, *, locking: bool = True) -> None:
        """``locking`` False: read without the directory's lock (and so without creating the
        directory or its lock file), checking the generation again after reading — how a
        read-only command reads a history another process may be writing."""
        self._root = root
        self._lock = FileLock(str(root / LOCK_FILE))
        self._locking = locking

    def describe(self, name: str) -> str:
        return str(self._root / name) if name else str(self._root)

    def _paths(self, name: str) -> tuple[Path, Path]:
        path = self._root / name
        return path, path.with_name(f".{path.name}.generation")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the directory's lock; the directory is created on first use."""
        try:
            self._root.mkdir(parents=True, exist_ok=True)
            with self._lock:
                yield
        except OSError as err:
            raise StoreError(f"{self._root}: {err.strerror or err}") from err

    def _generation(self, name: str) -> int | None:
        path, gen_path = self._paths(name)
        try:
            found = _fingerprint(path)
        except FileNotFoundError:
            return None
        try:
            counter, *recorded = gen_path.read_text().split()
            written = int(counter)
        except (OSError, ValueError):
            return _changed(0, found)  # placed by hand, or by a copy of a bucket
        if recorded and recorded != found:
            return _changed(written, found)
        return written  # as written (a generation file from before fingerprints: trusted)

    def generation(self, name: str) -> int | None:
        if not self._root.is_dir():
            return None  # nothing written yet; reading must not create the directory
        if not self._locking:
            return self._generation(name)
        with self._locked():
            return self._generation(name)

    def download(self, name: str, generation: int) -> bytes:
        if not self._locking:
            data = self._read(name, generation)
            if self._generation(name) != generation:  # written meanwhile: read it again
                raise Moved(f"{self.describe(name)} is no longer at generation {generation}")
            return data
        with self._locked():
            return self._read(name, generation)

    def _read(self, name: str, generation: int) -> bytes:
        if self._generation(name) != generation:
            raise Moved(f"{self.describe(name)} is no longer at generation {generation}")
        try:
            return self._paths(name)[0].read_bytes()
        except FileNotFoundError as err:
            raise Moved(f"{self.describe(name)} is gone") from err

    def upload(self, name: str, data: bytes, if_generation: int) -> int:
        path, gen_path = self._paths(name)
        with self._locked():
            current = self._generation(name) or 0
            if current != if_generation:
                raise Conflict(
                    f"{self.describe(name)} is at generation {current}, not {if_generation}"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, data)
            recorded = " ".join((str(current + 1), *_fingerprint(path)))
            _atomic_write(gen_path, recorded.encode())
            return current + 1

    def copy(self, name: str, new_name: str, generation: int) -> None:
        self.upload(new_name, self.download(name, generation), 0)

    def list(self, prefix: str, start: str = "") -> list[str]:
        directory = (self._root / prefix).parent if not prefix.endswith("/") else None
        base = self._root / prefix if directory is None else directory
        if not base.is_dir():
            return []
        names = []
        for path in base.rglob("*"):
            name = path.relative_to(self._root).as_posix()
            if (
                path.is_file()
                and not path.name.startswith(".")
                and name.startswith(prefix)
                and name >= start
            ):
                names.append(name)
        return sorted(names)

    def listing(self, prefix: str) -> Sequence[Listed]:
        """``list``, with each file's generation and size; under the directory's lock unless
        reading without it (then a file gone meanwhile is left out)."""
        if not self._locking or not self._root.is_dir():
            return self._listing(prefix)
        with self._locked():
            return self._listing(prefix)

    def _listing(self, prefix: str) -> Sequence[Listed]:
        found = []
        for name in self.list(prefix):
            try:
                size = self._paths(name)[0].stat().st_size
            except FileNotFoundError:
                continue
            generation = self._generation(name)
            if generation is not None:
                found.append(Listed(name, generation, size))
        return found


def _fingerprint(path: Path) -> list[str]:
    """What changes whenever a file's content is replaced or written in place: size, mtime,
    ctime (which no tool can set back) and inode."""
    stat = path.stat()
    return [str(stat.st_size), str(stat.st_mtime_ns), str(stat.st_ctime_ns), str(stat.st_ino)]


def _changed(written: int, found: list[str]) -> int:
    """The generation of a file changed outside megamon since generation ``written``: above
    it, so that generations only grow, and different for each change."""
    return written + 1 + zlib.crc32(" ".join(found).encode())


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new content only."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class LocalEventStore(ObjectEventStore):
    """The event store in ``directory`` (``EventsLocalDir``, default ``./megamon-data``)."""

    def __init__(
        self,
        directory: str | Path,
        *,
        instruments: Instruments | None = None,
        read_only: bool = False,
    ) -> None:
        """``read_only``: the read-only commands' view (``megamon/stores/readonly.py``)."""
        objects = LocalObjects(Path(directory), locking=not read_only)
        backend: ObjectBackend = ReadOnlyObjects(objects) if read_only else objects
        super().__init__(backend, "", instruments=instruments, read_only=read_only)
