"""One history, one figure per resource on every surface megamon offers.

``check_history(root, now, …)`` takes a history directory as megamon wrote it (a local store;
a bucket or an in-memory store is first copied with ``dump``) and reads it three ways:

- ``as-written``: the directory as it is;
- ``snapshots``: only the Go-format event files, ``archive/`` and the snapshot marks
  (``log/snapshots/``, which keep the attributes and the observed spans of a snapshot's keys;
  docs/history.md): what a reader has once the segments have expired;
- ``log``: only the segments (``log/kind=…``): what an engine reading the log alone has (the
  BigQuery external table).

A variant that has nothing (a Go-written history has no log) is left out. Each variant is
read by every surface that can read it, and every resource's figures must equal those of
``megamon report --format json`` on the history as written, which defines them
(``megamon.summary.availability``):

- ``megamon report --format json`` (the CLI, in-process);
- the fleet report (``megamon report --events-dir DIR --clusters '*' --format json``, DuckDB),
  one run over the variants, each its own cluster (so one DuckDB run, not three);
- the BigQuery table function ``figures`` (``deploy/bigquery/views``) transpiled by sqlglot
  and run on DuckDB over the segments, as ``test/fleet/test_bigquery.py`` runs it (variants
  with a log only: the views read nothing else).

Compared per resource (kind, key, retirement): the end state, span, up / down / failed /
expected-down / provisioning / unobserved time, interruptions, recoveries, MTTR, provisioning
state and duration, accelerator and topology, all exactly (integer nanoseconds). The fleet
report reads the built-in kinds only; the views read every kind the log holds, described
kinds too (``megamon report`` reads those given ``config``, the configuration that
describes them).

**The gauges of the last scrape** (``metrics``: the ``/metrics`` text, ``cycle_ns``: the
aggregation interval) follow the Go megamon's rule (docs/rules.md, docs/metrics.md), which is
not the report's window rule: a gap in observation counts as the last state, and
``down_time_seconds`` holds expected-down and provisioning time as well. So only what has one
definition on both sides is compared, for each live resource of a built-in kind, against
``megamon report`` on the history as written at ``now``:

- the set of live resources: a series per live record, and nothing else;
- ``interruption_count`` and ``recovery_count``: the same transitions by the same rules, and
  the report's window is all history: exactly;
- ``provisioning_duration_seconds{provisioning_state}``: ``summarize()``'s on both sides;
  the state exactly, the duration within one cycle (the scrape's report was made at most one
  cycle before ``now``), and ``down_time_initial_seconds`` is it when the state is ``success``;
- ``up``: 1 exactly when the report ends the resource ``up`` (unless its last band is
  ``unobserved``, which the gauges do not know);
- ``up_time_seconds`` and ``down_time_seconds``: their sum is the resource's span, each is at
  least the report's up time and down + expected-down + provisioning time, and when megamon
  observed the whole span (no unobserved time) they are those, all within one cycle.

``down_time_between_recovery*`` and ``up_time_between_interruption*`` are not compared: the
Go rule puts expected-down periods in them, the report never does.

A mismatch fails with every difference, one line per resource and figure, naming the variant
and the surface.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from megamon.cli.main import main as megamon_cli
from megamon.domain import timestamps
from megamon.domain.kinds import Kind, kind_spec
from megamon.fleet.engine import History
from megamon.publishing.metrics import names
from megamon.stores.base import ObjectBackend
from megamon.stores.local import LocalEventStore
from megamon.stores.objects import ObjectEventStore
from test.fleet.test_bigquery import bigquery_like, table_function, to_duckdb

PASSED = pytest.StashKey[bool]()
"""Whether a test's own call passed (``test/conftest.py``): the histories of a failed test
are not checked, its own failure says more."""

FIGURES = (
    "accelerator",
    "topology",
    "state",
    "start",
    "end",
    "upTime",
    "downTime",
    "failedTime",
    "expectedDownTime",
    "provisioningTime",
    "unobservedTime",
    "interruptionCount",
    "recoveryCount",
    "meanTimeToRecover",
    "provisioningState",
    "provisioningDuration",
)
"""The JSON keys of one resource's figures that every report surface gives."""

