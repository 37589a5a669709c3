"""Headless Chromium for the HTML report tests: Debian's ``chromium``, which .ci/run installs."""

from __future__ import annotations

import pytest

from internal.tools.headless import find_browser


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of Chromium; the test is skipped, saying why, when there is none."""
    found = find_browser()
    if found is None:
        pytest.skip(
            "chromium not found: install Debian's `chromium` package (.ci/run does) to run "
            "the HTML report's browser tests"
        )
    return found
