"""The pictures in docs/images show the report as it is: each was taken (``make images``)
of a page whose digest it keeps beside it; the same page made now must have that digest,
or the picture is older than the report's template and figures."""

from __future__ import annotations

from pathlib import Path

from internal.tools.report_screenshot import (
    DEFAULT_OUT,
    FLEET_OUT,
    digest_path,
    page_digest,
    render,
    render_fleet,
    write_fleet,
    write_history,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_report_picture_shows_the_report_as_it_is(tmp_path: Path) -> None:
    picture = REPO / DEFAULT_OUT
    recorded = digest_path(picture)
    assert picture.is_file() and recorded.is_file(), "run `make images`"
    write_history(tmp_path / "history")
    page = tmp_path / "report.html"
    render(tmp_path / "history", page)
    assert page_digest(page) == recorded.read_text().strip(), (
        f"{DEFAULT_OUT} is older than the report it shows: run `make images` and commit it"
    )


def test_the_fleet_picture_shows_the_fleet_page_as_it_is(tmp_path: Path) -> None:
    picture = REPO / FLEET_OUT
    recorded = digest_path(picture)
    assert picture.is_file() and recorded.is_file(), "run `make images`"
    write_fleet(tmp_path / "clusters")
    page = tmp_path / "fleet.html"
    render_fleet(tmp_path / "clusters", page)
    assert page_digest(page) == recorded.read_text().strip(), (
        f"{FLEET_OUT} is older than the fleet page it shows: run `make images` and commit it"
    )