_BQ_COLUMNS = {
    "accelerator": "accelerator",
    "topology": "topology",
    "state": "end_state",
    "start": "span_start",
    "end": "span_end",
    "upTime": "up_time",
    "downTime": "down_time",
    "failedTime": "failed_time",
    "expectedDownTime": "expected_down_time",
    "provisioningTime": "provisioning_time",
    "unobservedTime": "unobserved_time",
    "interruptionCount": "interruptions",
    "recoveryCount": "recoveries",
    "provisioningState": "provisioning_state",
    "provisioningDuration": "provisioning_duration",
}
"""The columns of the BigQuery ``figures`` function, by the report's JSON key."""

_KEY_LABELS = {
    Kind.NODEPOOL: names.LABEL_NODEPOOL_NAME,
    Kind.JOBSET: names.LABEL_JOBSET_UID,
    Kind.JOBSET_NODES: names.LABEL_JOBSET_UID,
    Kind.SLICE: names.LABEL_SLICE_NAME,
    Kind.LEADERWORKERSET: names.LABEL_LWS_UID,
}
"""The label of a built-in kind's series that holds the resource's key."""

BUILT_IN = frozenset(Kind)
VARIANTS = ("as-written", "snapshots", "log")
SEGMENTS_GLOB = "kind=*"
_EVENT_FILES = frozenset(kind_spec(kind).event_file for kind in Kind)

ResourceId = tuple[str, str, str | None]
"""(kind, key, retirement as RFC 3339 or ``None`` for the live record)."""
Figures = dict[str, object]


# --- copying a history -------------------------------------------------------------------


def dump(objects: ObjectBackend, prefix: str, dest: Path) -> Path:
    """Copy every object of a store under ``prefix`` (a bucket path, ``""`` for all) into
    ``dest`` as files, the layout of a local store: what a ``gcloud storage cp -r`` of the
    history gives."""
    start = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    dest.mkdir(parents=True, exist_ok=True)
    for name in objects.list(start):
        generation = objects.generation(name)
        if generation is None:
            continue
        target = dest / name[len(start) :]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(objects.download(name, generation))
    return dest


def _has_segments(root: Path) -> bool:
    return any((root / "log").glob(f"{SEGMENTS_GLOB}/*/*.ndjson"))


def _has_snapshots(root: Path) -> bool:
    return any((root / name).is_file() for name in _EVENT_FILES) or (root / "archive").is_dir()


def _event_files(root: Path) -> Iterator[Path]:
    """The Go-format event files and the generations kept beside them."""
    for path in root.iterdir():
        if (path.is_file() and path.suffix == ".json") or path.name.endswith(".json.generation"):
            yield path


def variants(root: Path, base: Path) -> dict[str, Path]:
    """The variants of the history at ``root`` that have something to read, each a copy
    in ``base`` named by the variant (a cluster of the fleet report)."""
    made: dict[str, Path] = {}
    for variant in VARIANTS:
        copy = base / variant
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".megamon.lock"))
        log_dir = copy / "log"
        if variant == "snapshots":
            if not _has_snapshots(copy):
                shutil.rmtree(copy)
                continue
            for segments in log_dir.glob(SEGMENTS_GLOB):
                shutil.rmtree(segments)
            shutil.rmtree(log_dir / "quarantine", ignore_errors=True)
        elif variant == "log":
            if not _has_segments(copy):
                shutil.rmtree(copy)
                continue
            for path in list(_event_files(copy)):
                path.unlink()
            shutil.rmtree(copy / "archive", ignore_errors=True)
            shutil.rmtree(log_dir / "snapshots", ignore_errors=True)
        made[variant] = copy
    return made


# --- the surfaces ------------------------------------------------------------------------


