"""Benchmark: megamon against a whole fleet — 4,000, 16,000 and 65,000 realistic TPU nodes.

``python -m internal.bench.fleet --size S|M|L|all`` starts the emulators in a process of
their own (``fleet_server``: the Kubernetes API with N ~9 KB GKE TPU nodes, J JobSets and
their leader pods; GKE with P node pools), then measures, each in a fresh child process
(``fleet_probes``):

(a) megamon's watch caches (``KubeCluster``) until every cache has listed: time, peak RSS;
(b) the same nodes listed the straightforward way, ``CoreV1Api.list_node()`` into model
    objects: time, peak RSS (given up after ``--list-timeout`` seconds, and reported so);
(c) steady aggregation cycles with a different 1% of the nodes not Ready each cycle: CPU
    time of ``aggregate_once()`` (observe, event log, summarize) plus the ``/metrics`` render;
(d) the ``/metrics`` render: CPU time and size;
(e) bytes the event store writes per cycle;

and prints a table with the ratios (a)/(b). ``--write-docs`` puts the table and the machine
into ``docs/performance.md`` (between its results markers).

Sizes: S = 4,000 nodes / 250 pools / 300 JobSets, M = 16,000 / 1,000 / 1,200,
L = 65,000 / 4,000 / 5,000, and L+huge = L plus a 1,536-node v5p pool (16x16x24) and a
2,304-node TPU7x pool (16x24x24, placed by a workload policy), each with its JobSet.
``--size huge`` runs L and L+huge one after the other and compares their steady cycles; the
L+huge probe asserts that one node of each huge pool going NotReady is seen in the next cycle.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from internal.bench import fleet_objects

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "performance.md"
RESULTS_BEGIN = "<!-- fleet benchmark results: begin -->"
RESULTS_END = "<!-- fleet benchmark results: end -->"
HUGE_BEGIN = "<!-- huge slices results: begin -->"
HUGE_END = "<!-- huge slices results: end -->"
"""``--size huge`` writes between these instead, leaving the S/M/L results as they are."""
RECOMMENDED_GC = ["--gc-freeze", "--gc-threshold", "700,10,100"]
"""``gc.freeze()`` once the caches are synced and ``gc.set_threshold(700, 10, 100)``: what
``docs/performance.md`` recommends the service does."""
LIST_MEMORY_LIMIT = 16 * 1024**3
"""Address-space cap of the ``list_node()`` child, so that the baseline cannot take the
machine (the emulator needs its own ~1.5 GB beside it)."""


class ProbeFailed(Exception):
    """A probe process did not report figures."""


@dataclass
class SizeResult:
    size: fleet_objects.Size
    server: dict[str, Any]
    sync: dict[str, Any] = field(default_factory=dict)
    listing: dict[str, Any] = field(default_factory=dict)
    cycles: dict[str, Any] = field(default_factory=dict)
    tuned: dict[str, Any] = field(default_factory=dict)
    """The cycles again, with ``RECOMMENDED_GC`` applied after the sync."""
    fleet_only: dict[str, Any] = field(default_factory=dict)
    """The cycles with the series budget ``"PerResourceSeries": []`` (``--fleet-only``)."""
    by_history: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The cycles again per history length (``--histories``), on the same emulators."""
    by_history_tuned: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The same with ``RECOMMENDED_GC`` (unless ``--skip-tuned``)."""


@contextmanager
def emulators(size: fleet_objects.Size) -> Iterator[dict[str, Any]]:
    """The emulator process serving ``size``; it stops when its standard input closes."""
    with tempfile.TemporaryDirectory(prefix="megamon-fleet-") as directory:
        command = [sys.executable, "-m", "internal.bench.fleet_server"]
        process = subprocess.Popen(
            [*command, "--size", size.name, "--dir", directory],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise ProbeFailed(f"the emulator process exited with {process.wait()}")
            yield json.loads(line)
        finally:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIST_MEMORY_LIMIT, LIST_MEMORY_LIMIT))


def probe(
    name: str, arguments: Sequence[str], *, timeout: float, limit_memory: bool = False
) -> dict[str, Any]:
    """Run probe ``name`` in a fresh process; its figures, or why there are none."""
    command = [sys.executable, "-m", "internal.bench.fleet_probes", name, *arguments]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            preexec_fn=_limit_memory if limit_memory else None,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"gave_up": f"no answer within {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        if "MemoryError" in done.stderr:
            tail = f"MemoryError at the {LIST_MEMORY_LIMIT // 1024**3} GB address-space cap"
        return {"gave_up": f"exit {done.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_size(size: fleet_objects.Size, args: argparse.Namespace) -> SizeResult:
    print(f"[{size.name}] starting the emulators with {size.total_nodes:,} nodes ...", flush=True)
    with emulators(size) as server:
        result = SizeResult(size, server)
        common = ["--kubeconfig", server["kubeconfig"], "--timeout", str(args.timeout)]
        print(f"[{size.name}] (a) megamon watch caches ...", flush=True)
        result.sync = probe("sync", common, timeout=args.timeout)
        if args.skip_list:
            result.listing = {"gave_up": "skipped (--skip-list)"}
        else:
            print(f"[{size.name}] (b) CoreV1Api.list_node() ...", flush=True)
            result.listing = probe("list", common, timeout=args.list_timeout, limit_memory=True)
        print(f"[{size.name}] (c-e) {args.cycles} steady cycles ...", flush=True)
        cycle_args = [*common, "--gke", server["gke"], "--cycles", str(args.cycles)]
        cycle_args += ["--size", size.name]
        cycle_args += ["--history", str(args.history)]
        if args.reference:
            cycle_args.append("--reference")
        result.cycles = probe("cycles", cycle_args, timeout=args.timeout * 4)
        if args.fleet_only:
            print(f"[{size.name}] (d) /metrics with PerResourceSeries [] ...", flush=True)
            result.fleet_only = probe(
                "cycles", [*cycle_args, "--fleet-only"], timeout=args.timeout * 4
            )
        for events in args.histories:
            print(f"[{size.name}] (c-e) with {events} events per resource ...", flush=True)
            again = [*common, "--gke", server["gke"], "--cycles", str(args.cycles)]
            again += ["--size", size.name, "--history", str(events)]
            result.by_history[events] = probe("cycles", again, timeout=args.timeout * 4)
            if not args.skip_tuned:
                print(f"[{size.name}] ... and with the recommended GC settings ...", flush=True)
                result.by_history_tuned[events] = probe(
                    "cycles", [*again, *RECOMMENDED_GC], timeout=args.timeout * 4
                )
        if not args.skip_tuned:
            print(f"[{size.name}] (c-e) again, with the recommended GC settings ...", flush=True)
            tuned = [*cycle_args, *RECOMMENDED_GC]
            if args.profile:
                tuned += ["--profile", f"{args.profile}.{size.name}"]
            result.tuned = probe("cycles", tuned, timeout=args.timeout * 4)
    return result


# -- presentation ---------------------------------------------------------------------------


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    return (
        f"{model}, {os.cpu_count()} cores, {memory:.0f} GB RAM, "
        f"Python {platform.python_version()} ({platform.system()} {platform.release()})"
    )


def load() -> str:
    """The load averages, as ``uptime`` prints them: other work on the machine shows here."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def _seconds(figures: dict[str, Any], key: str) -> str:
    if "gave_up" in figures or key not in figures:
        return "—"
    return f"{figures[key]:.2f} s"


