"""What ``megamon report`` does for many histories: find them (local directories, or the
paths of a bucket matching ``--clusters``, fetched into the cache), then compute the fleet
report. Progress goes to stderr, and only when stderr is a terminal."""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from megamon.domain.kinds import Kind
from megamon.errors import ConfigError
from megamon.fleet.cache import HistoryCache, Objects
from megamon.fleet.engine import History, fleet_report
from megamon.fleet.model import FleetReport
from megamon.summary.availability import Window


@dataclass(frozen=True, slots=True)
class FleetRequest:
    """The fleet options of ``megamon report``."""

    events_dirs: Sequence[str]
    clusters: str | None
    bucket: str | None
    cache_dir: str | None


COLUMNAR_DIR = ".columnar"
"""Under the cache directory (no bucket name starts with a dot): the segments converted to
Parquet (``megamon.fleet.columnar``)."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "megamon" / "fleet"


def is_fleet(request: FleetRequest) -> bool:
    """Whether the options ask for the fleet report rather than one history's."""
    return request.clusters is not None or len(request.events_dirs) > 1


def _show_progress() -> bool:
    return sys.stderr.isatty()


def local_histories(request: FleetRequest) -> list[History]:
    """``--events-dir`` given several times (each its own cluster, named by its directory), or
    once with ``--clusters``: the subdirectories of it that match the pattern."""
    if request.clusters is None:
        dirs = [Path(d) for d in request.events_dirs]
    else:
        (base,) = (Path(d) for d in request.events_dirs)
        if not base.is_dir():
            raise ConfigError(f"--events-dir {base}: no such directory")
        dirs = sorted(
            p
            for p in base.glob("*/" * len(Path(request.clusters.strip("/")).parts))
            if p.is_dir() and fnmatch.fnmatchcase(str(p.relative_to(base)), request.clusters)
        )
        if not dirs:
            raise ConfigError(f"--clusters {request.clusters!r}: no directory in {base} matches")
    for d in dirs:
        if not d.is_dir():
            raise ConfigError(f"--events-dir {d}: no such directory")
    return [History(d.name, d) for d in dirs]


def bucket_histories(request: FleetRequest, objects: Objects, cache_dir: Path) -> list[History]:
    """The histories of the bucket matching ``--clusters``, refreshed in the cache."""
    assert request.bucket is not None and request.clusters is not None
    cache = HistoryCache(objects, cache_dir / request.bucket)
    roots, infos = cache.discover(request.clusters)
    with tqdm(
        total=sum(i.size for i in infos),
        unit="B",
        unit_scale=True,
        desc=f"fetching {len(roots)} histories",
        file=sys.stderr,
        disable=not _show_progress(),
        leave=False,
    ) as bar:
        local = cache.refresh(roots, infos, bar.update)
    return [History(Path(root).name, path) for root, path in zip(roots, local, strict=True)]


def run_fleet(
    request: FleetRequest,
    kinds: Sequence[Kind],
    window: Window,
    objects: Callable[[str], Objects],
) -> FleetReport:
    """The fleet report the options ask for; ``objects(bucket)`` opens a bucket."""
    if request.bucket is not None and request.events_dirs:
        raise ConfigError("give --events-dir or --bucket, not both")
    columnar: Path | None = None
    if request.bucket is not None:
        if request.clusters is None:
            raise ConfigError("--bucket with a fleet report needs --clusters")
        cache_dir = Path(request.cache_dir) if request.cache_dir else default_cache_dir()
        histories = bucket_histories(request, objects(request.bucket), cache_dir)
        columnar = cache_dir / COLUMNAR_DIR
    else:
        if not request.events_dirs:
            raise ConfigError("--clusters needs --bucket or --events-dir")
        histories = local_histories(request)
        if request.cache_dir:  # local histories are converted for each report otherwise
            columnar = Path(request.cache_dir) / COLUMNAR_DIR
    with tqdm(
        total=len(histories),
        desc="reading histories",
        unit="cluster",
        file=sys.stderr,
        disable=not _show_progress(),
        leave=False,
    ) as bar:
        return fleet_report(
            histories, kinds, window, step=lambda _: bar.update(), columnar_dir=columnar
        )
