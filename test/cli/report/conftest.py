"""Headless Chromium for the HTML report test, installed once per session if missing."""

from __future__ import annotations

import os
import subprocess

import pytest

from internal.tools.headless import find_browser

INSTALL_TIMEOUT_SECONDS = 1200


def _apt_get(*args: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        ["apt-get", *args],
        check=True,
        capture_output=True,
        env=env,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of Chromium; installs Debian's ``chromium`` when missing and running as root,
    and skips (saying why) when that is impossible."""
    found = find_browser()
    if found:
        return found
    if os.geteuid() != 0:
        pytest.skip("chromium is not installed, and installing it (apt-get) needs root")
    try:
        _apt_get("update")
        _apt_get("install", "-y", "chromium")
    except (OSError, subprocess.SubprocessError) as err:
        stderr = getattr(err, "stderr", b"") or b""
        pytest.skip(f"apt-get install chromium failed: {err} {stderr.decode()[-300:]}")
    found = find_browser()
    if not found:
        pytest.skip("apt-get installed chromium but no browser is on PATH")
    return found
