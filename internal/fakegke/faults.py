"""Scripted failures and delays for API requests.

Why: megamon must survive GKE refusing (403), throttling (429), failing (500/503) and stalling;
a test scripts those conditions up front and then drives the real client into them.

Semantics, chosen to make scripts read top to bottom:

* A fault applies to the next ``count`` API requests whose path starts with ``path_prefix``
  (any API request when it is ``None``); admin requests never match.
* Each request takes at most one *status* fault (one with a status, maybe also a latency) and
  at most one *latency-only* fault, each the oldest pending one that matches. So two status
  faults fail two requests in order, while a latency fault and a status fault pending together
  give one slow failure. The delays of the faults a request takes add up.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from internal.fakegke.errors import GOOGLE_STATUS, invalid_argument


@dataclass
class Fault:
    """One pending fault; ``remaining`` counts the requests it still applies to."""

    status: int | None
    latency_seconds: float
    remaining: int
    path_prefix: str | None

    def matches(self, path: str) -> bool:
        """Whether this fault applies to a request for ``path`` (query string excluded)."""
        prefix = self.path_prefix
        return self.remaining > 0 and (prefix is None or path.startswith(prefix))


@dataclass(frozen=True)
class FaultOutcome:
    """What to do to one request: sleep ``latency_seconds``, then fail with ``status``."""

    status: int | None = None
    latency_seconds: float = 0.0


def make_fault(
    status: int | None, count: int, latency_seconds: float, path_prefix: str | None
) -> Fault:
    """Validate the arguments of a fault and build it; raises a 400 ``ApiError`` when invalid."""
    if status is not None and not (_is_int(status) and status in GOOGLE_STATUS):
        raise invalid_argument(f"fault status must be one of {sorted(GOOGLE_STATUS)}")
    if not _is_int(count) or count < 1:
        raise invalid_argument("fault count must be a positive integer")
    if not _is_number(latency_seconds) or latency_seconds < 0:
        raise invalid_argument("latency_seconds must be a finite non-negative number")
    if status is None and latency_seconds == 0:
        raise invalid_argument("a fault needs a status, a latency_seconds, or both")
    if path_prefix is not None and not isinstance(path_prefix, str):
        raise invalid_argument("path_prefix must be a string")
    return Fault(status, float(latency_seconds), count, path_prefix)


class FaultPlan:
    """The pending faults, oldest first, shared by all handler threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        """Queue ``fault`` behind the ones already pending."""
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        """Drop every pending fault."""
        with self._lock:
            self._faults.clear()

    def pending(self) -> list[Fault]:
        """Copies of the faults that still apply to some request."""
        with self._lock:
            return [replace(fault) for fault in self._faults]

    def take(self, path: str) -> FaultOutcome:
        """Consume the faults that apply to one request for ``path`` and say what they do."""
        with self._lock:
            failing = _first(self._faults, path, lambda f: f.status is not None)
            slow = _first(self._faults, path, lambda f: f.status is None)
            taken = [f for f in (failing, slow) if f is not None]
            for fault in taken:
                fault.remaining -= 1
            self._faults = [f for f in self._faults if f.remaining > 0]
        return FaultOutcome(
            status=failing.status if failing else None,
            latency_seconds=sum(f.latency_seconds for f in taken),
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _first(faults: list[Fault], path: str, wanted: Callable[[Fault], bool]) -> Fault | None:
    return next((f for f in faults if f.matches(path) and wanted(f)), None)
