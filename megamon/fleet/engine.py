"""The fleet report on DuckDB: histories in, ``FleetReport`` out.

Each history is a local directory (a cluster's ``<bucket>/<path>``, or its cached copy): the
snapshot files, archive entries and snapshot marks are decoded by the codec, the log's
segments are read from their Parquet conversions (``megamon.fleet.columnar``, through
``megamon.fleet.canonical``), and the figures are computed by ``figures_sql`` a chunk of
histories at a time; the aggregates are sums in SQL. The rows are the one-history report's
own types with their cluster (``megamon.fleet.model``), so the ratios are recomputed from the
sums by its own code.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from megamon.codec import report as report_codec
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.summaries import ProvisioningState
from megamon.errors import ConfigError, MegamonError
from megamon.fleet.canonical import (
    CsvRelations,
    Relations,
    create_relations,
    define_relations,
)
from megamon.fleet.columnar import ColumnarCache
from megamon.fleet.figures_sql import aggregates_sql, figures_sql
from megamon.fleet.model import FLEET, FleetReport, SkippedSegment, Unreadable, group_key
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS
from megamon.recording.loading import read_mark
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import (
    ACCELERATOR_ATTR,
    TOPOLOGY_ATTR,
    Aggregate,
    BandState,
    Incidents,
    Resource,
    ResourceAvailability,
    TimeSplit,
    Window,
    name_attrs,
    resource_order,
    shape_order,
)
from megamon.summary.chips import CHIPS_ATTR, ChipTime

log = logging.getLogger(__name__)

LATEST_REPORT = Path("reports") / "latest.json"
MEMORY_LIMIT = "1500MB"
"""DuckDB spills to its temporary directory past this, so a fleet report stays under 2 GB."""

Step = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class History:
    """One cluster's history: its name in the report and the directory it is read from."""

    cluster: str
    root: Path


def connect(workdir: Path, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory database that spills to ``workdir``."""
    con = duckdb.connect(":memory:")
    con.execute(f"SET temp_directory = '{workdir / 'spill'}'")
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con


def history_labels(root: Path) -> dict[Kind, dict[str, dict[str, object]]]:
    """``reports/latest.json``'s attributes; empty (with a note) when missing or unreadable,
    as in ``megamon report``: labels only decorate the figures."""
    path = root / LATEST_REPORT
    try:
        return report_codec.parse_labels(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError) as err:
        log.warning("report %s unreadable (%s): live resources are unlabelled", path, err)
        return {}


def stage_history(rows: CsvRelations, history: History, kinds: Sequence[Kind]) -> None:
    """The snapshot files, archive entries and labels of one history, as canonical rows.

    The history is opened read-only (``megamon/stores/readonly.py``): a file that cannot be
    parsed raises (``EventFileError``) instead of being copied aside, and nothing is staged
    before the whole history was read, so a history that fails leaves no rows behind."""
    store = LocalEventStore(history.root, read_only=True)
    labels = history_labels(history.root)
    cluster = history.cluster
    staged: list[Callable[[], None]] = []
    for kind in kinds:
        mark = read_mark(store, kind)
        named = mark.attrs if mark is not None else {}
        for key, record in store.read(kind).records.items():
            staged.append(partial(rows.live, cluster, kind, key, record, named.get(key)))
        for key in store.archived_keys(kind):
            for entry in store.read_archive(kind, key):
                staged.append(
                    partial(
                        rows.archived,
                        cluster,
                        kind,
                        entry.key,
                        entry.record,
                        attrs=entry.attrs,
                        retired_at=entry.retired_at,
                    )
                )
        for key, attrs in labels.get(kind, {}).items():
            staged.append(partial(rows.label, cluster, kind, key, attrs))
        if mark is not None:
            staged.append(partial(rows.observed, cluster, kind, mark.observed))
    for stage in staged:
        stage()


def _stage_readable(
    rows: CsvRelations, histories: Sequence[History], kinds: Sequence[Kind], step: Step | None
) -> tuple[list[History], list[Unreadable]]:
    """Stage every history that can be read; the others named, each with why (one warning
    line each), so that one damaged cluster never hides the fleet."""
    readable, unreadable = [], []
    for history in histories:
        if step is not None:
            step(history.cluster)
        try:
            stage_history(rows, history, kinds)
        except (MegamonError, OSError) as err:
            reason = str(err) if isinstance(err, MegamonError) else f"{history.root}: {err}"
            log.warning("cluster %s left out of the report: %s", history.cluster, reason)
            unreadable.append(Unreadable(history.cluster, reason))
        else:
            readable.append(history)
    return readable, unreadable


def load(
    con: duckdb.DuckDBPyConnection,
    histories: Sequence[History],
    kinds: Sequence[Kind],
    workdir: Path,
    *,
    step: Step | None = None,
    columnar: ColumnarCache | None = None,
) -> tuple[Relations, list[Unreadable]]:
    """Every readable history's rows in the canonical relations, restricted to ``kinds``, and
    the histories that could not be read; the log's segments through ``columnar`` (converted
    once; without it, in ``workdir``)."""
    create_relations(con)
    rows = CsvRelations(workdir / "staged")
    readable, unreadable = _stage_readable(rows, histories, kinds, step)
    rows.load(con)
    wanted = [k.value for k in kinds]
    cache = columnar if columnar is not None else ColumnarCache(workdir / "columnar")
    relations = define_relations(con, [(h.cluster, h.root) for h in readable], wanted, cache)
    con.execute("DELETE FROM labels WHERE kind <> ALL (?)", [wanted])
    return relations, unreadable


def _parameters(window: Window) -> dict[str, Any]:
    return {"now": window.now, "since": window.since}


def figures(con: duckdb.DuckDBPyConnection, window: Window, relations: Relations) -> None:
    """The per-lifetime figures in the table ``figures``, one chunk of histories at a time
    (``Relations.chunks``)."""
    for n, chunk in enumerate(relations.chunks()):
        log_only = relations.use(con, chunk)
        observed = con.execute("SELECT count(*) FROM observed").fetchone()
        gaps = bool(observed and observed[0])
        sql = figures_sql(gaps=gaps, slack=UNOBSERVED_SLACK_NS, log_only=log_only)
        sql = sql.replace("$since", "CAST($since AS BIGINT)")
        into = "CREATE OR REPLACE TABLE figures AS " if n == 0 else "INSERT INTO figures "
        con.execute(into + sql, _parameters(window))


_RESOURCE_SQL = """
SELECT cluster, kind, key, name, accelerator, topology, chips, retired_at, span_start,
       span_end, end_state, up_time :: BIGINT, down_time :: BIGINT, failed_time :: BIGINT,
       expected_down_time :: BIGINT, provisioning_time :: BIGINT, unobserved_time :: BIGINT,
       interruptions, recoveries, recovered_down_time :: BIGINT, provisioning_state,
       provisioning_duration
