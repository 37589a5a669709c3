"""Write ``deploy/bigquery/views/*.sql`` from the fleet report's one SQL text.

    python -m internal.tools.bigquery_views [--out deploy/bigquery/views] [--check]
    (or ``make bigquery-views``)

The figures are written once, in ``megamon/fleet/figures_sql.py``; the BigQuery table
functions are that text with the log's reading ahead of it (``megamon/fleet/bigquery.py``),
transpiled by sqlglot. ``--check`` writes nothing and exits 1 naming every file that differs
from what would be written (``test/fleet/test_bigquery_views.py`` checks the same).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from megamon.fleet.bigquery import VIEWS

VIEWS_DIR = Path(__file__).parents[2] / "deploy" / "bigquery" / "views"


def generated() -> dict[str, str]:
    """Every view's file name and the text the generator writes for it now."""
    return {f"{name}.sql": make() for name, make in VIEWS.items()}


def stale(directory: Path) -> list[str]:
    """The files of ``directory`` that differ from (or lack) what would be written."""
    return [
        name
        for name, text in generated().items()
        if not (directory / name).is_file() or (directory / name).read_text() != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=VIEWS_DIR)
    parser.add_argument("--check", action="store_true", help="only say which files are stale")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.out)
        for name in names:
            print(f"{args.out / name}: stale; run make bigquery-views", file=sys.stderr)
        return 1 if names else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in generated().items():
        (args.out / name).write_text(text)
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
