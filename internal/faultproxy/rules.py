"""Fault rules and request bookkeeping for :mod:`internal.faultproxy`.

Tests arm rules ("fail the next 3 uploads with 503") from the test thread while the
proxy's connection threads consume them, so everything here sits behind one lock.
Keeping the decision logic apart from the HTTP plumbing lets the proxy ask a single
question per request: which rule, if any, fires for this method and target.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum


class Action(StrEnum):
    """What the proxy did with a request."""

    FORWARD = "forward"
    FAIL = "fail"
    STALL = "stall"
    RESET = "reset"
    DROP = "drop_response"


def compile_pattern(pattern: str | re.Pattern[str] | None) -> re.Pattern[str] | None:
    """Compile an optional path filter (a regular expression searched in the target)."""
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    return re.compile(pattern)


@dataclass(eq=False)
class Rule:
    """One armed fault: fires for the next ``remaining`` matching requests.

    ``method`` matches case-insensitively; ``path`` is a regular expression searched
    in the request target exactly as the client sent it (percent-encoded path plus
    query string), so ``r"^/upload/"`` or ``r"name=events%2F"`` both work.
    """

    action: Action
    remaining: int
    method: str | None = None
    path: re.Pattern[str] | None = None
    status: int = 503
    message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    after_bytes: int | None = None
    needs_body: bool = False
    fired: int = 0

    def matches(self, method: str, target: str, has_body: bool) -> bool:
        """Whether this rule applies to a request (ignoring how often it may still fire)."""
        if self.method is not None and self.method.upper() != method.upper():
            return False
        if self.path is not None and self.path.search(target) is None:
            return False
        return has_body or not self.needs_body


@dataclass(frozen=True)
class RequestRecord:
    """A request the proxy received, and what it did with it.

    ``connection`` numbers client connections in accept order (1, 2, ...), so tests
    can tell whether a client reused a kept-alive connection.
    """

    method: str
    target: str
    action: Action
    status: int | None = None
    connection: int = 0

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.partition("?")[0]


@dataclass
class RuleBook:
    """Thread-safe list of armed rules plus the log of requests seen."""

    _rules: list[Rule] = field(default_factory=list)
    _records: list[RequestRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, rule: Rule) -> Rule:
        """Arm ``rule``; rules are tried in the order they were added."""
        if rule.remaining < 1:
            raise ValueError("a rule must fire at least once")
        with self._lock:
            self._rules.append(rule)
        return rule

    def take(self, method: str, target: str, has_body: bool, connection: int = 0) -> Rule | None:
        """Consume one firing of the first matching rule and log the request."""
        with self._lock:
            rule = next(
                (r for r in self._rules if r.remaining > 0 and r.matches(method, target, has_body)),
                None,
            )
            if rule is not None:
                rule.remaining -= 1
                rule.fired += 1
            action = Action.FORWARD if rule is None else rule.action
            status = rule.status if rule is not None and rule.action is Action.FAIL else None
            record = RequestRecord(method.upper(), target, action, status, connection)
            self._records.append(record)
            return rule

    def pending(self) -> list[Rule]:
        """Rules that can still fire."""
        with self._lock:
            return [r for r in self._rules if r.remaining > 0]

    def records(self) -> list[RequestRecord]:
        """A snapshot of every request seen so far, oldest first."""
        with self._lock:
            return list(self._records)

    def count(
        self,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        action: Action | None = None,
    ) -> int:
        """How many requests matched ``method``/``path`` (same filters as rules)/``action``."""
        probe = Rule(Action.FORWARD, 1, method=method, path=compile_pattern(path))
        return sum(
            1
            for r in self.records()
            if probe.matches(r.method, r.target, True) and action in (None, r.action)
        )

    def counts(self) -> Counter[tuple[str, str]]:
        """Requests seen, keyed by ``(method, path without query)``."""
        return Counter((r.method, r.path) for r in self.records())

    def clear_rules(self) -> None:
        """Disarm every rule."""
        with self._lock:
            self._rules.clear()

    def reset(self) -> None:
        """Disarm every rule and forget every request seen."""
        with self._lock:
            self._rules.clear()
            self._records.clear()
