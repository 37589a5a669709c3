"""Scenarios: timed steps played against a ``Fleet`` on a compressed clock.

Why: megamon's value is in time — how long a pool took to provision, how long an interruption
lasted — so a demo must show things happening over time, and half an hour of fleet life has
to fit in half a minute. A scenario is plain data: a list of ``Step(at, name, action)``, where
``at`` is simulated time since the start and ``action`` a call on the fleet (``call`` makes
one from a method name, so a step prints with its arguments). Steps are played in order of
``at``; steps with the same ``at`` keep their list order.

``ScenarioRunner`` maps simulated time to real time by ``speed`` (simulated seconds per real
second: 60 plays one simulated minute per second). It is the loop boundary: a step that raises
is logged with its traceback and counted, and the scenario goes on. Only the waiting is
compressed — timestamps written into objects are the fleet clock's (wall time by default).
"""

from __future__ import annotations

import logging
import operator
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from internal.fleet.fleet import Fleet
from internal.fleet.times import offset

_LOG = logging.getLogger(__name__)

Action = Callable[[Fleet], object]

DEFAULT_SPEED = 60.0
"""One simulated minute per real second."""


@dataclass(frozen=True)
class Step:
    """One thing that happens ``at`` a simulated time after the scenario starts."""

    at: timedelta
    name: str
    action: Action

    def __str__(self) -> str:
        return f"{offset(self.at)}  {self.name}"


def call(method: str, /, *args: Any, **kwargs: Any) -> Action:
    """The action ``fleet.<method>(*args, **kwargs)``; its repr shows the call."""
    if method.startswith("_") or getattr(Fleet, method, None) is None:
        raise ValueError(f"Fleet has no operation {method!r}")
    return operator.methodcaller(method, *args, **kwargs)


def minutes(clock: str) -> timedelta:
    """``"7:30"`` → 7 minutes 30 seconds; ``"1:02:00"`` → 1 hour 2 minutes."""
    parts = [int(part) for part in clock.split(":")]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"expected M, M:SS or H:MM:SS, got {clock!r}")
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + part
    return timedelta(seconds=seconds if len(parts) > 1 else seconds * 60)


def describe(steps: Iterable[Step]) -> str:
    """The scenario as a log would show it, one step a line, in playing order."""
    return "\n".join(str(step) for step in ordered(steps))


def ordered(steps: Iterable[Step]) -> list[Step]:
    """Steps in playing order: by ``at``, ties kept in list order."""
    return sorted(steps, key=lambda step: step.at)


@dataclass
class Outcome:
    """What a runner has done so far."""

    rounds: int = 0
    played: int = 0
    failed: list[str] = field(default_factory=list)


class ScenarioRunner:
    """Plays steps against a fleet in scaled real time, then idles or replays until stopped."""

    def __init__(
        self,
        fleet: Fleet,
        steps: Iterable[Step],
        *,
        speed: float = DEFAULT_SPEED,
        loop: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.fleet = fleet
        self.steps = ordered(steps)
        self.speed = speed
        self.loop = loop
        self.outcome = Outcome()
        self._monotonic = monotonic

    def play(self, stop: threading.Event) -> Outcome:
        """Play every step once, on time; returns early when ``stop`` is set."""
        start = self._monotonic()
        for step in self.steps:
            due = start + step.at.total_seconds() / self.speed
            if stop.wait(max(0.0, due - self._monotonic())):
                return self.outcome
            self._play_step(step)
        self.outcome.rounds += 1
        _LOG.info("scenario complete: %d steps played", len(self.steps))
        return self.outcome

    def run(self, stop: threading.Event) -> Outcome:
        """Play, then idle until ``stop`` — or, with ``loop``, clear the fleet and replay."""
        while not stop.is_set():
            self.play(stop)
            if stop.is_set():
                break
            if not self.loop:
                stop.wait()
                break
            _LOG.info("replaying the scenario: clearing the fleet")
            self.fleet.clear()
        return self.outcome

    def _play_step(self, step: Step) -> None:
        _LOG.info("%s", step)
        try:
            step.action(self.fleet)
        except Exception:
            _LOG.exception("step failed: %s", step)
            self.outcome.failed.append(str(step))
        self.outcome.played += 1
