"""The checked-in BigQuery table functions are what the generator writes from the fleet
report's one SQL text, and that text uses nothing BigQuery lacks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from internal.tools import bigquery_views
from megamon.fleet.bigquery import GENERATED
from megamon.fleet.figures_sql import figures_text

VIEWS = Path(__file__).parents[2] / "deploy" / "bigquery" / "views"


def test_the_checked_in_views_are_what_the_generator_writes() -> None:
    stale = bigquery_views.stale(VIEWS)
    assert not stale, f"{', '.join(stale)} stale: run `make bigquery-views` and commit them"
    assert sorted(p.name for p in VIEWS.glob("*.sql")) == sorted(bigquery_views.generated())


def test_a_hand_edited_or_missing_view_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "views"
    shutil.copytree(VIEWS, copy)
    figures = copy / "figures.sql"
    figures.write_text(figures.read_text().replace("up_time", "uptime", 1))
    (copy / "availability.sql").unlink()
    assert bigquery_views.stale(copy) == ["figures.sql", "availability.sql"]
    assert bigquery_views.main(["--out", str(copy), "--check"]) == 1
    assert "figures.sql: stale" in capsys.readouterr().err
    assert bigquery_views.main(["--out", str(copy)]) == 0
    assert bigquery_views.main(["--out", str(copy), "--check"]) == 0


def test_every_view_says_it_is_generated_and_how() -> None:
    for path in VIEWS.glob("*.sql"):
        assert path.read_text().startswith(GENERATED), path
        assert "make bigquery-views" in GENERATED


def test_the_shared_text_has_no_construct_bigquery_lacks() -> None:
    """No ASOF, SEMI or ANTI join and no DuckDB-only aggregate in any form of the text."""
    for gaps in (False, True):
        for log_only in (False, True):
            text = figures_text(gaps=gaps, slack=1, log_only=log_only).upper()
            for construct in ("ASOF", "SEMI JOIN", "ANTI JOIN", "ARG_MAX_NULL", "EXCLUDE"):
                assert construct not in text, construct
