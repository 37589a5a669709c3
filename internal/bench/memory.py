"""The memory of this process's own program, for benchmarks that measure it in a child.

``getrusage(RUSAGE_SELF).ru_maxrss`` is not that: Linux carries the parent's high-water mark
across fork and exec into the child, so a probe started by a large process (pytest in a full
run, a driver that has just built a synthetic fleet) reports at least its parent's peak. The
kernel's ``VmHWM`` is the high-water mark of the current address space, which exec makes
new. ``ru_maxrss`` remains the fallback where ``/proc`` is not there.
"""

from __future__ import annotations

import resource
from pathlib import Path

_STATUS = Path("/proc/self/status")


def _status_mb(field: str) -> float | None:
    try:
        lines = _STATUS.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return None


def peak_rss_mb() -> float:
    """The peak resident memory of this program since it started (exec), in MiB."""
    found = _status_mb("VmHWM")
    return found if found is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """The resident memory now, in MiB (0 where ``/proc`` is not there)."""
    return _status_mb("VmRSS") or 0.0