def _mb(figures: dict[str, Any], key: str) -> str:
    if "gave_up" in figures or key not in figures:
        return "—"
    return f"{figures[key]:,.0f} MB"


def _ratio(ours: dict[str, Any], theirs: dict[str, Any], key: str) -> str:
    if "gave_up" in ours or "gave_up" in theirs:
        return "—"
    return f"{theirs[key] / ours[key]:.1f}×"


def _cpu(figures: dict[str, Any]) -> str:
    """A cycle's CPU: median, and mean and worst over the steady cycles."""
    if "gave_up" in figures or not figures:
        return "—"
    return (
        f"{figures['cycle_cpu_s']:.2f} s (mean {figures['cycle_cpu_mean_s']:.2f}, "
        f"max {figures['cycle_cpu_max_s']:.2f})"
    )


def _size(figures: dict[str, Any]) -> str:
    if "gave_up" in figures:
        return "—"
    return (
        f"{figures['metrics_bytes'] / 1e6:.1f} MB ({figures['metrics_gzip_bytes'] / 1e6:.1f} MB "
        f"gzipped), {figures['samples']:,.0f} samples"
    )


def _store(figures: dict[str, Any]) -> str:
    if "gave_up" in figures:
        return "—"
    return f"{figures['store_bytes'] / 1e6:.2f} MB"


