"""Restarts of a JobSet, of every kind, and when each began and ended (docs/kinds.md).

JobSet restarts a workload three ways, each counted in its own status field:

- whole: the failure-policy actions ``RestartJobSet`` / ``RestartJobSetAndIgnoreMaxRestarts``
  recreate every Job; ``status.restarts`` counts them;
- single Job: ``RestartJob`` / ``RestartJobAndIgnoreMaxRestarts`` (JobSet v0.12.0) recreate
  one Job; ``status.replicatedJobsStatus[].jobRestarts[]`` counts them per Job;
- in place: the ``InPlaceRestart`` restart strategy (KEP-467, JobSet v0.11.0) restarts the
  pods where they are. The agents write each pod's attempt in the pod annotation
  ``jobset.sigs.k8s.io/in-place-restart-attempt``; the controller moves
  ``status.previousInPlaceRestartAttempt`` up to ``status.currentInPlaceRestartAttempt`` when
  a restart begins and ``currentInPlaceRestartAttempt`` one further when every pod reached the
  new attempt (the barrier lifts). The attempt counts every restart of the JobSet, recreated
  ones included, so the in-place restarts are the attempt less ``status.restarts``.

JobSet v0.12.0 also sets the condition ``RestartingJobSet``: ``True`` when a whole restart
begins, ``False`` (reason ``JobsReady``) when every Job is ready again; its
``lastTransitionTime`` times the restart on the server.

Pure: the observer keeps a ``Memory`` per JobSet from call to call and asks ``decide``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from megamon.domain.labels import FALSE, TRUE

KIND_JOBSET: Final = "jobset"
"""Whole-JobSet restarts (``status.restarts``)."""
KIND_JOB: Final = "job"
"""Single-Job restarts (the sum of ``status.replicatedJobsStatus[].jobRestarts[]``)."""
KIND_IN_PLACE: Final = "in-place"
"""In-place restarts (``status.currentInPlaceRestartAttempt`` less ``status.restarts``)."""
KINDS: Final = (KIND_JOBSET, KIND_JOB, KIND_IN_PLACE)
"""Every kind of restart, the values of the ``kind`` label of ``megamon_jobset_restarts``."""

TIMED_BY_CONDITION: Final = "condition"
"""The restart's down and up were stamped at the ``RestartingJobSet`` condition's
``lastTransitionTime``s (the server's clock)."""
TIMED_BY_OBSERVED: Final = "observed"
"""At least one end of the restart was stamped when megamon saw it."""

CONDITION_RESTARTING: Final = "RestartingJobSet"
"""The JobSet condition type of a restart (JobSet v0.12.0)."""
REASON_JOBS_READY: Final = "JobsReady"
"""The reason of ``RestartingJobSet=False`` when every Job is ready again: the recovery."""
_RECOVERED: Final = (FALSE, REASON_JOBS_READY)

IN_PLACE_ATTEMPT_ANNOTATION: Final = "jobset.sigs.k8s.io/in-place-restart-attempt"
"""The pod annotation the in-place restart agents write (KEP-467); megamon reads the
JobSet's status fields the controller derives from it."""


@dataclass(frozen=True, slots=True)
class RestartingCondition:
    """The JobSet's ``RestartingJobSet`` condition."""

    status: str
    """``True``, ``False`` or ``Unknown``."""
    reason: str
    since: int
    """``lastTransitionTime`` in nanoseconds since the epoch; 0 when absent."""


@dataclass(frozen=True, slots=True)
class RestartStatus:
    """What a JobSet's status says of its restarts."""

    jobset: int = 0
    job: int = 0
    in_place_current: int | None = None
    in_place_previous: int | None = None
    condition: RestartingCondition | None = None

    @property
    def in_place(self) -> int:
        if self.in_place_current is None:
            return 0
        return max(0, self.in_place_current - self.jobset)

    def counts(self) -> tuple[tuple[str, int], ...]:
        """(kind, count) of each kind of restart, in ``KINDS`` order."""
        return ((KIND_JOBSET, self.jobset), (KIND_JOB, self.job), (KIND_IN_PLACE, self.in_place))

    @property
    def total(self) -> int:
        return self.jobset + self.job + self.in_place

    @property
    def in_place_restarting(self) -> bool:
        """Pods are restarting in place: the previous attempt caught up with the current one
        (the barrier is up until the current attempt moves on)."""
        previous, current = self.in_place_previous, self.in_place_current
        return previous is not None and (current is None or previous >= current)

    @property
    def restarting(self) -> bool:
        condition = self.condition
        return self.in_place_restarting or (condition is not None and condition.status == TRUE)

    def began(self) -> int:
        """When the server says the ongoing restart began; 0 when it does not say."""
        condition = self.condition
        if condition is not None and condition.status == TRUE:
            return condition.since
        return 0

    def ended(self) -> int:
        """When the server says the last restart ended (every Job ready); 0 when it does not."""
        condition = self.condition
        if condition is not None and (condition.status, condition.reason) == _RECOVERED:
            return condition.since
        return 0


NO_RESTARTS: Final = RestartStatus()


@dataclass(frozen=True, slots=True)
class Memory:
    """What the observer remembers of one JobSet's restarts from its last call."""

    total: int
    when_up: int
    """The total when it was last seen up: a down after a count that grew is a restart."""
    began: int = 0
    """When the ongoing restart began (ns); 0 when none is ongoing."""
    began_by_condition: bool = False
    timed_by: str = ""
    """How the latest restart was timed (``TIMED_BY_*``); ``""`` before the first one."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What a JobSet's restarts make of its observation at one call."""

    restarting: bool
    """Down for a restart now (a JobSet whose Jobs look ready included)."""
    restarted: bool
    """Its restart count grew since it was last up: the reason of a down is ``restart``."""
    down_since: int
    """When to stamp a down that began before this call (the server's time, or the last look
    before a restart that came and went unseen); 0: at the call's ``now``."""
    up_since: int
    """When to stamp the up that ends the restart (the server's time); 0: ``now``."""
    timed_by: str
    memory: Memory


def _within(ts: int, low: int, high: int) -> int:
    """``ts`` kept in ``[low, high]``: a server clock never stamps before megamon's last look
    or after its ``now``."""
    return max(low, min(ts, high))


def _ended_after(status: RestartStatus, after: int, now: int) -> int:
    """When the server says the restart ended, if it turned ``JobsReady`` after ``after``
    (a ``JobsReady`` from before, such as the one of the JobSet's first readiness, says
    nothing of this restart), kept no later than ``now``; 0 otherwise."""
    ended = status.ended()
    return min(ended, now) if ended > after else 0


def decide(
    status: RestartStatus, last: Memory | None, *, up: bool, now: int, last_look: int
) -> Decision:
    """The restart decision of one JobSet at ``now``, ``up`` being its observation without
    restarts (its Jobs ready) and ``last_look`` when the JobSet was last observed (the
    ``now`` of the call that made ``last``). A restart in progress (``RestartingJobSet=True``, pods
    restarting in place) is down with reason ``restart``; a count that grew while the JobSet
    looked up at both calls is a restart that came and went between them: a down since the
    last look, up again now (or when the condition says)."""
    total = status.total
    if last is None:
        began = status.began() if status.restarting else 0
        memory = Memory(
            total, total if up else 0, (began or now) if status.restarting else 0, bool(began)
        )
        return Decision(status.restarting, False, 0, 0, "", memory)
    restarted = total > last.when_up
    when_up = total if up and not status.restarting else last.when_up
    if status.restarting:
        if last.began:  # the same restart, seen before
            memory = Memory(total, when_up, last.began, last.began_by_condition, last.timed_by)
            return Decision(True, True, 0, 0, last.timed_by, memory)
        began = status.began()
        by_condition = bool(began)
        began = _within(began, last_look, now) if by_condition else now
        memory = Memory(total, last.when_up, began, by_condition, last.timed_by)
        return Decision(True, True, began if by_condition else 0, 0, last.timed_by, memory)
    if last.began:  # the restart seen in progress ended
        end = _ended_after(status, last.began, now) if up else 0
        timed_by = TIMED_BY_CONDITION if last.began_by_condition and end else TIMED_BY_OBSERVED
        memory = Memory(total, when_up, 0, False, timed_by)
        return Decision(False, restarted, 0, end, timed_by, memory)
    if total > last.total:  # a restart megamon did not see in progress
        memory = Memory(total, when_up, 0, False, TIMED_BY_OBSERVED)
        if up:  # it came and went between two looks
            end = _ended_after(status, last_look, now)
            return Decision(False, True, last_look, end, TIMED_BY_OBSERVED, memory)
        return Decision(False, True, 0, 0, TIMED_BY_OBSERVED, memory)
    memory = Memory(total, when_up, 0, False, last.timed_by)
    return Decision(False, restarted and not up, 0, 0, last.timed_by, memory)


def steady(decision: Decision, status: RestartStatus, *, up: bool) -> bool:
    """Whether the same status and upness at a later call decide the same again (nothing
    began or ended): then the observer may keep this decision without deciding anew."""
    again = decide(status, decision.memory, up=up, now=0, last_look=0)
    return again == decision
