"""Fault injection: make chosen requests fail (or stall) the way a sick API server does.

megamon must survive 500s, 429s with Retry-After, 503s during upgrades and slow responses;
tests arm a rule ("the next 2 list calls under /api/v1/nodes answer 500") from Python or via
`POST /admin/faults`, and the handler consults the rules before serving each request.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass
class Fault:
    """A rule: requests matching it fail with `status` (None: only delayed) `count` times."""

    status: int | None = 500
    count: int | None = 1  # None: forever
    path_prefix: str = ""
    verb: str | None = None  # Kubernetes verb: get, list, watch, create, update, patch, delete
    method: str | None = None  # HTTP method: GET, POST, ...
    message: str | None = None
    retry_after: int | None = None
    delay: float = 0.0
    hits: int = 0

    def matches(self, method: str, path: str, verb: str) -> bool:
        if self.count is not None and self.count <= 0:
            return False
        if not path.startswith(self.path_prefix):
            return False
        if self.verb is not None and self.verb.lower() != verb:
            return False
        return self.method is None or self.method.upper() == method

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        """A rule from the admin endpoint's JSON (camelCase or snake_case keys)."""

        def pick(*names: str, default: Any = None) -> Any:
            for name in names:
                if name in data:
                    return data[name]
            return default

        def optional_int(value: Any) -> int | None:
            return None if value is None else int(value)

        return cls(
            status=optional_int(pick("status", default=500)),
            count=optional_int(pick("count", default=1)),
            path_prefix=str(pick("pathPrefix", "path_prefix", "path", default="")),
            verb=pick("verb"),
            method=pick("method"),
            message=pick("message"),
            retry_after=optional_int(pick("retryAfter", "retry_after")),
            delay=float(pick("delay", "delaySeconds", default=0.0)),
        )


class FaultInjector:
    """Thread-safe rule list; the first matching rule with budget left applies."""

    def __init__(self) -> None:
        self._rules: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._rules.append(fault)
        return fault

    def fail_next(
        self,
        count: int | None = 1,
        *,
        status: int = 500,
        path_prefix: str = "",
        verb: str | None = None,
        method: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
    ) -> Fault:
        """Fail the next `count` matching requests with `status` (None count: until cleared)."""
        return self.add(Fault(status, count, path_prefix, verb, method, message, retry_after))

    def delay_next(
        self,
        seconds: float,
        count: int | None = 1,
        *,
        path_prefix: str = "",
        verb: str | None = None,
    ) -> Fault:
        """Stall the next `count` matching requests by `seconds`, then serve them normally."""
        return self.add(Fault(None, count, path_prefix, verb, delay=seconds))

    def take(self, method: str, path: str, verb: str) -> Fault | None:
        """Consume one use of the first rule matching this request, if any."""
        with self._lock:
            for fault in self._rules:
                if fault.matches(method, path, verb):
                    fault.hits += 1
                    if fault.count is not None:
                        fault.count -= 1
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    @property
    def rules(self) -> list[Fault]:
        with self._lock:
            return list(self._rules)
