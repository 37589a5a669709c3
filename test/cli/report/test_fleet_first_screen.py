"""The fleet page (``megamon report --clusters …``) opens on the one-history page's first
screen over every cluster — what the window cost and why, the distributions, the worst
resources naming their cluster — then one timeline per cluster and kind that opens onto its
resources'; it fits 1,280 px in headless Chromium. Its figures are the cluster's own
report's. The histories are written through megamon's event log (``write_history``, the week
of ``internal.tools.report_screenshot``), one copy per cluster."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from internal.tools.headless import dump_dom, element_tops, layout_width, measured
from internal.tools.report_screenshot import NOW, SINCE, write_history
from megamon.cli.main import main
from megamon.domain import timestamps
from test.cli.report.test_report_html import PageReader

CLUSTERS = ("east", "west")
WINDOW_PX = 1280
FIRST_SCREEN_PX = 900
"""What a 1,280 x 900 window shows without scrolling (``report_screenshot.SIZE``)."""


class RowReader(HTMLParser):
    """The timeline rows of the fleet page: per ``<details>`` group, the texts of its row's
    cells (the ``summary``) and of each member row's."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: dict[str, list[list[str]]] = {}
        self._group: str | None = None
        self._row: list[str] | None = None
        self._depth = 0  # elements open inside the current row
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "details" and "group" in (a.get("class") or ""):
            self._group = a.get("id") or ""
            self.groups[self._group] = []
        elif self._group is not None and "row" in (a.get("class") or "").split():
            self._row, self._depth = [], 0
            self.groups[self._group].append(self._row)
        elif self._row is not None:
            self._depth += 1
            if self._depth == 1 and tag == "span":
                self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if self._row is None:
            if tag == "details":
                self._group = None
            return
        if self._depth == 0:
            self._row = None
            return
        if self._depth == 1 and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data + " ")


def _report(argv: list[str], out: Path) -> None:
    window = ["--now", timestamps.format_ns(NOW), "--since", SINCE, "--format", "html"]
    assert main(["report", *argv, *window, "-o", str(out)]) in (0,)


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fleet-page") / "clusters"
    for name in CLUSTERS:
        write_history(base / name)
    return base


@pytest.fixture(scope="module")
def fleet_page(clusters: Path) -> Path:
    page = clusters.parent / "fleet.html"
    _report(["--events-dir", str(clusters), "--clusters", "*"], page)
    return page


def _read(page: Path) -> PageReader:
    reader = PageReader()
    reader.feed(page.read_text())
    return reader


def _groups(page: Path) -> dict[str, list[list[str]]]:
    reader = RowReader()
    reader.feed(page.read_text())
    return reader.groups


def test_the_first_screen_comes_first_and_the_page_fits_1280px(
    fleet_page: Path, chromium: str
) -> None:
    tops = element_tops(fleet_page, WINDOW_PX, FIRST_SCREEN_PX, browser=chromium)
    assert tops["headline"] < tops["distributions"] < tops["worst"] < tops["timelines"]
    assert tops["timelines"] < tops["group-0"] < FIRST_SCREEN_PX
    assert tops["group-0"] < tops["fleet-shapes"] < tops["by-cluster"] < tops["resource-table"]
    assert layout_width(fleet_page, WINDOW_PX, browser=chromium) <= WINDOW_PX
    assert layout_width(fleet_page, WINDOW_PX, browser=chromium, opened=True) <= WINDOW_PX


_OPEN_FIRST_GROUP = """<script>
addEventListener("load", () => {
  const group = document.getElementById("group-0");
  const next = document.getElementById("group-1");
  const shown = () => Array.from(group.querySelectorAll(".row.resource"),
                                 r => r.checkVisibility());
  const closed = {shown: shown(), next: next.getBoundingClientRect().top};
  group.open = true;
  const opened = {shown: shown(), next: next.getBoundingClientRect().top};
  document.documentElement.setAttribute("data-rows", JSON.stringify({closed, opened}));
});
</script>"""


