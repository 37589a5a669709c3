"""A local copy of many clusters' histories in a bucket, refreshed by object generation.

``megamon report --bucket B --clusters 'megamon/clusters/*'`` reads every history whose
path matches the pattern. The objects a report reads (the event files, ``archive/``, the
log's segments and snapshot marks, ``reports/latest.json``) are mirrored under
``<cache>/<bucket>/<name>``, and the generation of each copy is kept in a manifest beside
them: an object is downloaded again only when its generation changed (a segment is
immutable, so never; a snapshot file when it was rewritten), and a copy whose object is gone
is removed. Downloads land in a temporary file renamed into place, and the manifest is
rewritten after each history, so an interrupted refresh leaves copies the next one can trust.

Object names come from whoever can write a cluster's prefix, and they become paths: so a
name that is not a plain relative path (an empty, ``.`` or ``..`` part, a leading ``/``, a
NUL) is refused with a warning naming it, before anything is written, and every path the
cache writes or deletes is proven, resolved (symlinks followed), to be inside the cache
directory. A history one of whose objects cannot be copied is reported as such
(``Mirrored.error``), never read from a half-refreshed copy.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import orjson

from megamon.domain.kinds import KIND_SPECS
from megamon.errors import ConfigError, StoreError
from megamon.stores.base import Listed, Moved, ObjectBackend
from megamon.stores.segments import LOG_DIR, SNAPSHOTS_DIR

log = logging.getLogger(__name__)

MANIFEST = ".megamon-cache.json"
FETCH_ATTEMPTS = 3
"""Downloads of one object before its history is given up: an object rewritten between the
listing and the download is fetched at its new generation."""
_EVENT_FILES = frozenset(spec.event_file for spec in KIND_SPECS.values())
_WILDCARD = re.compile(r"[*?\[]")


class CacheEscape(StoreError):
    """A path the cache was about to write or delete resolves outside its directory; nothing
    was written or deleted."""


def refusal(name: str) -> str | None:
    """Why the object ``name`` cannot be mirrored as a path under the cache; ``None`` when it
    can (a relative path of plain parts). Pure: decided before anything is written."""
    if not name:
        return "an empty name"
    if name.startswith("/"):
        return "an absolute name"
    if "\x00" in name:
        return "a NUL character"
    parts = name.split("/")
    if "" in parts:
        return "an empty part"
    if ".." in parts or "." in parts:
        return "a '.' or '..' part"
    if parts[0] == MANIFEST:
        return "the cache manifest's name"
    return None


def folder_marker(listed: Listed) -> bool:
    """An empty object named ``…/``: what consoles create for a "folder"; nothing to copy."""
    return listed.name.endswith("/") and listed.size == 0 and refusal(listed.name[:-1]) is None


def wanted(relative: str) -> bool:
    """Whether a history's object is one the report reads (``relative`` to the history)."""
    parts = PurePosixPath(relative).parts
    if len(parts) == 1:
        return parts[0] in _EVENT_FILES
    if parts[0] == "archive":
        return relative.endswith(".json")
    if parts[0] == LOG_DIR:
        if len(parts) == 3 and parts[1] == SNAPSHOTS_DIR:
            return parts[2] in _EVENT_FILES  # snapshot marks: the spans megamon observed
        return parts[1].startswith("kind=") and relative.endswith(".ndjson")
    return relative == "reports/latest.json"


def check_pattern(pattern: str) -> str:
    """``--clusters`` without its outer slashes; refused when a part is empty, ``.`` or ``..``
    (the pattern names paths under the bucket, and their copies under the cache)."""
    stripped = pattern.strip("/")
    if not stripped or refusal(stripped) is not None:
        raise ConfigError(
            f"--clusters {pattern!r}: give path segments separated by '/', "
            "none of them empty, '.' or '..'"
        )
    return stripped


def history_roots(names: Iterable[str], pattern: str) -> list[str]:
    """The history paths (``pattern``'s depth, matching it) that the object names fall in."""
    depth = len(PurePosixPath(pattern.strip("/")).parts)
    roots: set[str] = set()
    for name in names:
        parts = PurePosixPath(name).parts
        if len(parts) <= depth:
            continue
        root = "/".join(parts[:depth])
        if fnmatch.fnmatchcase(root, pattern.strip("/")):
            roots.add(root)
    return sorted(roots)


def literal_prefix(pattern: str) -> str:
    """The part of ``pattern`` before its first wildcard, up to a ``/``."""
    pattern = pattern.strip("/")
    match = _WILDCARD.search(pattern)
    if match is None:
        return pattern + "/"
    head = pattern[: match.start()]
    return head[: head.rfind("/") + 1]


Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class Mirrored:
    """One history after a refresh: the directory of its copy, or why it could not be brought
    up to date (``error``; the copy is then not to be read)."""

    root: str
    directory: Path
    error: str | None = None