def table(results: Sequence[SizeResult]) -> str:
    """The results as a Markdown table, one column per size."""
    head = "| | " + " | ".join(
        f"{r.size.name}: {r.size.total_nodes:,} nodes / {r.size.total_pools:,} pools / "
        f"{r.size.total_jobsets:,} JobSets"
        for r in results
    )
    cells: list[tuple[str, Callable[[SizeResult], str]]] = [
        ("(a) megamon sync, wall", lambda r: _seconds(r.sync, "wall_s")),
        ("(a) megamon sync, CPU", lambda r: _seconds(r.sync, "cpu_s")),
        ("(a) megamon sync, peak RSS", lambda r: _mb(r.sync, "peak_rss_mb")),
        ("(b) `list_node()` models, wall", lambda r: _seconds(r.listing, "wall_s")),
        ("(b) `list_node()` models, CPU", lambda r: _seconds(r.listing, "cpu_s")),
        ("(b) `list_node()` models, peak RSS", lambda r: _mb(r.listing, "peak_rss_mb")),
        ("(b)/(a) time", lambda r: _ratio(r.sync, r.listing, "wall_s")),
        ("(b)/(a) memory", lambda r: _ratio(r.sync, r.listing, "peak_rss_mb")),
        ("start-up from snapshot + log, wall", lambda r: _seconds(r.cycles, "startup_wall_s")),
        ("first cycle after start-up, CPU", lambda r: _seconds(r.cycles, "first_cycle_cpu_s")),
        (
            "start-up + first aggregate_once(), wall",
            lambda r: _seconds(r.cycles, "startup_first_cycle_wall_s"),
        ),
        ("(c) steady cycle CPU", lambda r: _cpu(r.cycles)),
        ("(c) of which aggregate_once()", lambda r: _seconds(r.cycles, "aggregate_cpu_s")),
        ("(c) of which persist_once()", lambda r: _seconds(r.cycles, "persist_cpu_s")),
        ("(c) of which /metrics render", lambda r: _seconds(r.cycles, "render_cpu_s")),
        ("(c) with the recommended GC settings", lambda r: _cpu(r.tuned)),
        ("(d) /metrics render CPU", lambda r: _seconds(r.cycles, "render_cpu_s")),
        (
            "(d) the same with prometheus_client",
            lambda r: _seconds(r.cycles, "reference_render_cpu_s"),
        ),
        ("(d) /metrics size", lambda r: _size(r.cycles)),
        ("(d) gzip of /metrics (level 6), CPU", lambda r: _seconds(r.cycles, "gzip_cpu_s")),
        ("(e) event store written / cycle", lambda r: _store(r.cycles)),
        ("workload pass on a watch change, CPU", lambda r: _seconds(r.cycles, "workloads_cpu_s")),
        ("GKE poll of the node pools, CPU", lambda r: _seconds(r.cycles, "poll_cpu_s")),
        (
            "megamon whole-process peak RSS (VmHWM: sync, start-up, cycles)",
            lambda r: _mb(r.cycles, "peak_rss_mb"),
        ),
    ]
    rows = [(label, [cell(r) for r in results]) for label, cell in cells]
    lines = [head + " |", "|---" + "|---:" * len(results) + "|"]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    notes = []
    for r in results:
        for what, figures in (("(a)", r.sync), ("(b)", r.listing), ("(c–e)", r.cycles)):
            if "gave_up" in figures:
                notes.append(f"- {r.size.name} {what}: {figures['gave_up']}")
    return "\n".join(lines + (["", *notes] if notes else []))


_GROWTH: list[tuple[str, str, str]] = [
    ("(a) megamon sync, wall", "sync", "wall_s"),
    ("(a) megamon sync, peak RSS", "sync", "peak_rss_mb"),
    ("(b) `list_node()`, wall", "listing", "wall_s"),
    ("(b) `list_node()`, peak RSS", "listing", "peak_rss_mb"),
    ("first cycle after start-up, CPU", "cycles", "first_cycle_cpu_s"),
    ("(c) steady cycle CPU (median)", "cycles", "cycle_cpu_s"),
    ("(c) with the recommended GC settings", "tuned", "cycle_cpu_s"),
    ("(c) aggregate_once()", "cycles", "aggregate_cpu_s"),
    ("(c) aggregate_once(), recommended GC settings", "tuned", "aggregate_cpu_s"),
    ("(d) /metrics render CPU", "cycles", "render_cpu_s"),
    ("(d) /metrics size", "cycles", "metrics_bytes"),
    ("(e) event store written / cycle", "cycles", "store_bytes"),
    ("megamon peak RSS (sync + cycles)", "cycles", "peak_rss_mb"),
]