def _cli_json(argv: Sequence[str], out: Path) -> dict[str, Any]:
    """``megamon <argv> -o out`` in this process; its JSON document."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        status = megamon_cli([*argv, "-o", str(out)])
    assert status == 0, f"megamon {' '.join(argv)}: exit {status}: {stderr.getvalue()}"
    document: dict[str, Any] = orjson.loads(out.read_bytes())
    return document


def _by_resource(rows: Iterable[Mapping[str, Any]]) -> dict[ResourceId, Figures]:
    found: dict[ResourceId, Figures] = {}
    for row in rows:
        rid = (str(row["kind"]), str(row["key"]), row["retiredAt"])
        assert rid not in found, f"{rid}: reported twice"
        found[rid] = {name: row[name] for name in FIGURES}
    return found


def report_figures(
    root: Path, now: int, scratch: Path, config: Path | None = None
) -> dict[ResourceId, Figures]:
    """``megamon report --format json`` on one history (``config``: its described kinds)."""
    argv = ["report", "--events-dir", str(root), "--format", "json"]
    argv += ["--now", timestamps.format_ns(now)]
    if config is not None:
        argv += ["--config-path", str(config)]
    document = _cli_json(argv, scratch / "report.json")
    return _by_resource(document["resources"])


def fleet_figures(base: Path, now: int, scratch: Path) -> dict[str, dict[ResourceId, Figures]]:
    """The fleet report (DuckDB) of every history under ``base``, one cluster each (named by
    its directory), in one run: per cluster, its resources' figures."""
    argv = ["report", "--events-dir", str(base), "--clusters", "*"]
    argv += ["--format", "json", "--now", timestamps.format_ns(now)]
    document = _cli_json(argv, scratch / "fleet.json")
    clusters: dict[str, list[Mapping[str, Any]]] = {c: [] for c in document["clusters"]}
    for row in document["resources"]:
        clusters[row["cluster"]].append(row)
    return {cluster: _by_resource(rows) for cluster, rows in clusters.items()}


_NOW, _SINCE = "-4242424242424242", "-4343434343434343"
"""Literals standing for the function's arguments while it is transpiled once."""


@functools.cache
def _figures_sql() -> str:
    """The ``figures`` function in DuckDB's dialect (sqlglot takes a while: once a run)."""
    return to_duckdb(table_function("figures"), int(_NOW), int(_SINCE))


def bigquery_figures(roots: Sequence[Path], now: int) -> dict[str, dict[ResourceId, Figures]]:
    """The BigQuery ``figures`` function, transpiled to DuckDB, over the segments of the
    histories at ``roots`` (one cluster each, named by its directory)."""
    found: dict[str, dict[ResourceId, Figures]] = {root.name: {} for root in roots}
    if not roots:
        return found
    con = bigquery_like([History(root.name, root) for root in roots])
    try:
        # The log read once into a table, as BigQuery holds it: the function reads it often.
        con.execute("ALTER VIEW megamon_fleet.log RENAME TO log_files")
        con.execute("CREATE TABLE megamon_fleet.log AS SELECT * FROM megamon_fleet.log_files")
        cursor = con.execute(_figures_sql().replace(_NOW, str(now)).replace(_SINCE, "NULL"))
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()
    for row in rows:
        retired = row["retired_at"]
        rid = (row["kind"], row["key"], None if retired is None else timestamps.format_ns(retired))
        cluster = found[row["cluster"]]
        assert rid not in cluster, f"{rid}: in the BigQuery figures twice"
        figures: Figures = {name: row[column] for name, column in _BQ_COLUMNS.items()}
        for name in ("start", "end"):
            figures[name] = timestamps.format_ns(int(row[_BQ_COLUMNS[name]]))
        recoveries = int(row["recoveries"])
        figures["meanTimeToRecover"] = (
            int(row["recovered_down_time"]) // recoveries if recoveries else None
        )
        cluster[rid] = figures
    return found


# --- comparing ---------------------------------------------------------------------------


def _diff(
    where: str,
    expected: Mapping[ResourceId, Figures],
    got: Mapping[ResourceId, Figures],
) -> list[str]:
    lines = []
    for rid in sorted(expected.keys() | got.keys(), key=repr):
        if rid not in got:
            lines.append(f"{where}: {_name(rid)}: missing (expected {expected[rid]})")
        elif rid not in expected:
            lines.append(f"{where}: {_name(rid)}: not in megamon report ({got[rid]})")
        else:
            for name in FIGURES:
                want, have = expected[rid].get(name), got[rid].get(name)
                if want != have:
                    lines.append(f"{where}: {_name(rid)}: {name} {have!r}, report says {want!r}")
    return lines


