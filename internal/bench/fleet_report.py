"""Benchmark: the fleet report (DuckDB) over a synthetic fleet in the log layout, against the
Python report on one cluster's share, per event.

The fleet: ``--clusters`` (20) histories of ``--resources`` (4,000) node pools with
``--events`` (200) events each, 16 M events in all, written as the append-only log writes
them (``log/kind=nodepool/date=YYYY-MM-DD/<sequence>.ndjson``, one segment per 10,000 lines
in time order, every event line carrying the pool's attributes, as the recorder writes them).
The reference: one cluster's share written as a Go-format ``node-pools.json`` (the same
events) and reported by ``availability_report`` as ``megamon report`` does (read, decode,
compute).

The fleet report is measured twice, each in its own process (wall time, peak RSS of that
process): on a cold columnar cache (the first report: every segment is parsed and converted
to Parquet, ``megamon.fleet.columnar``), then on the warm cache (the weekly report an SRE
runs: only new segments would be converted). Run with
``python -m internal.bench.fleet_report [--clusters N] [--data DIR] [--write-docs]``
(``--data`` keeps the generated fleet there for another run; develop on a few clusters); the
figures go to ``docs/performance.md`` under "Fleet report".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from internal.bench.memory import peak_rss_mb
from megamon.domain import timestamps
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.fleet.engine import History, fleet_report
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import Resource, Window, availability_report

T0 = timestamps.parse("2026-01-01T00:00:00Z")
STEP_NS = 37 * 60 * timestamps.NANOS_PER_SECOND
LINES_PER_SEGMENT = 10_000
SHAPES = (("tpu-v5p-slice", "2x2x1", 4), ("tpu-v6e-slice", "4x4", 16), ("tpu-v5e", "8x8", 64))
DOCS = Path("docs/performance.md")
HEADING = "## Fleet report (DuckDB) over many clusters' logs"


def _events(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Alternating down/up, some planned, some failed, on an irregular grid."""
    t = T0 + rng.randrange(STEP_NS)
    out = []
    for i in range(count):
        t += rng.randrange(1, 2 * STEP_NS)
        if i % 2:
            out.append((t, FLAG_UP))
        else:
            extra = FLAG_EXPECTED_DOWN if rng.random() < 0.1 else 0
            out.append((t, extra | (FLAG_FAILED if rng.random() < 0.05 else 0)))
    return out


def _state(flags: int) -> str:
    if flags & FLAG_UP:
        return "up"
    if flags & FLAG_EXPECTED_DOWN:
        return "expected-down"
    return "failed" if flags & FLAG_FAILED else "down"


_BOOL = ("false", "true")


def _line(cluster: str, key: str, ts: int, flags: int, attrs: str) -> str:
    return (
        f'{{"type":"event","cluster":"{cluster}","kind":"nodepool","key":"{key}",'
        f'"ts":"{timestamps.format_ns(ts)}","tsNs":{ts},"state":"{_state(flags)}",'
        f'"up":{_BOOL[flags & 1]},"ed":{_BOOL[(flags >> 1) & 1]},"f":{_BOOL[(flags >> 2) & 1]},'
        f'"attrs":{attrs},"since":null}}\n'
    )


def _attrs(key: str, index: int) -> str:
    accelerator, topology, chips = SHAPES[index % len(SHAPES)]
    return json.dumps(
        {
            "nodePoolName": key,
            "tpuAccelerator": accelerator,
            "tpuTopology": topology,
            "tpuChipCount": chips,
        },
        separators=(",", ":"),
    )


def write_cluster(root: Path, cluster: str, resources: int, events: int, seed: int) -> int:
    """One cluster's log; returns the number of events written."""
    rng = random.Random(seed)
    lines: list[tuple[int, str]] = []
    for i in range(resources):
        key = f"np-{i:05d}"
        attrs = _attrs(key, i)
        for ts, flags in _events(rng, events):
            lines.append((ts, _line(cluster, key, ts, flags, attrs)))
    lines.sort(key=lambda pair: pair[0])
    for sequence, start in enumerate(range(0, len(lines), LINES_PER_SEGMENT), 1):
        chunk = lines[start : start + LINES_PER_SEGMENT]
        day = timestamps.format_ns(chunk[0][0])[:10]
        directory = root / "log" / "kind=nodepool" / f"date={day}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{sequence:016d}.ndjson").write_text("".join(line for _, line in chunk))
    return len(lines)