def growth(results: Sequence[SizeResult]) -> str:
    """How each figure grows from one size to the next, beside how the fleet grows."""
    if len(results) < 2:
        return ""
    steps = list(pairwise(results))
    head = "| figure | " + " | ".join(f"{a.size.name} → {b.size.name}" for a, b in steps) + " |"
    lines = [head, "|---" + "|---:" * len(steps) + "|"]
    nodes = [f"{b.size.total_nodes / a.size.total_nodes:.2f}×" for a, b in steps]
    lines.append("| nodes (the fleet) | " + " | ".join(nodes) + " |")
    for label, part, key in _GROWTH:
        cells = []
        for a, b in steps:
            before, after = getattr(a, part).get(key), getattr(b, part).get(key)
            cells.append(f"{after / before:.2f}×" if before and after else "—")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


_HUGE_FIGURES: list[tuple[str, str]] = [
    ("steady cycle CPU (median)", "cycle_cpu_s"),
    ("steady cycle CPU (mean)", "cycle_cpu_mean_s"),
    ("of which aggregate_once()", "aggregate_cpu_s"),
    ("of which persist_once()", "persist_cpu_s"),
    ("of which /metrics render", "render_cpu_s"),
    ("workload pass on a watch change", "workloads_cpu_s"),
    ("GKE poll of the node pools", "poll_cpu_s"),
]


def huge_comparison(results: Sequence[SizeResult]) -> str:
    """Each ``X+huge`` against ``X`` of the same run: each steady figure and its growth,
    beside the growth of the node count; and the huge pools whose NotReady node the probe
    saw in the next cycle."""
    by_name = {r.size.name: r for r in results}
    parts = []
    for huge in results:
        plain = by_name.get(huge.size.name.removesuffix("+huge"))
        if not huge.size.huge or plain is None or plain is huge:
            continue
        if "gave_up" in plain.cycles or "gave_up" in huge.cycles:
            continue
        parts.append(_compared(plain, huge))
    return "\n\n".join(parts)


def _compared(plain: SizeResult, huge: SizeResult) -> str:
    a, b = plain.size.name, huge.size.name
    nodes = huge.size.total_nodes / plain.size.total_nodes
    lines = [
        f"| figure | {a} | {b} | growth |",
        "|---|---:|---:|---:|",
        f"| nodes | {plain.size.total_nodes:,} | {huge.size.total_nodes:,} | "
        f"{(nodes - 1) * 100:+.1f}% |",
    ]
    for part, suffix in ((plain.cycles, huge.cycles), (plain.tuned, huge.tuned)):
        if not part or not suffix or "gave_up" in part or "gave_up" in suffix:
            continue
        tuned = " (recommended GC settings)" if part is plain.tuned else ""
        for label, key in _HUGE_FIGURES:
            before, after = part[key], suffix[key]
            growth = f"{(after / before - 1) * 100:+.1f}%" if before else "—"
            lines.append(f"| {label}{tuned} | {before:.3f} s | {after:.3f} s | {growth} |")
    checked = ", ".join(huge.cycles.get("huge_checked", [])) or "none"
    lines += ["", f"One NotReady node of each seen in the next cycle (asserted): {checked}."]
    return "\n".join(lines)


def write_docs(text: str, begin: str = RESULTS_BEGIN, end: str = RESULTS_END) -> None:
    """Replace a results section of ``docs/performance.md`` (between its markers)."""
    document = DOCS.read_text() if DOCS.exists() else ""
    if begin not in document:
        document += f"{begin}\n{end}\n"
    before, _, rest = document.partition(begin)
    _, _, after = rest.partition(end)
    DOCS.write_text(f"{before}{begin}\n{text}\n{end}{after}")


_BY_HISTORY: list[tuple[str, str, Callable[[dict[str, Any]], float | None]]] = [
    ("start-up, wall", "s", lambda f: f.get("startup_wall_s")),
    ("first cycle CPU", "s", lambda f: f.get("first_cycle_cpu_s")),
    ("start-up + first cycle, wall", "s", lambda f: f.get("startup_first_cycle_wall_s")),
    ("steady cycle CPU", "s", lambda f: f.get("cycle_cpu_s")),
    ("of which aggregate_once()", "s", lambda f: f.get("aggregate_cpu_s")),
    ("whole-process peak RSS", "MB", lambda f: f.get("peak_rss_mb")),
]