def _name(rid: ResourceId) -> str:
    kind, key, retired = rid
    return f"{kind} {key}" + (f" (retired {retired})" if retired else "")


def _built_in(figures: Mapping[ResourceId, Figures]) -> dict[ResourceId, Figures]:
    kinds = {kind.value for kind in BUILT_IN}
    return {rid: f for rid, f in figures.items() if rid[0] in kinds}


def check_history(
    root: Path,
    now: int,
    *,
    metrics: str | None = None,
    cycle_ns: int = timestamps.NANOS_PER_SECOND,
    config: Path | None = None,
    prefix: str = "megamon",
) -> dict[ResourceId, Figures]:
    """Every surface, on every variant of the history at ``root``, gives ``megamon report``'s
    figures at ``now``; so do the gauges of ``metrics`` (a ``/metrics`` text, metric names
    starting with ``prefix``) as far as they share a definition. Returns the figures."""
    with tempfile.TemporaryDirectory(prefix="crosssurface-") as tmp:
        scratch = Path(tmp)
        made = variants(root, scratch / "variants")
        assert made, f"{root}: neither event files nor segments: no history to check"
        reference = report_figures(made.get("as-written", root), now, scratch, config)
        built_in = _built_in(reference)
        problems: list[str] = []
        for variant, copy in made.items():
            if variant != "as-written":
                found = report_figures(copy, now, scratch, config)
                problems += _diff(f"{variant}/megamon report", reference, found)
        fleet = fleet_figures(scratch / "variants", now, scratch)
        assert fleet.keys() == made.keys(), f"the fleet report read {sorted(fleet)}"
        for variant, figures in fleet.items():
            problems += _diff(f"{variant}/fleet report", built_in, figures)
        logs = [copy for variant, copy in made.items() if variant != "snapshots"]
        logs = [copy for copy in logs if _has_segments(copy)]
        for variant, figures in bigquery_figures(logs, now).items():
            problems += _diff(f"{variant}/bigquery", reference, figures)
        if metrics is not None:
            problems += gauge_problems(reference, metrics, now, cycle_ns, prefix)
    assert not problems, (
        f"{root}: the surfaces disagree at {timestamps.format_ns(now)} "
        f"({len(problems)} differences):\n  " + "\n  ".join(problems)
    )
    return reference


# --- the gauges --------------------------------------------------------------------------

_S = timestamps.NANOS_PER_SECOND


def scrape_time(metrics: str, prefix: str = "megamon") -> int:
    """The ``now`` of the report a scrape published (``last_report_timestamp_seconds``),
    1 µs later than its float seconds so that the events of that cycle are in."""
    name = names.process_metric(prefix, names.LAST_REPORT_TIMESTAMP)
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == name:
                return round(sample.value * _S) + 1_000
    raise AssertionError(f"no {name} in the scrape: it published no report")


def _gauges(metrics: str, prefix: str) -> dict[tuple[str, str], dict[str, tuple[float, str]]]:
    """(kind, key) → suffix → (value, provisioning_state label) of the built-in kinds'
    per-resource series."""
    infixes = "|".join(sorted((k.value for k in _KEY_LABELS), key=len, reverse=True))
    pattern = re.compile(rf"^{re.escape(prefix)}_({infixes})_(.+)$")
    found: dict[tuple[str, str], dict[str, tuple[float, str]]] = {}
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            match = pattern.match(sample.name)
            if match is None:
                continue
            kind = Kind(match.group(1))
            key = sample.labels.get(_KEY_LABELS[kind])
            if key is None:
                continue  # not a per-resource series (the fleet-wide chip figures)
            state = sample.labels.get(names.LABEL_PROVISIONING_STATE, "")
            found.setdefault((kind.value, key), {})[match.group(2)] = (sample.value, state)
    return found