def write_reference(root: Path, resources: int, events: int, seed: int) -> None:
    """The same events as ``write_cluster(seed)``, as a Go-format event file."""
    rng = random.Random(seed)
    records = {}
    for i in range(resources):
        evs = _events(rng, events)
        records[f"np-{i:05d}"] = EventRecord.trusted(
            tuple(t for t, _ in evs), bytes(f for _, f in evs)
        )
    LocalEventStore(root).write(Kind.NODEPOOL, records, None)


def phase_fleet(base: Path, now: int, columnar: Path) -> dict[str, Any]:
    histories = [History(p.name, p) for p in sorted(base.iterdir()) if p.is_dir()]
    start = time.perf_counter()
    report = fleet_report(
        histories,
        [Kind.NODEPOOL],
        Window(now=now, since=now - 30 * 86_400 * 10**9),
        columnar_dir=columnar,
    )
    wall = time.perf_counter() - start
    return {"wall_s": wall, "peak_rss_mb": peak_rss_mb(), "resources": len(report.resources)}


def phase_python(root: Path, now: int) -> dict[str, Any]:
    start = time.perf_counter()
    store = LocalEventStore(root)
    resources = [
        Resource(Kind.NODEPOOL, k, r) for k, r in store.read(Kind.NODEPOOL).records.items()
    ]
    report = availability_report(resources, Window(now=now, since=now - 30 * 86_400 * 10**9))
    wall = time.perf_counter() - start
    return {"wall_s": wall, "peak_rss_mb": peak_rss_mb(), "resources": len(report.resources)}


def _child(*argv: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "internal.bench.fleet_report", *argv],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _write_fleet(args: argparse.Namespace, fleet_dir: Path, ref_dir: Path) -> float:
    """The synthetic fleet and the reference (unless ``--data`` already holds them)."""
    if (ref_dir / "node-pools.json").exists():
        return 0.0
    written = time.perf_counter()
    for c in range(args.clusters):
        name = f"cluster-{c:02d}"
        write_cluster(fleet_dir / name, name, args.resources, args.events, c)
    write_reference(ref_dir, args.resources, args.events, 0)
    return time.perf_counter() - written


