"""What a user reads to tell what runs: ``megamon --version`` and ``megamon_build_info``.

The version is the package's (the release, from pyproject.toml); the commit and date are the
image's build arguments when it has them, else the checkout's own commit, read from git.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from megamon import __version__
from megamon.app import build_info
from megamon.build import BUILD_COMMIT_ENV, BUILD_DATE_ENV, UNKNOWN, build_identity
from megamon.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TZ": "UTC"},
    )
    return done.stdout.strip()


def _checkout() -> bool:
    return (REPO / ".git").exists() and Path(__import__("megamon").__file__).is_relative_to(REPO)


def test_the_package_version_is_the_release_in_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"] == "0.2.0"


def test_the_image_environment_names_the_commit_and_date(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(BUILD_COMMIT_ENV, "1a2b3c4d5e6f")
    monkeypatch.setenv(BUILD_DATE_ENV, "2026-12-01T10:00:00Z")
    info = build_info()
    assert (info.version, info.commit, info.date) == (
        __version__,
        "1a2b3c4d5e6f",
        "2026-12-01T10:00:00Z",
    )
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    shown = capsys.readouterr().out.strip()
    assert shown == f"megamon {__version__} (commit 1a2b3c4d5e6f, 2026-12-01T10:00:00Z)"


@pytest.mark.skipif(not _checkout(), reason="megamon is not imported from a git checkout")
def test_a_checkout_names_its_own_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUILD_COMMIT_ENV, raising=False)
    monkeypatch.delenv(BUILD_DATE_ENV, raising=False)
    identity = build_identity()
    head = _git("rev-parse", "--short=12", "HEAD")
    assert identity.commit in (head, f"{head}-dirty")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "megamon") != ""
    assert identity.commit.endswith("-dirty") is dirty
    assert identity.date == _git(
        "show", "-s", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--format=%cd", "HEAD"
    )
    assert identity.date != UNKNOWN
    info = build_info()
    assert (info.commit, info.date) == (identity.commit, identity.date)