def test_a_cluster_and_kind_row_opens_onto_its_resources(fleet_page: Path, chromium: str) -> None:
    """Without script, every resource's row is in the page, inside its cluster and kind's
    ``<details>``: hidden until the reader opens it, then laid out."""
    html = fleet_page.read_text()
    assert "<script" not in html
    heights = measured(fleet_page, _OPEN_FIRST_GROUP, "data-rows", (WINDOW_PX, 900), chromium)
    closed, opened = heights["closed"], heights["opened"]
    assert closed["shown"] and not any(closed["shown"]) and all(opened["shown"])
    assert opened["next"] > closed["next"]  # the rows below make room for its resources
    groups = _groups(fleet_page)
    heads = [rows[0][0] for rows in groups.values()]
    # the group of the worst resource first (east's failed pool), each cluster's kinds apart
    assert heads == [
        "east nodepool · 6 resources",
        "west nodepool · 6 resources",
        "east jobset · 1 resource",
        "west jobset · 1 resource",
    ]
    for rows in groups.values():
        cluster, kind = rows[0][0].split()[:2]
        members = rows[1:]
        assert len(members) == int(rows[0][0].split("·")[1].split()[0])
        assert all(f" {cluster} · {kind} · " in f" {m[0]}" for m in members), members
    # the group row's tooltips say how many of its resources were in the state shown: while
    # v5p-pool-a failed (error, 2 h), v6e-pool-b had failed too, of the 4 pools then
    assert "<title>failed 2 of 4, 2h00m: 2026-05-06T00:00:00Z .. 2026-05-06T02:00:00Z" in html


def _one_and_fleet(clusters: Path) -> tuple[PageReader, PageReader, Path, Path]:
    one, fleet = clusters.parent / "east.html", clusters.parent / "fleet-east.html"
    _report(["--events-dir", str(clusters / "east")], one)
    _report(["--events-dir", str(clusters), "--clusters", "east"], fleet)
    return _read(one), _read(fleet), one, fleet


def test_a_fleet_of_one_cluster_has_the_clusters_own_figures(clusters: Path) -> None:
    one, fleet, one_page, fleet_page = _one_and_fleet(clusters)
    assert fleet.rows["headline"] == one.rows["headline"]
    assert fleet.rows["chips"] == one.rows["chips"]
    worst_one = [row[1:] for row in one.rows["worst-table"] if row]
    worst_fleet = [row[1:] for row in fleet.rows["worst-table"] if row]
    assert worst_fleet == worst_one[: len(worst_fleet)] and worst_fleet
    charts = r'aria-label="(recoveries|provisionings): (\d+)"'
    assert re.findall(charts, fleet_page.read_text()) == re.findall(charts, one_page.read_text())
    # each resource's row: the same figures, the same bands and tooltips
    members = [row for rows in _groups(fleet_page).values() for row in rows[1:]]
    own = {row[0]: row[1:-1] for row in one.rows["resources"] if row}
    assert len(members) == len(own)
    for row in members:
        name, shape = row[0].split(" ", 1)
        assert row[1:-1] == own[f"{name} {shape.removeprefix('east · ')}"]
    titles = r"<title>((?:down|failed) [^<]*)</title>"
    fleet_titles = re.findall(titles, fleet_page.read_text())
    assert set(re.findall(titles, one_page.read_text())) <= set(fleet_titles)


def test_two_clusters_add_up(fleet_page: Path, clusters: Path) -> None:
    """The same history in two clusters: twice the chips and the chip-hours lost, the same
    availability; each worst resource named with its cluster."""
    one, _, _, _ = _one_and_fleet(clusters)
    fleet = _read(fleet_page)
    for mine, own in zip(fleet.rows["headline"][1:], one.rows["headline"][1:], strict=True):
        assert mine[0] == own[0]  # chip availability
        assert int(mine[1]) == 2 * int(own[1])
        assert float(mine[2]) == pytest.approx(2 * float(own[2]))
    worst = [row[0] for row in fleet.rows["worst-table"] if row]
    assert worst[:2] == [
        "v6e-pool-b east · nodepool · tpu-v6e-slice · 4x4",
        "v6e-pool-b west · nodepool · tpu-v6e-slice · 4x4",
    ]


def test_the_tables_are_collapsed_below(fleet_page: Path, chromium: str) -> None:
    html = fleet_page.read_text()
    assert re.findall(r'<details id="([a-z-]+)">', html) == [
        "fleet-shapes",
        "by-cluster",
        "resource-table",
        "by-chips",
    ]
    reader = PageReader()
    reader.feed(dump_dom(fleet_page, browser=chromium))
    clusters = {row[0] for row in reader.rows["cluster-aggregates"] if row}
    assert clusters == set(CLUSTERS)