def _fleet(fleet_dir: Path, now: int, columnar: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    result = _child(
        "--phase", "fleet", "--path", str(fleet_dir), "--now", str(now), "--columnar", str(columnar)
    )
    result["load_average"] = max(load, os.getloadavg()[0])
    return result


def measure(args: argparse.Namespace) -> dict[str, Any]:
    keep = args.data is not None
    base = Path(args.data) if keep else Path(tempfile.mkdtemp(prefix="megamon-bench-fleet-"))
    try:
        fleet_dir, ref_dir = base / "fleet", base / "reference"
        written = _write_fleet(args, fleet_dir, ref_dir)
        total = args.clusters * args.resources * args.events
        size = sum(p.stat().st_size for p in fleet_dir.rglob("*.ndjson"))
        now = T0 + args.events * STEP_NS
        columnar = base / "columnar"
        shutil.rmtree(columnar, ignore_errors=True)
        cold = _fleet(fleet_dir, now, columnar)
        fleet = _fleet(fleet_dir, now, columnar)
        columnar_bytes = sum(p.stat().st_size for p in columnar.rglob("*") if p.is_file())
        shutil.rmtree(columnar, ignore_errors=True)
        load = os.getloadavg()[0]
        python = _child("--phase", "python", "--path", str(ref_dir), "--now", str(now))
        python["load_average"] = max(load, os.getloadavg()[0])
        per_event_fleet = fleet["wall_s"] / total
        per_event_python = python["wall_s"] / (args.resources * args.events)
        return {
            "cold": cold,
            "cold_ns_per_event": cold["wall_s"] / total * 1e9,
            "cold_speedup_per_event": per_event_python / (cold["wall_s"] / total),
            "columnar_bytes": columnar_bytes,
            "clusters": args.clusters,
            "resources_per_cluster": args.resources,
            "events_per_resource": args.events,
            "events": total,
            "log_bytes": size,
            "write_s": written,
            "fleet": fleet,
            "python_one_cluster": python,
            "fleet_ns_per_event": per_event_fleet * 1e9,
            "python_ns_per_event": per_event_python * 1e9,
            "speedup_per_event": per_event_python / per_event_fleet,
        }
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def table(r: dict[str, Any]) -> str:
    fleet, cold, python = r["fleet"], r["cold"], r["python_one_cluster"]
    share = r["resources_per_cluster"] * r["events_per_resource"]
    scaled = python["wall_s"] * r["events"] / share
    return "\n".join(
        [
            HEADING,
            "",
            f"`python -m internal.bench.fleet_report`: {r['clusters']} clusters × "
            f"{r['resources_per_cluster']:,} node pools × {r['events_per_resource']} events "
            f"= {r['events']:,} events in the log layout ({r['log_bytes'] / 1e9:.1f} GB of "
            "NDJSON), a 30-day window, on this 2-core machine (shared with other work). "
            "The fleet report runs twice: on a cold columnar cache (the first report parses "
            "every segment and keeps it as Parquet) and on the warm cache (the weekly "
            "report). The Python report is measured on one cluster's share, read from a "
            "Go-format event file, and scaled by events.",
            "",
            "| | wall time | peak RSS | per event | load average |",
            "|---|---:|---:|---:|---:|",
            f"| fleet report (DuckDB), {r['events']:,} events, warm cache | "
            f"{fleet['wall_s']:.1f} s | {fleet['peak_rss_mb']:.0f} MB | "
            f"{r['fleet_ns_per_event']:.0f} ns | {fleet['load_average']:.1f} |",
            f"| fleet report, cold cache (converts {r['log_bytes'] / 1e9:.1f} GB of NDJSON "
            f"to {r['columnar_bytes'] / 1e6:.0f} MB of Parquet) | {cold['wall_s']:.1f} s | "
            f"{cold['peak_rss_mb']:.0f} MB | {r['cold_ns_per_event']:.0f} ns | "
            f"{cold['load_average']:.1f} |",
            f"| Python report, one cluster ({share:,} events) | {python['wall_s']:.1f} s | "
            f"{python['peak_rss_mb']:.0f} MB | {r['python_ns_per_event']:.0f} ns | "
            f"{python['load_average']:.1f} |",
            f"| Python report scaled to the fleet | {scaled:.0f} s | – | – | – |",
            "",
            f"Per event, the warm fleet report is {r['speedup_per_event']:.1f}× faster than "
            f"the Python path, the cold one {r['cold_speedup_per_event']:.1f}×. Targets (for "
            "the warm report): under 60 s and 2 GB for the 16 M events, at least 10× per "
            f"event — {_verdict(r)}. The load average is the one-minute figure around each "
            "measurement (2.0 means both cores busy): another session shared the machine.",
            "",
            "Where the time goes (warm; profiled on the same fleet): finding the batches and "
            "reading their metadata about 0.3 s; the figures query nearly all the rest, two "
            "window sorts over each lifetime's events (the order of events, then the "
            "periods), a chunk of histories at a time (about 2 M events, `CHUNK_ROWS`, so "
            "the sorts stay in memory: larger chunks were slower and larger); building the "
            "report's 80,000 Python objects about 1 s. Cold, parsing the NDJSON (explicit "
            "column types), numbering the keys and writing Parquet is the difference "
            "between the two rows.",
            "",
        ]
    )


def _verdict(r: dict[str, Any]) -> str:
    met = (
        r["fleet"]["wall_s"] < 60
        and r["fleet"]["peak_rss_mb"] < 2048
        and r["speedup_per_event"] >= 10
    )
    return "met" if met else "not all met in this run"


def write_docs(text: str) -> None:
    current = DOCS.read_text() if DOCS.exists() else ""
    head, found, _ = current.partition(HEADING)
    # Our section is the last one: everything after our heading is ours.
    current = (head if found else current).rstrip() + "\n\n"
    DOCS.write_text(current + text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--resources", type=int, default=4000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument(
        "--data",
        help="keep the synthetic fleet in this directory, and reuse it if it is there "
        "(default: a temporary directory, removed after)",
    )
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--phase", choices=("fleet", "python"), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--now", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--columnar", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase == "fleet":
        print(json.dumps(phase_fleet(Path(args.path), args.now, Path(args.columnar))))
        return 0
    if args.phase == "python":
        print(json.dumps(phase_python(Path(args.path), args.now)))
        return 0
    result = measure(args)
    print(json.dumps(result, indent=2))
    text = table(result)
    print(text)
    if args.write_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