class HistoryCache:
    """The local copies of one bucket's histories, under ``directory``, from ``objects`` (a
    stores' object backend, opened read-only: the cache never writes to the bucket)."""

    def __init__(self, objects: ObjectBackend, directory: Path) -> None:
        self._objects = objects
        self._directory = directory
        self._top = directory.resolve()
        self.downloaded = 0
        """Objects downloaded by this cache object (the tests' measure of "never twice")."""

    def _manifest_path(self) -> Path:
        return self._directory / MANIFEST

    def _manifest(self) -> dict[str, int]:
        try:
            data = orjson.loads(self._manifest_path().read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return {}
        if type(data) is not dict:
            return {}
        manifest = {}
        for name, generation in data.items():
            reason = refusal(name)
            if reason is not None:  # written by an older megamon: never deleted, forgotten
                log.warning(
                    "cache manifest %s: %r refused (%s)", self._manifest_path(), name, reason
                )
            elif type(generation) is int:
                manifest[name] = generation
        return manifest

    def _save(self, manifest: dict[str, int]) -> None:
        path = self._inside(self._manifest_path())
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS))
        os.replace(temporary, path)

    def _inside(self, path: Path) -> Path:
        """``path`` resolved (symlinks followed), proven to be inside the cache directory;
        ``CacheEscape`` otherwise. Every path written or deleted goes through here."""
        resolved = path.resolve()
        if resolved == self._top or not resolved.is_relative_to(self._top):
            raise CacheEscape(
                f"{path} resolves to {resolved}, outside the cache {self._top}: "
                "not written or deleted"
            )
        return resolved

    def discover(self, pattern: str) -> tuple[list[str], list[Listed]]:
        """The history paths matching ``pattern`` and the objects of theirs the report reads;
        objects whose names are not plain relative paths are refused, each with a warning."""
        pattern = check_pattern(pattern)
        prefix = literal_prefix(pattern)
        listed = []
        for info in self._objects.listing(prefix):
            reason = refusal(info.name)
            if reason is None:
                listed.append(info)
            elif not folder_marker(info):
                where = self._objects.describe(info.name)
                log.warning("object %s refused (%s): not copied into the cache", where, reason)
        roots = history_roots((o.name for o in listed), pattern)
        root_set = set(roots)
        depth = len(PurePosixPath(pattern).parts)
        keep = []
        for info in listed:
            parts = PurePosixPath(info.name).parts
            if "/".join(parts[:depth]) in root_set and wanted("/".join(parts[depth:])):
                keep.append(info)
        if not roots:
            raise ConfigError(
                f"--clusters {pattern!r}: no history in {self._objects.describe(prefix)}"
            )
        return roots, keep

    def refresh(
        self, roots: Sequence[str], objects: Sequence[Listed], progress: Progress | None = None
    ) -> list[Mirrored]:
        """Bring the copies of ``objects`` up to date, one history at a time; a history whose
        objects cannot all be copied is given up (its ``error``), the others go on."""
        self._directory.mkdir(parents=True, exist_ok=True)
        self._top = self._directory.resolve()  # the directory as it is, symlinks followed
        manifest = self._manifest()
        by_root: dict[str, list[Listed]] = {root: [] for root in roots}
        depth = roots[0].count("/") + 1 if roots else 0  # every root is the pattern's depth
        for info in objects:
            by_root["/".join(info.name.split("/")[:depth])].append(info)
        mirrored = []
        for root in roots:
            try:
                self._refresh_root(root, by_root[root], manifest, progress)
            except StoreError as err:
                mirrored.append(Mirrored(root, self._directory / root, str(err)))
            except OSError as err:
                where = f"{err.filename}: " if err.filename else ""
                reason = f"copying into the cache: {where}{err.strerror or err}"
                mirrored.append(Mirrored(root, self._directory / root, reason))
            else:
                mirrored.append(Mirrored(root, self._directory / root))
            finally:
                self._save(manifest)
        return mirrored

    def _refresh_root(
        self,
        root: str,
        objects: Sequence[Listed],
        manifest: dict[str, int],
        progress: Progress | None,
    ) -> None:
        current = {o.name for o in objects}
        for name in [n for n in manifest if n.startswith(root + "/") and n not in current]:
            self._inside(self._directory / name).unlink(missing_ok=True)
            del manifest[name]
        for count, info in enumerate(objects, 1):
            path = self._directory / info.name
            if manifest.get(info.name) != info.generation or not path.exists():
                generation = self._fetch(info)
                if generation is None:  # deleted since the listing
                    self._inside(path).unlink(missing_ok=True)
                    manifest.pop(info.name, None)
                else:
                    manifest[info.name] = generation
                    self.downloaded += 1
            if progress is not None:
                progress(info.size)
            if count % 1000 == 0:
                self._save(manifest)

    def _fetch(self, info: Listed) -> int | None:
        """Copy the object at its listed generation, or at its current one when it was
        rewritten since; the generation copied (``None``: the object was deleted since)."""
        generation: int | None = info.generation
        for _ in range(FETCH_ATTEMPTS):
            if generation is None:
                return None
            try:
                data = self._objects.download(info.name, generation)
            except Moved:
                generation = self._objects.generation(info.name)
                continue
            self._write(info.name, data)
            return generation
        raise StoreError(f"{self._objects.describe(info.name)} kept changing while being copied")

    def _write(self, name: str, data: bytes) -> None:
        """The copy of ``name``, whole or not at all: a temporary file renamed into place."""
        path = self._inside(self._directory / name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".partial"
        )
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
