"""A local copy of many clusters' histories in a bucket, refreshed by object generation.

``megamon report --bucket B --clusters 'megamon/clusters/*'`` reads every history whose
path matches the pattern. The objects a report reads (the event files, ``archive/``, the
log's segments and snapshot marks, ``reports/latest.json``) are mirrored under
``<cache>/<bucket>/<name>``, and the generation of each copy is kept in a manifest beside
them: an object is downloaded again only when its generation changed (a segment is
immutable, so never; a snapshot file when it was rewritten), and a copy whose object is gone
is removed. Downloads land in a temporary file renamed into place, and the manifest is
rewritten after each history, so an interrupted refresh leaves copies the next one can trust.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

import orjson

from megamon.domain.kinds import KIND_SPECS
from megamon.errors import ConfigError
from megamon.stores.segments import LOG_DIR, SNAPSHOTS_DIR

MANIFEST = ".megamon-cache.json"
_EVENT_FILES = frozenset(spec.event_file for spec in KIND_SPECS.values())
_WILDCARD = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    name: str
    generation: int
    size: int


class Objects(Protocol):
    """The bucket, as far as the cache needs it."""

    def describe(self, name: str) -> str: ...

    def list(self, prefix: str) -> Iterable[ObjectInfo]: ...

    def download(self, name: str, generation: int, path: Path) -> None:
        """Write the object at ``generation`` to ``path``."""
        ...


@dataclass
class MemoryObjects:
    """An in-memory bucket: ``{name: (generation, data)}``; counts downloads."""

    objects: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    downloads: list[str] = field(default_factory=list)

    def describe(self, name: str) -> str:
        return f"memory://{name}"

    def list(self, prefix: str) -> Iterable[ObjectInfo]:
        for name in sorted(self.objects):
            if name.startswith(prefix):
                generation, data = self.objects[name]
                yield ObjectInfo(name, generation, len(data))

    def download(self, name: str, generation: int, path: Path) -> None:
        current, data = self.objects[name]
        if current != generation:
            raise FileNotFoundError(f"{name} is no longer at generation {generation}")
        self.downloads.append(name)
        path.write_bytes(data)


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


class HistoryCache:
    """The local copies of one bucket's histories, under ``directory``."""

    def __init__(self, objects: Objects, directory: Path) -> None:
        self._objects = objects
        self._directory = directory
        self.downloaded = 0
        """Objects downloaded by this cache object (the tests' measure of "never twice")."""

    def _manifest_path(self) -> Path:
        return self._directory / MANIFEST

    def _manifest(self) -> dict[str, int]:
        try:
            data = orjson.loads(self._manifest_path().read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return {}
        return {k: v for k, v in data.items() if type(v) is int} if type(data) is dict else {}

    def _save(self, manifest: dict[str, int]) -> None:
        path = self._manifest_path()
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS))
        os.replace(temporary, path)

    def discover(self, pattern: str) -> tuple[list[str], list[ObjectInfo]]:
        """The history paths matching ``pattern`` and the objects of theirs the report reads."""
        listed = list(self._objects.list(literal_prefix(pattern)))
        roots = history_roots((o.name for o in listed), pattern)
        root_set = set(roots)
        depth = len(PurePosixPath(pattern.strip("/")).parts)
        keep = []
        for info in listed:
            parts = PurePosixPath(info.name).parts
            if "/".join(parts[:depth]) in root_set and wanted("/".join(parts[depth:])):
                keep.append(info)
        if not roots:
            where = self._objects.describe(literal_prefix(pattern))
            raise ConfigError(f"--clusters {pattern!r}: no history in {where}")
        return roots, keep

    def refresh(
        self, roots: Sequence[str], objects: Sequence[ObjectInfo], progress: Progress | None = None
    ) -> list[Path]:
        """Bring the copies of ``objects`` up to date; the local directory of each root."""
        self._directory.mkdir(parents=True, exist_ok=True)
        manifest = self._manifest()
        current = {o.name for o in objects}
        managed = tuple(r + "/" for r in roots)
        for name in [n for n in manifest if n.startswith(managed) and n not in current]:
            with contextlib.suppress(FileNotFoundError):
                (self._directory / name).unlink()
            del manifest[name]
        for count, info in enumerate(objects, 1):
            path = self._directory / info.name
            if manifest.get(info.name) != info.generation or not path.exists():
                self._fetch(info, path)
                manifest[info.name] = info.generation
                self.downloaded += 1
            if progress is not None:
                progress(info.size)
            if count % 1000 == 0:
                self._save(manifest)
        self._save(manifest)
        return [self._directory / root for root in roots]

    def _fetch(self, info: ObjectInfo, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.partial")
        self._objects.download(info.name, info.generation, temporary)
        os.replace(temporary, path)