FROM figures
"""
"""Sums of one lifetime's durations fit a BIGINT (they are within the window), and a BIGINT
reaches Python five times faster than a HUGEINT."""
_STATES = (
    ProvisioningState.SUCCESS,
    ProvisioningState.PROVISIONING,
    ProvisioningState.FAILED,
    ProvisioningState.NONE,
)


_KINDS = {kind.value: kind for kind in Kind}
_BAND_STATES = {state.value: state for state in BandState}
_PROVISIONING_STATES = {state.value: state for state in ProvisioningState}


def _attrs(kind: Kind, key: str, row: tuple[Any, ...]) -> dict[str, object]:
    """The attributes the report reads, back from the SQL's columns (``row``: name,
    accelerator, topology, chips): the name's parts (a Kubernetes namespace or name has no
    ``/``), the shape, the chips."""
    name, accelerator, topology, chips = row
    attrs: dict[str, object] = {}
    parts = name_attrs(kind)
    if name != key and parts and name.count("/") == len(parts) - 1:
        attrs.update(zip(parts, name.split("/"), strict=True))
    if accelerator:
        attrs[ACCELERATOR_ATTR] = accelerator
    if topology:
        attrs[TOPOLOGY_ATTR] = topology
    if chips is not None:
        attrs[CHIPS_ATTR] = chips
    return attrs


def _resource(row: tuple[Any, ...]) -> ResourceAvailability:
    kind = _KINDS.get(row[1]) or Kind(row[1])
    resource = Resource(
        kind=kind,
        key=row[2],
        record=EventRecord(),
        attrs=_attrs(kind, row[2], row[3:7]),
        retired_at=row[7],
        cluster=row[0],
    )
    return ResourceAvailability(
        resource=resource,
        start=row[8],
        end=row[9],
        state=_BAND_STATES[row[10]],
        bands=(),
        times=TimeSplit(*row[11:17]),
        incidents=Incidents(*row[17:20]),
        provisioning_state=_PROVISIONING_STATES[row[20]],
        provisioning_duration=row[21],
    )


def _aggregate(cluster: str, row: tuple[Any, ...]) -> tuple[Aggregate, ChipTime]:
    kind, accelerator, topology, count = row[0], row[1], row[2], row[3]
    states = {state: int(n) for state, n in zip(_STATES, row[13:17], strict=True) if n}
    aggregate = Aggregate(
        kind=Kind(kind),
        accelerator=accelerator,
        topology=topology,
        resources=int(count),
        times=TimeSplit(*(int(v) for v in row[4:10])),
        incidents=Incidents(*(int(v) for v in row[10:13])),
        provisioning_states=states,
        provisioned_duration=int(row[17]),
        cluster=cluster,
    )
    return aggregate, ChipTime(*(int(v) for v in row[18:22]))


def _resource_order(
    f: ResourceAvailability,
) -> tuple[str, tuple[tuple[int, str], str, str, int]]:
    r = f.resource
    return (r.cluster, resource_order(r.kind, r.name, r.key, r.retired_at))


def _shape_order(a: Aggregate) -> tuple[str, tuple[tuple[int, str], str, str]]:
    return (a.cluster, shape_order(a.kind, a.accelerator, a.topology))


def collect(con: duckdb.DuckDBPyConnection, window: Window, clusters: Sequence[str]) -> FleetReport:
    """The report from the ``figures`` table."""
    resources = sorted(
        (_resource(r) for r in con.execute(_RESOURCE_SQL).fetchall()), key=_resource_order
    )
    # The shared sums (``AGGREGATES_SQL``): per cluster, and over the fleet (its last column).
    rows = con.execute(aggregates_sql()).fetchall()
    per_cluster = [_aggregate(row[0], row[1:-1]) for row in rows if not row[-1]]
    fleet = [_aggregate(FLEET, row[1:-1]) for row in rows if row[-1]]
    chip_times = {group_key(a): chips for a, chips in (*per_cluster, *fleet)}
    if window.since is not None:
        start = window.since
    else:
        start = min((f.start for f in resources), default=window.now)
    return FleetReport(
        window=window,
        start=start,
        clusters=tuple(clusters),
        resources=tuple(resources),
        cluster_aggregates=tuple(sorted((a for a, _ in per_cluster), key=_shape_order)),
        fleet_aggregates=tuple(sorted((a for a, _ in fleet), key=_shape_order)),
        chip_times=chip_times,
    )


def fleet_report(
    histories: Sequence[History],
    kinds: Iterable[Kind],
    window: Window,
    *,
    workdir: Path | None = None,
    step: Step | None = None,
    threads: int | None = None,
    columnar_dir: Path | None = None,
) -> FleetReport:
    """The fleet report over ``histories`` (their clusters' names must differ).

    ``columnar_dir`` keeps the log's segments converted to Parquet between reports
    (``megamon.fleet.columnar``); without it they are converted for this report only."""
    names = [h.cluster for h in histories]
    if len(set(names)) != len(names):
        duplicated = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"two histories are named {', '.join(duplicated)}: rename one")
    with tempfile.TemporaryDirectory(prefix="megamon-fleet-", dir=workdir) as scratch:
        con = connect(Path(scratch), threads)
        try:
            columnar = ColumnarCache(columnar_dir or Path(scratch) / "columnar")
            relations, unreadable = load(
                con, histories, list(kinds), Path(scratch), step=step, columnar=columnar
            )
            figures(con, window, relations)
            left_out = {u.cluster for u in unreadable}
            report = collect(con, window, [n for n in names if n not in left_out])
        finally:
            con.close()
    return replace(
        report, unreadable=tuple(unreadable), skipped_segments=_skipped(histories, columnar)
    )


def _skipped(histories: Sequence[History], columnar: ColumnarCache) -> tuple[SkippedSegment, ...]:
    """The segments the conversion left out, by cluster, each named in one warning line."""
    cluster_of = {h.root: h.cluster for h in histories}
    skipped = []
    for s in columnar.skipped:
        cluster = cluster_of[s.root]
        log.warning("cluster %s: segment %s skipped: %s", cluster, s.segment, s.reason)
        skipped.append(SkippedSegment(cluster, s.segment, s.reason))
    return tuple(skipped)
