"""Time formats of the simulation: Kubernetes timestamps and simulated offsets.

Why: condition times are what megamon reads to tell a blip from a lost node, so they must be
RFC 3339 UTC exactly as Kubernetes writes them (second precision, ``Z``); and a scenario log
reads best as offsets on the simulated clock (``T+00:07:15``). Both formats live here so the
builders, the fleet and the runner cannot drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def rfc3339(epoch_seconds: float) -> str:
    """``epoch_seconds`` as Kubernetes writes a ``metav1.Time``: ``2026-05-04T18:23:24Z``."""
    return datetime.fromtimestamp(int(epoch_seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def offset(at: timedelta) -> str:
    """A simulated offset as ``T+HH:MM:SS`` (hours grow past 24 rather than wrap)."""
    seconds = int(at.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"T+{hours:02d}:{minutes:02d}:{secs:02d}"
