"""What every observer returns, and the settings they share."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.rejections import (
    REASON_INVALID,
    REASON_MALFORMED,
    REASON_UNEXPECTED,
    REASON_UNKNOWN_NODEPOOL,
)
from megamon.domain.rules.readiness import DEFAULT_UNKNOWN_GRACE_NS
from megamon.errors import ObservationError
from megamon.observing.deletions import CONFIRM_WITHIN_NS, PoolLedger
from megamon.observing.nodegroups import NodeIndex
from megamon.observing.scheduling import LeaderJobs
from megamon.observing.tallies import Tallies

__all__ = [
    "REASON_INVALID",
    "REASON_MALFORMED",
    "REASON_UNEXPECTED",
    "REASON_UNKNOWN_NODEPOOL",
    "Observed",
    "Problem",
    "Reuse",
    "ReuseCall",
    "Settings",
    "problem_of",
]


@dataclass(frozen=True)
class Settings:
    """``UnknownCountThreshold``, the node Unknown grace period, and the switches back to the
    Go megamon's behaviour (docs/migrating.md)."""

    threshold: float = 1.0
    grace_ns: int = DEFAULT_UNKNOWN_GRACE_NS
    single_host_pools: bool = True
    """``TrackSingleHostNodePools``: False tracks only pools with a placement topology."""
    failed_provisioning: bool = True
    """``RecordFailedProvisioning``: False never marks a node pool failed (no ``f`` event)."""
    confirm_within_ns: int = CONFIRM_WITHIN_NS
    """How long the down of a node pool whose nodes vanished may wait for GKE's word
    (``megamon.observing.deletions.confirm_within_ns`` of the polling interval)."""
    exact_count: bool = False
    """``RequireExactCount``: True is the Go megamon's upness, where a unit more than
    expected (a surge node) marks the resource down."""


@dataclass(frozen=True)
class Problem:
    """An object that could not be observed: the caller logs it once and counts it."""

    kind: Kind
    subject: str
    message: str
    reason: str = REASON_INVALID
    """One of the ``REASON_*`` constants: the ``reason`` label it is counted under."""

    def __str__(self) -> str:
        return f"{self.kind} {self.subject}: {self.message}"


def problem_of(kind: Kind, subject: str, err: Exception) -> Problem:
    """The problem an observer's error is: ``invalid`` for an ``ObservationError``, else
    ``unexpected`` — either way one object is skipped, never the whole cycle."""
    if isinstance(err, ObservationError):
        return Problem(kind, subject, str(err))
    return Problem(kind, subject, f"{type(err).__name__}: {err}", REASON_UNEXPECTED)


@dataclass
class Observed:
    """The observations of one kind, and what had to be skipped."""

    observations: dict[str, Observation] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Reuse(Generic[K, V]):
    """What the latest call of an observer built for each resource, and from what.

    Observers are pure: inputs equal to last time give an equal observation, so the same
    object is handed back instead of a new one. At fleet scale that is thousands of pydantic
    models a cycle not built, and — as observations live until the next cycle — not piling
    up in the garbage collector's oldest generation, whose full collections then scan the
    whole heap. Only the entries of the latest call are kept.
    """

    def __init__(self) -> None:
        self._latest: dict[K, tuple[tuple[object, ...], V]] = {}

    @contextmanager
    def call(self) -> Iterator[ReuseCall[K, V]]:
        """``get(key, inputs, build)`` for one call of the observer: the value built last
        time for ``key`` if its ``inputs`` are equal (identical, mostly: the watch caches
        keep unchanged projections), else ``build(*inputs)``; ``get.stale(key)`` the value of the
        last call, kept as it was. Kept when the call succeeds."""
        call: ReuseCall[K, V] = ReuseCall(self._latest)
        yield call
        self._latest = call.current


class ReuseCall(Generic[K, V]):
    """One call of an observer, as ``Reuse.call`` hands it out."""

    def __init__(self, latest: dict[K, tuple[tuple[object, ...], V]]) -> None:
        self._latest = latest
        self.current: dict[K, tuple[tuple[object, ...], V]] = {}

    def __call__(self, key: K, inputs: tuple[object, ...], build: Callable[..., V]) -> V:
        """The value built for ``key`` from equal ``inputs`` last time, else
        ``build(*inputs)``."""
        found = self.current.get(key) or self._latest.get(key)
        if found is None or found[0] != inputs:
            found = (inputs, build(*inputs))
        self.current[key] = found
        return found[1]

    def stale(self, key: K) -> V | None:
        """What the previous call built for ``key``, kept for this one too: a resource
        whose object cannot be observed now is unobserved (its last observation stands),
        not gone — dropping it would retire it, and its next reading be a new lifetime."""
        found = self.current.get(key) or self._latest.get(key)
        if found is None:
            return None
        self.current[key] = found
        return found[1]


@dataclass
class Memos:
    """What the observers built last cycle, for one aggregator: built once in
    ``megamon/app.py`` and passed to every cycle, never kept in a module.

    The contract the cycle relies on: an unchanged input (the watch caches hand out the same
    projection objects while nothing changed) yields the same observation object, so the
    event log appends nothing and the report's summaries are not settled again.
    """

    nodepools: Reuse[str, Observation] = field(default_factory=Reuse)
    pool_tallies: Tallies = field(default_factory=Tallies)
    """The counts of each pool's nodes, kept while its nodes do not change."""
    nodes: NodeIndex = field(default_factory=NodeIndex)
    """The snapshot's nodes grouped by pool and by JobSet, regrouped as they change; the
    JobSet-nodes observer reads the same index (``WorkloadObservers(nodes=…)``)."""
    leader_jobs: LeaderJobs = field(default_factory=LeaderJobs)
    """The scheduling map's Job of each leader pod, kept while the pod is unchanged."""
    pool_ledger: PoolLedger = field(default_factory=PoolLedger)
    """What the node pool observer concluded last cycle: the pools whose down waits for GKE
    (``megamon.observing.deletions``). Not a cache: the next cycle's decision depends on it."""
