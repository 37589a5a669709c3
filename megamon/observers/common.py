"""What every observer returns, and the settings they share."""

from __future__ import annotations

from dataclasses import dataclass, field

from megamon.records.kinds import Kind
from megamon.records.observations import Observation
from megamon.rules.readiness import DEFAULT_UNKNOWN_GRACE_NS


@dataclass(frozen=True)
class Settings:
    """``UnknownCountThreshold`` and the node Unknown grace period."""

    threshold: float = 1.0
    grace_ns: int = DEFAULT_UNKNOWN_GRACE_NS


@dataclass(frozen=True)
class Problem:
    """An object that could not be observed: the caller logs it once and counts it."""

    kind: Kind
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.subject}: {self.message}"


@dataclass
class Observed:
    """The observations of one kind, and what had to be skipped."""

    observations: dict[str, Observation] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
