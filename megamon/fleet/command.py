"""What ``megamon report`` does for many histories: find them (local directories, or the
paths of a bucket matching ``--clusters``, fetched into the cache), then compute the fleet
report. Progress goes to stderr, and only when stderr is a terminal.

Every history is read, never written: the bucket through a read-only object backend, the
local copies and directories through read-only stores. A cluster whose history cannot be
fetched or read is left out, named in one warning line and in the report
(``FleetReport.unreadable``); the command then exits 1 (``EXIT_INCOMPLETE``)."""

from __future__ import annotations

import fnmatch
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from megamon.domain.kinds import Kind
from megamon.errors import ConfigError, MegamonError
from megamon.fleet.cache import HistoryCache, check_pattern, refusal
from megamon.fleet.engine import History, fleet_report, history_labels
from megamon.fleet.model import FleetReport, Unreadable
from megamon.fleet.resources import read_resources
from megamon.stores.base import ObjectBackend
from megamon.stores.local import LocalEventStore
from megamon.stores.readonly import ReadOnlyObjects
from megamon.summary.availability import AvailabilityReport, Resource, Window, availability_report

log = logging.getLogger(__name__)

EXIT_INCOMPLETE = 1
"""The exit status of a fleet report that left a cluster out (it could not be read); the
report of the other clusters is written all the same."""


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


def _check_bucket(bucket: str) -> None:
    """The bucket's name is a directory under the cache: one plain path part."""
    if "/" in bucket or refusal(bucket) is not None:
        raise ConfigError(f"--bucket {bucket!r}: not a bucket name")


def _check_names(names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        duplicated = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"two histories are named {', '.join(duplicated)}: rename one")


def bucket_histories(
    request: FleetRequest, objects: ObjectBackend, cache_dir: Path
) -> tuple[list[History], list[Unreadable]]:
    """The histories of the bucket matching ``--clusters``, refreshed in the cache, and the
    clusters whose objects could not all be copied (their stale copies are not read)."""
    assert request.bucket is not None and request.clusters is not None
    cache = HistoryCache(ReadOnlyObjects(objects), cache_dir / request.bucket)
    roots, infos = cache.discover(request.clusters)
    _check_names([PurePosixPath(root).name for root in roots])
    with tqdm(
        total=sum(i.size for i in infos),
        unit="B",
        unit_scale=True,
        desc=f"fetching {len(roots)} histories",
        file=sys.stderr,
        disable=not _show_progress(),
        leave=False,
    ) as bar:
        mirrored = cache.refresh(roots, infos, bar.update)
    histories, unreadable = [], []
    for copy in mirrored:
        cluster = PurePosixPath(copy.root).name
        if copy.error is None:
            histories.append(History(cluster, copy.directory))
        else:
            log.warning("cluster %s left out of the report: %s", cluster, copy.error)
            unreadable.append(Unreadable(cluster, copy.error))
    return histories, unreadable


def detail(
    histories: Sequence[History], kinds: Sequence[Kind], window: Window, left_out: set[str]
) -> tuple[AvailabilityReport, list[Unreadable]]:
    """The summary's report of every history's resources, each naming its cluster, read as
    ``megamon report`` reads one history (``megamon.fleet.resources``); the clusters in
    ``left_out`` (the SQL could not read them) are not read again. A history this reading
    fails on is named like one the SQL could not read."""
    resources: list[Resource] = []
    unreadable = []
    for history in histories:
        if history.cluster in left_out:
            continue
        store = LocalEventStore(history.root, read_only=True)
        labels = history_labels(history.root)
        try:
            resources += read_resources(store, kinds, labels, window.now, cluster=history.cluster)
        except (MegamonError, OSError) as err:
            reason = str(err) if isinstance(err, MegamonError) else f"{history.root}: {err}"
            log.warning("cluster %s left out of the page's timelines: %s", history.cluster, reason)
            unreadable.append(Unreadable(history.cluster, reason))
    return availability_report(resources, window), unreadable


def run_fleet(
    request: FleetRequest,
    kinds: Sequence[Kind],
    window: Window,
    objects: Callable[[str], ObjectBackend],
    *,
    detailed: bool = False,
) -> FleetReport:
    """The fleet report the options ask for; ``objects(bucket)`` opens a bucket (it is read
    through ``ReadOnlyObjects`` whatever it allows). ``detailed``: with ``FleetReport.detail``
    (the HTML page's timelines, reasons and what is down now)."""
    if request.bucket is not None and request.events_dirs:
        raise ConfigError("give --events-dir or --bucket, not both")
    columnar: Path | None = None
    not_fetched: list[Unreadable] = []
    if request.bucket is not None:
        if request.clusters is None:
            raise ConfigError("--bucket with a fleet report needs --clusters")
        _check_bucket(request.bucket)
        check_pattern(request.clusters)  # before the bucket is opened
        cache_dir = Path(request.cache_dir) if request.cache_dir else default_cache_dir()
        histories, not_fetched = bucket_histories(request, objects(request.bucket), cache_dir)
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
        report = fleet_report(
            histories, kinds, window, step=lambda _: bar.update(), columnar_dir=columnar
        )
    not_detailed: list[Unreadable] = []
    if detailed:
        left_out = {u.cluster for u in report.unreadable}
        summary, not_detailed = detail(histories, kinds, window, left_out)
        report = replace(report, detail=summary)
    if not not_fetched and not not_detailed:
        return report
    unreadable = sorted([*not_fetched, *report.unreadable, *not_detailed], key=lambda u: u.cluster)
    return replace(report, unreadable=tuple(unreadable))
