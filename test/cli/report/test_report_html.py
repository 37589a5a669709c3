"""``megamon report --format html`` opened in headless Chromium: the DOM it renders shows
every resource with its figures, a timeline per resource and the aggregate table; the page
asks for nothing from the network."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from internal.tools.headless import dump_dom, layout_width, screenshot
from internal.tools.scripted_history import (
    DOWN,
    FAILED,
    PLANNED,
    UP,
    ScriptedResource,
    export_latest_report,
    record,
)
from megamon.cli.main import main
from megamon.cli.report_html import NO_DATA_COLOUR, STATE_COLOURS
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.publishing.exporters.archives import LocalReportExporter
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import BandState
from test.cli.report.history import FLEET, NOW, NOW_TEXT, V5P, H, M, T, fill

WINDOW_PX = 1280

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STATE_NAMES = {colour: state.value for state, colour in STATE_COLOURS.items()}


@dataclass
class Timeline:
    label: str
    fills: list[str] = field(default_factory=list)


class PageReader(HTMLParser):
    """The rendered DOM as data: table rows by table id, timelines, axis labels."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[list[str]]] = {}
        self.timelines: list[Timeline] = []
        self.axis_labels: list[str] = []
        self.text: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._in_axis = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or ""
            self.rows[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.rows[self._table].append([])
        elif tag == "td":
            self._cell = []
        elif tag == "svg" and a.get("class") == "timeline":
            self.timelines.append(Timeline(a.get("aria-label") or ""))
        elif tag == "rect" and self.timelines and a.get("fill"):
            self.timelines[-1].fills.append(a["fill"] or "")
        elif tag == "div" and a.get("class") == "axis":
            self._in_axis = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._table is not None:
            self.rows[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "div":
            self._in_axis = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data + " ")
        if self._in_axis and data.strip():
            self.axis_labels.append(data.strip())


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("report-html")
    history = directory / "history"
    fill(LocalEventStore(history), LocalReportExporter(history))
    target = directory / "report.html"
    argv = ["report", "--events-dir", str(history), "--now", NOW_TEXT, "--format", "html"]
    assert main([*argv, "-o", str(target)]) == 0
    return target


@pytest.fixture(scope="module")
def rendered(page: Path, chromium: str) -> PageReader:
    reader = PageReader()
    reader.feed(dump_dom(page, browser=chromium))
    return reader


def test_the_page_names_no_url(page: Path) -> None:
    html = page.read_text()
    assert re.findall(r"https?://", html) == []
    assert re.search(r"\b(src|href)=|url\(|@import", html) is None


def test_every_resource_is_shown_with_its_figures(rendered: PageReader) -> None:
    rows = {row[0].split()[0]: row[1:] for row in rendered.rows["resources"] if row}
    # worst first: the most down time (no chips here), then the rest in the report's order
    assert list(rows) == ["np-b", "np-a", "np-old", "team/train"]
    # STATE, AVAIL, DOWN, INTR, REC, MTTR, MTBI, PROVISIONING, (timeline cell)
    assert rows["np-a"][:8] == [
        "up",
        "88.88%",
        "1h00m",
        "1",
        "1",
        "1h00m",
        "8h00m",
        "success 1h00m",
    ]
    assert rows["np-b"][:8] == [
        "failed",
        "76.47%",
        "2h00m",
        "1",
        "0",
        "-",
        "6h30m",
        "success 30m00s",
    ]
    assert rows["np-old"][:2] == ["retired", "100.00%"]
    assert rows["team/train"][7] == "success 30m00s"
    first_cells = [row[0] for row in rendered.rows["resources"] if row]
    assert "jobset · tpu-v5p-slice · 2x2x1 · js-1" in first_cells[3]


def test_every_resource_has_a_timeline_with_its_bands(rendered: PageReader) -> None:
    assert [t.label for t in rendered.timelines] == [
        "timeline of np-b: availability 76.47%",
        "timeline of np-a: availability 88.88%",
        "timeline of np-old: availability 100.00%",
        "timeline of team/train: availability 100.00%",
    ]
    # [0] is the window's background, [1] the resource's span in the up colour, then the
    # bands that are not up, drawn over it
    np_b, np_a, np_old, job = (
        [BandState(STATE_NAMES[f]) for f in t.fills[2:]] for t in rendered.timelines
    )
    assert [t.fills[:2] for t in rendered.timelines] == [
        [NO_DATA_COLOUR, STATE_COLOURS[BandState.UP]]
    ] * 4
    assert np_a == [BandState.PROVISIONING, BandState.DOWN]
    assert np_b == [BandState.PROVISIONING, BandState.EXPECTED_DOWN, BandState.FAILED]
    assert np_old == job == [BandState.PROVISIONING]


def test_the_time_axis_is_labelled_in_utc(rendered: PageReader) -> None:
    """A window within one UTC day: hours only (the date is in the window line), every hour
    labelled but 01:00, which would touch the first label pushed inside the edge."""
    assert rendered.axis_labels == [f"{h:02d}:00" for h in (0, 2, 3, 4, 5, 6, 7, 8, 9)]


def test_times_on_the_page_are_to_the_second(page: Path) -> None:
    html = page.read_text()
    assert "window 2026-06-01T00:00:00Z .. 2026-06-01T10:00:00Z, 10h00m" in html
    assert re.findall(r"\d\d:\d\d:\d\d\.\d+Z", html) == []


def _wide_fleet() -> list[ScriptedResource]:
    """The small history, plus resources with the longest names GKE and Kubernetes allow
    (40-character node pools, 63-character JobSets and namespaces) and many short outages."""
    flapping = tuple((T + 30 * M + k * 7 * M, DOWN if k % 2 else UP) for k in range(1, 60))
    pool = "tpu-v5p-slice-4x4x4-reservation-b-abcdefg"[:40]
    jobset, namespace = "a" * 30 + "-pretraining-run-2026-06-01-" + "b" * 5, "n" * 63
    return [
        *FLEET,
        ScriptedResource(
            Kind.NODEPOOL,
            pool,
            Attrs(nodepool_name=pool, **V5P),
            ((T, DOWN), (T + 30 * M, UP), *flapping, (T + 9 * H, PLANNED), (T + 9 * H + M, FAILED)),
        ),
        ScriptedResource(
            Kind.JOBSET,
            "uid-" + "c" * 32,
            Attrs(jobset_name=jobset, jobset_namespace=namespace, jobset_uid="u", **V5P),
            ((T + H, DOWN), (T + 2 * H, UP)),
        ),
    ]


def test_the_page_is_no_wider_than_a_1280_px_window(
    tmp_path: Path, chromium: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both tables and every timeline fit: no horizontal scroll bar at 1,280 px, with the
    longest names there are."""
    history = tmp_path / "history"
    store = LocalEventStore(history)
    export_latest_report(
        LocalReportExporter(history), store, record(store, _wide_fleet(), NOW), NOW
    )
    target = tmp_path / "wide.html"
    argv = ["report", "--events-dir", str(history), "--now", NOW_TEXT, "--format", "html"]
    assert main([*argv, "-o", str(target)]) == 0
    capsys.readouterr()
    assert layout_width(target, WINDOW_PX, browser=chromium) <= WINDOW_PX


def test_the_aggregate_table_is_shown(rendered: PageReader) -> None:
    rows = [row for row in rendered.rows["aggregates"] if row]
    assert [row[:5] for row in rows] == [
        ["nodepool", "tpu-v5p-slice", "2x2x1", "2", "82.85%"],
        ["nodepool", "tpu-v6e-slice", "4x4", "1", "100.00%"],
        ["jobset", "tpu-v5p-slice", "2x2x1", "1", "100.00%"],
    ]
    assert rows[0][5:12] == ["14h30m", "3h00m", "1h00m", "2", "1", "1h00m", "7h15m"]
    text = " ".join(" ".join(rendered.text).split())
    assert "expected-down and provisioning time are excluded from the denominator" in text


def test_the_page_renders_to_a_picture(page: Path, chromium: str, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    screenshot(page, png, 1280, 600, browser=chromium)
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 600)
