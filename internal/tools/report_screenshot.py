"""Build a demo history and take the screenshot of ``megamon report --format html`` shown in
``docs/report.md``.

    python -m internal.tools.report_screenshot [--out docs/images/report.png] [--keep DIR]
    python -m internal.tools.report_screenshot --fleet [--out docs/images/fleet.png]
    (or ``make images``)

``--fleet`` photographs the fleet page instead: the same week in two clusters, ``east`` and
``west``, reported with ``--clusters '*'``.

The history is a week of a small TPU fleet written through the real ``EventLog`` into a
``LocalEventStore`` (so it is exactly what ``megamon run`` would leave), plus the
``reports/latest.json`` the gcs exporter would have written to label the live resources.
Everything is at fixed instants, so the picture only changes when the page does. Beside the
picture goes the SHA-256 of the page it shows (``<picture>.sha256``): the page made again from
the same history has the same digest until the report's template or figures change, and
``test_docs_images`` fails from then until the picture is taken again.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from internal.tools.headless import screenshot
from internal.tools.scripted_history import (
    DOWN,
    FAILED,
    PLANNED,
    UP,
    ScriptedResource,
    because,
    export_latest_report,
    record,
)
from megamon.cli.main import main as megamon
from megamon.domain import timestamps
from megamon.domain.interruptions import ERROR, MAINTENANCE, NODE_LOST, NODEPOOL, PREEMPTION
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.publishing.exporters.archives import LocalReportExporter
from megamon.stores.local import LocalEventStore

NOW = timestamps.parse("2026-05-08T00:00:00Z")
SINCE = "7d"
M = 60 * timestamps.NANOS_PER_SECOND
H = 60 * M
D = 24 * H
WEEK_AGO = NOW - 7 * D
SIZE = (1280, 900)
"""A laptop's window: the first screen a reader sees."""
DEFAULT_OUT = Path("docs/images/report.png")
FLEET_OUT = Path("docs/images/fleet.png")
FLEET_CLUSTERS = ("east", "west")
DIGEST_SUFFIX = ".sha256"


def page_digest(page: Path) -> str:
    """The SHA-256 of the page a picture shows."""
    return hashlib.sha256(page.read_bytes()).hexdigest()


def digest_path(png: Path) -> Path:
    return png.with_name(png.name + DIGEST_SUFFIX)


CHIPS = {"2x2x2": 8, "4x4": 16, "2x4": 8}


def _pool(
    name: str,
    accelerator: str,
    topology: str,
    *states: tuple[int, str],
    retired: int | None = None,
) -> ScriptedResource:
    attrs = Attrs(
        nodepool_name=name,
        tpu_accelerator=accelerator,
        tpu_topology=topology,
        tpu_chip_count=CHIPS[topology],
    )
    return ScriptedResource(Kind.NODEPOOL, name, attrs, states, retired)


def demo_fleet() -> list[ScriptedResource]:
    """A week of a small fleet: outages, a failed interruption, a planned stop, a stockout,
    a pool still provisioning, a retired pool and a JobSet that completed."""
    t = WEEK_AGO
    job_attrs = Attrs(
        jobset_name="llm-pretrain",
        jobset_namespace="train",
        jobset_uid="6f1c2a7e",
        tpu_accelerator="tpu-v5p-slice",
        tpu_topology="2x2x2",
        tpu_chip_count=8,
    )
    return [
        _pool(
            "v5p-pool-a",
            "tpu-v5p-slice",
            "2x2x2",
            (t - 3 * D, DOWN),
            (t - 3 * D + 25 * M, UP),
            (t + 2 * D, because(DOWN, MAINTENANCE)),
            (t + 2 * D + 40 * M, UP),
            (t + 5 * D, because(FAILED, ERROR)),
            (t + 5 * D + 2 * H, UP),
        ),
        _pool(
            "v5p-pool-b",
            "tpu-v5p-slice",
            "2x2x2",
            (t + 6 * H, DOWN),
            (t + 6 * H + 18 * M, UP),
            (t + 4 * D, because(DOWN, NODE_LOST)),
            (t + 4 * D + 12 * M, UP),
        ),
        _pool(
            "v6e-pool-a",
            "tpu-v6e-slice",
            "4x4",
            (t - D, DOWN),
            (t - D + 9 * M, UP),
            (t + 3 * D, PLANNED),
            (t + 3 * D + 3 * H, UP),
            (t + 6 * D, because(DOWN, MAINTENANCE)),
            (t + 6 * D + H, UP),
        ),
        _pool("v6e-pool-b", "tpu-v6e-slice", "4x4", (t + 4 * D, DOWN), (t + 4 * D + 2 * H, FAILED)),
        _pool("v6e-pool-c", "tpu-v6e-slice", "4x4", (t + 6 * D + 12 * H, DOWN)),
        _pool(
            "v5e-legacy",
            "tpu-v5-lite-podslice",
            "2x4",
            (t - 2 * D, DOWN),
            (t - 2 * D + 30 * M, UP),
            (t + D, because(DOWN, PREEMPTION)),
            (t + D + 50 * M, UP),
            retired=t + 3 * D,
        ),
        ScriptedResource(
            Kind.JOBSET,
            "6f1c2a7e",
            job_attrs,
            (
                (t + 12 * H, DOWN),
                (t + 12 * H + 35 * M, UP),
                (t + 2 * D, because(DOWN, NODEPOOL)),
                (t + 2 * D + 55 * M, UP),
                (t + 5 * D, because(DOWN, NODEPOOL)),
                (t + 5 * D + 2 * H + 20 * M, UP),
                (t + 6 * D, PLANNED),
            ),
        ),
    ]


def write_history(directory: Path) -> None:
    """The demo fleet's week in ``directory``, with the report of ``NOW`` labelling it."""
    store = LocalEventStore(directory)
    latest = record(store, demo_fleet(), NOW)
    export_latest_report(LocalReportExporter(directory), store, latest, NOW)


def write_fleet(base: Path) -> None:
    """The demo fleet's week in each of ``FLEET_CLUSTERS``, under ``base``."""
    for cluster in FLEET_CLUSTERS:
        write_history(base / cluster)


def render_fleet(base: Path, page: Path) -> None:
    """The fleet page of every cluster under ``base``."""
    render(base, page, ["--clusters", "*"])


def render(directory: Path, page: Path, extra: tuple[str, ...] | list[str] = ()) -> None:
    status = megamon(
        [
            "report",
            "--events-dir",
            str(directory),
            *extra,
            "--now",
            timestamps.format_ns(NOW),
            "--since",
            SINCE,
            "--format",
            "html",
            "-o",
            str(page),
        ]
    )
    if status != 0:
        raise SystemExit(f"megamon report exited with {status}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, help=f"default: {DEFAULT_OUT}, or {FLEET_OUT} with --fleet"
    )
    parser.add_argument("--keep", type=Path, help="build the history in this directory")
    parser.add_argument("--fleet", action="store_true", help="the fleet page, two clusters")
    args = parser.parse_args()
    out: Path = args.out or (FLEET_OUT if args.fleet else DEFAULT_OUT)
    with tempfile.TemporaryDirectory(prefix="megamon-report-demo-") as scratch:
        directory = args.keep or Path(scratch) / "history"
        page = Path(scratch) / "report.html"
        if args.fleet:
            write_fleet(directory)
            render_fleet(directory, page)
        else:
            write_history(directory)
            render(directory, page)
        screenshot(page, out, *SIZE)
        digest_path(out).write_text(page_digest(page) + "\n")
    print(f"{out}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
