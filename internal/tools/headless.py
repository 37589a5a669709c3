"""Headless Chromium for rendering megamon's HTML report: the tests read the DOM it renders
(``--dump-dom``) and ``report_screenshot`` takes the picture in ``docs/images``.

Chromium is started fully offline-minded (no background networking, component updates, sync
or QUIC) with a throw-away profile, so rendering a page never reaches the network by itself.
``--no-sandbox`` is needed when running as root, as in CI containers.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_SECONDS = 120.0
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


class BrowserError(RuntimeError):
    """Chromium is missing or failed to render the page."""


def find_browser() -> str | None:
    """The path of an installed Chromium, if any."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(page: Path, *extra: str, browser: str | None = None) -> subprocess.CompletedProcess[bytes]:
    browser = browser or find_browser()
    if browser is None:
        raise BrowserError("no chromium on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="megamon-chromium-") as profile:
        command = [browser, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]
        result = subprocess.run(command, capture_output=True, timeout=TIMEOUT_SECONDS, check=False)
    if result.returncode != 0:
        tail = result.stderr.decode(errors="replace")[-2000:]
        raise BrowserError(f"chromium exited with {result.returncode}: {tail}")
    return result


def dump_dom(page: Path, browser: str | None = None) -> str:
    """The DOM of ``page`` after Chromium parsed and laid it out, serialized as HTML."""
    return _run(page, "--dump-dom", browser=browser).stdout.decode()


def screenshot(page: Path, png: Path, width: int, height: int, browser: str | None = None) -> None:
    """A PNG of the top ``width`` x ``height`` pixels of ``page``."""
    png.parent.mkdir(parents=True, exist_ok=True)
    size = f"--window-size={width},{height}"
    _run(page, f"--screenshot={png.resolve()}", size, browser=browser)
    if not png.is_file():
        raise BrowserError(f"chromium wrote no screenshot to {png}")


_MEASURE = """<script>
addEventListener("load", () => {
  const root = document.documentElement;
  if (%(opened)s) { for (const d of document.querySelectorAll("details")) d.open = true; }
  const right = t => Math.ceil(t.getBoundingClientRect().right);
  const widest = Math.max(root.scrollWidth, document.body.scrollWidth,
    ...Array.from(document.querySelectorAll("table"), right));
  root.setAttribute("data-layout", JSON.stringify({viewport: innerWidth, widest: widest}));
});
</script>"""


def layout_width(
    page: Path,
    width: int,
    height: int = 900,
    browser: str | None = None,
    *,
    opened: bool = False,
) -> int:
    """How wide ``page`` lays out in a ``width`` x ``height`` window: the widest of the
    document's scroll width and every table's right edge, in CSS pixels; ``opened``: with
    every ``<details>`` open, as a reader who opened them all sees it.

    The report has no script of its own; a copy of it with a measuring script appended is
    rendered (``--dump-dom`` after load), so the page measured is otherwise byte for byte the
    one users open.
    """
    script = _MEASURE % {"opened": "true" if opened else "false"}
    layout = measured(page, script, "data-layout", (width, height), browser)
    if int(layout["viewport"]) != width:
        raise BrowserError(f"chromium laid out at {layout['viewport']} px, not {width}")
    return int(layout["widest"])


_TOPS = """<script>
addEventListener("load", () => {
  const tops = {};
  for (const e of document.querySelectorAll("[id]")) {
    tops[e.id] = Math.floor(e.getBoundingClientRect().top + scrollY);
  }
  document.documentElement.setAttribute("data-tops", JSON.stringify(tops));
});
</script>"""


def element_tops(
    page: Path, width: int, height: int = 900, browser: str | None = None
) -> dict[str, int]:
    """Where each element with an ``id`` starts, in CSS pixels from the top of ``page`` laid
    out in a ``width`` x ``height`` window: what a reader sees without scrolling. Measured on
    a copy with a script appended, as ``layout_width`` does."""
    tops = measured(page, _TOPS, "data-tops", (width, height), browser)
    return {key: int(value) for key, value in tops.items()}


def measured(
    page: Path, script: str, attribute: str, size: tuple[int, int], browser: str | None = None
) -> Any:
    """What ``script``, appended to a copy of ``page`` and run after load in a window of
    ``size`` (width, height), wrote as JSON into the root element's ``attribute``."""
    width, height = size
    with tempfile.TemporaryDirectory(prefix="megamon-measure-") as work:
        copy = Path(work) / page.name
        copy.write_text(page.read_text(encoding="utf-8") + script, encoding="utf-8")
        dom = _run(
            copy, "--dump-dom", f"--window-size={width},{height}", browser=browser
        ).stdout.decode()
    found = re.search(f'{attribute}="([^"]*)"', dom)
    if found is None:
        raise BrowserError("the measuring script did not run")
    return json.loads(html.unescape(found.group(1)))