def history_table(results: Sequence[SizeResult]) -> str:
    """Per size and history length (``--histories``): start-up, first and steady cycle, peak
    RSS, and each figure's ratio from the shortest history to the longest."""
    rows = [r for r in results if r.by_history]
    if not rows:
        return ""
    labels = [label for label, _, _ in _BY_HISTORY]
    lines = ["| size | GC settings | events per resource | " + " | ".join(labels) + " |"]
    lines.append("|---|---|---:" + "|---:" * len(labels) + "|")
    for r in rows:
        for gc_settings, by_history in (
            ("default", r.by_history),
            ("recommended", r.by_history_tuned),
        ):
            if by_history:
                lines += _history_rows(f"{r.size.name} | {gc_settings}", by_history)
    return "\n".join(lines)


def _history_rows(head: str, by_history: dict[int, dict[str, Any]]) -> list[str]:
    """A row per history length, then the ratio of the longest to the shortest."""
    lines = []
    lengths = sorted(by_history)
    for events in lengths:
        figures = by_history[events]
        cells = []
        for _, unit, get in _BY_HISTORY:
            value = None if "gave_up" in figures else get(figures)
            cells.append(
                "—"
                if value is None
                else f"{value:,.2f} {unit}"
                if unit == "s"
                else f"{value:,.0f} {unit}"
            )
        lines.append(f"| {head} | {events:,} | " + " | ".join(cells) + " |")
    short, long = by_history[lengths[0]], by_history[lengths[-1]]
    ratios = []
    for _, _, get in _BY_HISTORY:
        a, b = get(short), get(long)
        ratios.append(f"{b / a:.2f}×" if a and b else "—")
    lines.append(f"| {head} | {lengths[-1]:,} / {lengths[0]:,} | " + " | ".join(ratios) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m internal.bench.fleet", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--size", choices=[*fleet_objects.SIZES, "all", "huge"], default="S")
    parser.add_argument("--cycles", type=int, default=5, help="steady cycles measured")
    parser.add_argument("--history", type=int, default=20, help="seeded events per resource")
    parser.add_argument(
        "--histories",
        type=lambda text: [int(part) for part in text.split(",") if part],
        default=[],
        help="also measure the cycles with each of these events per resource, e.g. 20,1000",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per probe")
    parser.add_argument(
        "--list-timeout", type=float, default=1200.0, help="seconds before (b) is given up"
    )
    parser.add_argument("--skip-list", action="store_true", help="do not measure (b)")
    parser.add_argument(
        "--skip-tuned", action="store_true", help="do not measure (c-e) with GC settings tuned"
    )
    parser.add_argument(
        "--reference", action="store_true", help="also render with prometheus_client"
    )
    parser.add_argument(
        "--fleet-only",
        action="store_true",
        help='also measure /metrics with the series budget "PerResourceSeries": []',
    )
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument(
        "--profile",
        type=Path,
        help="write pyinstrument profiles of the start-up, the first and the last cycle of "
        "the cycles probe with the recommended GC settings to PROFILE.<size>.<phase>.txt",
    )
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    args = parser.parse_args(argv)
    names = {"all": list(fleet_objects.SIZES), "huge": ["L", "L+huge"]}.get(args.size, [args.size])
    load_before = load()
    results = [run_size(fleet_objects.SIZES[name], args) for name in names]
    text = (
        f"Machine: {machine()}; load average (1, 5, 15 min) {load_before} at the start, "
        f"{load()} at the end (the machine may be shared).\n\n{table(results)}"
    )
    if len(results) > 1:
        text += f"\n\nGrowth from one size to the next:\n\n{growth(results)}"
    comparison = huge_comparison(results)
    if comparison:
        text += f"\n\nThe huge slices (L+huge against L, same run):\n\n{comparison}"
    if any(r.by_history for r in results):
        text += f"\n\nBy history length:\n\n{history_table(results)}"
    print()
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    r.size.name: {
                        "server": r.server,
                        "sync": r.sync,
                        "list": r.listing,
                        "cycles": r.cycles,
                        "cycles_gc_tuned": r.tuned,
                        "cycles_fleet_only": r.fleet_only,
                        "cycles_by_history": r.by_history,
                        "cycles_by_history_gc_tuned": r.by_history_tuned,
                    }
                    for r in results
                },
                indent=2,
            )
        )
    if args.write_docs:
        if args.size == "huge":
            write_docs(text, HUGE_BEGIN, HUGE_END)
        else:
            write_docs(text)
    failed = [r.size.name for r in results if "gave_up" in r.cycles]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
