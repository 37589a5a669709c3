"""What is running: the package version, and the commit and build date it was made from.

A user who reads ``megamon --version`` or ``megamon_build_info`` must be able to tell which
code answers. An image is built from a commit it cannot see at run time, so its Dockerfile
bakes the commit and date into the environment (``MEGAMON_BUILD_COMMIT``,
``MEGAMON_BUILD_DATE``); a checkout run from its own tree (``make demo``, a developer's
``.venv``) has no such environment but is a git work tree, so git says which commit it is
and when that commit was made. Anything else (an installed wheel with no build arguments)
says ``unknown`` rather than guessing.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from megamon import __version__

BUILD_COMMIT_ENV = "MEGAMON_BUILD_COMMIT"
BUILD_DATE_ENV = "MEGAMON_BUILD_DATE"
UNKNOWN = "unknown"
_GIT_TIMEOUT_S = 5.0
_CHECKOUT = Path(__file__).resolve().parent.parent
"""The directory above the package: a git work tree when megamon runs from a checkout."""


@dataclass(frozen=True, slots=True)
class BuildIdentity:
    """The version of the package, the commit and the date of the build."""

    version: str
    commit: str
    date: str

    def describe(self) -> str:
        """One line for ``--version``: ``0.2.0 (commit 1a2b3c4, 2026-12-01T10:00:00Z)``."""
        if self.commit == UNKNOWN and self.date == UNKNOWN:
            return self.version
        return f"{self.version} (commit {self.commit}, {self.date})"


def _git(*args: str) -> str | None:
    """One line of git's answer about the checkout megamon runs from, or ``None``."""
    if not (_CHECKOUT / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(_CHECKOUT), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            env={**os.environ, "TZ": "UTC"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    answer = done.stdout.strip()
    return answer if done.returncode == 0 and answer else None


def _checkout_identity() -> tuple[str, str]:
    """The checkout's HEAD commit and its commit date (UTC); a tree with uncommitted changes
    is marked ``-dirty``, since its code is not the commit's."""
    commit = _git("rev-parse", "--short=12", "HEAD")
    if commit is None:
        return UNKNOWN, UNKNOWN
    if _git("status", "--porcelain", "--untracked-files=no", "--", "megamon") is not None:
        commit += "-dirty"
    date = _git("show", "-s", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--format=%cd", "HEAD")
    return commit, date or UNKNOWN


def build_identity() -> BuildIdentity:
    """The image's baked commit and date when set, else the checkout's, else ``unknown``."""
    commit = os.environ.get(BUILD_COMMIT_ENV, "")
    date = os.environ.get(BUILD_DATE_ENV, "")
    if not commit or commit == UNKNOWN:
        found_commit, found_date = _checkout_identity()
        commit = found_commit
        date = date if date and date != UNKNOWN else found_date
    return BuildIdentity(__version__, commit or UNKNOWN, date or UNKNOWN)
