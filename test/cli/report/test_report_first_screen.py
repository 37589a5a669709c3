"""The report's first screen answers "how much capacity did we lose, and why": on a week of
a small fleet written through megamon's event log (``internal.tools.report_screenshot``,
the picture in docs/report.md), opened in headless Chromium at 1,280 px."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from internal.tools.headless import dump_dom, element_tops, layout_width
from internal.tools.report_screenshot import NOW, SINCE, write_history
from megamon.cli.main import main
from megamon.domain import timestamps
from test.cli.report.test_report_html import PageReader

FIRST_SCREEN_PX = 800
"""What a 1,280 x 800 window shows without scrolling."""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("first-screen") / "history"
    write_history(directory)
    return directory


def _report(history: Path, fmt: str, out: Path | None = None) -> None:
    argv = ["report", "--events-dir", str(history), "--now", timestamps.format_ns(NOW)]
    argv += ["--since", SINCE, "--format", fmt]
    assert main([*argv, *(["-o", str(out)] if out else [])]) == 0


@pytest.fixture(scope="module")
def page(history: Path) -> Path:
    target = history.parent / "report.html"
    _report(history, "html", target)
    return target


def test_the_headline_says_what_each_kind_lost_and_why(page: Path, chromium: str) -> None:
    reader = PageReader()
    reader.feed(dump_dom(page, browser=chromium))
    nodepool, jobset = reader.rows["headline"][1:]
    # chip availability, chips, chip-hours lost, lost by reason, stuck provisioning, counts
    assert nodepool[:3] == ["99.22%", "72", "45.6"]
    assert nodepool[3].endswith("maintenance 21.3 error 16.0 preemption 6.7 node-lost 1.6")
    assert nodepool[4] == "1344.0"  # v6e-pool-b failing and v6e-pool-c stuck: 16 chips each
    assert nodepool[5] == "maintenance 2, error 1, node-lost 1, preemption 1"
    assert jobset[:3] == ["97.52%", "8", "26.0"] and jobset[5] == "nodepool 2"


def test_the_worst_resources_come_first_with_why(page: Path, chromium: str) -> None:
    reader = PageReader()
    reader.feed(dump_dom(page, browser=chromium))
    worst = [(row[0].split()[0], row[1], row[4]) for row in reader.rows["worst-table"] if row]
    assert worst[:4] == [
        ("v6e-pool-b", "1152.0", "provisioning failed or stuck"),
        ("v6e-pool-c", "192.0", "provisioning failed or stuck"),
        ("train/llm-pretrain", "26.0", "nodepool 3h15m"),
        ("v5p-pool-a", "21.3", "maintenance 40m00s, error 2h00m"),
    ]
    timelines = [row[0].split()[0] for row in reader.rows["resources"] if row]
    assert timelines[:4] == [name for name, _, _ in worst[:4]]


def test_the_answers_are_on_the_first_screen_and_the_tables_below(
    page: Path, chromium: str
) -> None:
    tops = element_tops(page, 1280, FIRST_SCREEN_PX, browser=chromium)
    assert tops["headline"] < tops["distributions"] < tops["worst"] < FIRST_SCREEN_PX
    assert tops["worst"] < tops["timelines"] < tops["by-accelerator"] < tops["by-shape"]
    assert layout_width(page, 1280, browser=chromium) <= 1280


def test_tables_are_collapsed_and_distributions_are_drawn_without_script(page: Path) -> None:
    html = page.read_text()
    assert "<script" not in html
    assert re.findall(r'<details id="([a-z-]+)">', html) == [
        "by-accelerator",
        "by-shape",
        "by-chips",
    ]
    charts = re.findall(r'aria-label="(recoveries|provisionings): (\d+)"', html)
    assert charts == [("recoveries", "7"), ("provisionings", "2")]


def test_a_down_band_names_its_reason(page: Path) -> None:
    titles = re.findall(r"<title>(down [^<]*)</title>", page.read_text())
    assert "down 12m00s, node-lost: 2026-05-05T00:00:00Z .. 2026-05-05T00:12:00Z" in titles
    assert all(", " in title.split(":")[0] for title in titles), titles


def test_json_lists_every_interruption_with_its_reason(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(history, "json")
    document = orjson.loads(capsys.readouterr().out)
    pool = next(r for r in document["resources"] if r["name"] == "v5p-pool-a")
    assert [
        (i["reason"], i["downTime"] // 60_000_000_000, i["inWindow"]) for i in pool["interruptions"]
    ] == [
        ("maintenance", 40, True),
        ("error", 120, True),
    ]
    assert pool["interruptions"][0]["start"] == "2026-05-03T00:00:00Z"
    (nodepool, jobset) = document["losses"]
    assert nodepool["interruptionsByReason"] == {
        "maintenance": 2, "error": 1, "node-lost": 1, "preemption": 1
    }  # fmt: skip
    assert nodepool["failedProvisioningChipSeconds"] == 1344 * 3600
    assert jobset["downChipSecondsByReason"] == {"nodepool": 26 * 3600}
    assert document["worst"][0]["name"] == "v6e-pool-b"


def test_the_table_names_the_reasons(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _report(history, "table")
    out = capsys.readouterr().out
    assert out.splitlines()[3] == "Lost in the window, by kind:"
    assert "maintenance 21.3, error 16.0, preemption 6.7, node-lost 1.6" in out
    row = next(line for line in out.splitlines() if re.match(r"nodepool +v5p-pool-a +tpu", line))
    assert row.endswith("maintenance 1, error 1")