def gauge_problems(
    reference: Mapping[ResourceId, Figures],
    metrics: str,
    now: int,
    cycle_ns: int,
    prefix: str = "megamon",
) -> list[str]:
    """What the per-resource gauges of ``metrics`` say that ``reference`` (``megamon report``
    at ``now``) does not, as far as both define it (the module's docstring)."""
    gauges = _gauges(metrics, prefix)
    live = {
        (kind, key): f for (kind, key, retired), f in _built_in(reference).items() if not retired
    }
    problems = []
    for missing in sorted(live.keys() - gauges.keys()):
        problems.append(f"gauges: {missing[0]} {missing[1]}: live in the history, no series")
    for extra in sorted(gauges.keys() - live.keys()):
        problems.append(f"gauges: {extra[0]} {extra[1]}: series, but no live record")
    for resource in sorted(live.keys() & gauges.keys()):
        problems += [
            f"gauges: {resource[0]} {resource[1]}: {text}"
            for text in _resource_gauge_problems(live[resource], gauges[resource], cycle_ns)
        ]
    return problems


def _ns(value: object) -> int:
    return int(value) if isinstance(value, int) else 0


def _resource_gauge_problems(
    figures: Figures, series: Mapping[str, tuple[float, str]], cycle_ns: int
) -> list[str]:
    problems = []

    def gauge(suffix: str) -> float:
        return series.get(suffix, (0.0, ""))[0]

    def near(what: str, seconds: float, ns: int, *, at_least: bool = False) -> None:
        gap = seconds * _S - ns
        if (gap < -cycle_ns) or (not at_least and gap > cycle_ns):
            relation = "at least" if at_least else "within a cycle of"
            problems.append(f"{what} {seconds:.3f}s, not {relation} the report's {ns / _S:.3f}s")

    for suffix, name in (
        (names.INTERRUPTION_COUNT, "interruptionCount"),
        (names.RECOVERY_COUNT, "recoveryCount"),
    ):
        if gauge(suffix) != figures[name]:
            problems.append(f"{suffix} {gauge(suffix):g}, report says {figures[name]}")
    state = str(figures["state"])
    if state != "unobserved" and gauge(names.UP) != (1.0 if state == "up" else 0.0):
        problems.append(f"up {gauge(names.UP):g}, report ends it {state}")
    provisioning = series.get(names.PROVISIONING_DURATION)
    report_state = str(figures["provisioningState"])
    if (provisioning[1] if provisioning else "") != report_state:
        problems.append(
            f"provisioning_state {provisioning[1] if provisioning else None!r}, "
            f"report says {report_state!r}"
        )
    elif provisioning is not None:
        duration = _ns(figures["provisioningDuration"])
        near(names.PROVISIONING_DURATION, provisioning[0], duration)
        initial = duration if report_state == "success" else 0
        near(names.DOWN_TIME_INITIAL, gauge(names.DOWN_TIME_INITIAL), initial)
    up, unobserved = _ns(figures["upTime"]), _ns(figures["unobservedTime"])
    down = sum(_ns(figures[name]) for name in ("downTime", "expectedDownTime", "provisioningTime"))
    span = up + down + unobserved
    near(
        f"{names.UP_TIME} + {names.DOWN_TIME}", gauge(names.UP_TIME) + gauge(names.DOWN_TIME), span
    )
    exact = unobserved == 0
    near(names.UP_TIME, gauge(names.UP_TIME), up, at_least=not exact)
    near(names.DOWN_TIME, gauge(names.DOWN_TIME), down, at_least=not exact)
    return problems


def dump_store(store: object, dest: Path) -> Path:
    """Copy the history of an event store (a directory, in memory, a bucket) to ``dest``."""
    if isinstance(store, LocalEventStore):  # already a directory: its copy
        shutil.copytree(Path(store.describe()), dest, ignore=shutil.ignore_patterns(".*.lock"))
        return dest
    assert isinstance(store, ObjectEventStore), f"{store!r} is not an object store"
    return dump(store._backend, store._path, dest)  # the store's own backend and path
