"""Every JobSet restart is an interruption with reason ``restart`` (docs/rules.md): whole,
single-Job and in-place, seen in progress or only by a count that jumped between two looks,
timed by the ``RestartingJobSet`` condition when the server gives it. Driven as the
aggregator drives them: the JobSet observer over projections of objects as the JobSet
controller writes them, then the append rules."""

from __future__ import annotations

from typing import Any

from megamon.domain import restarts
from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.observations import JobSetAttrs, Observation
from megamon.domain.timestamps import format_ns
from megamon.observing.common import Settings
from megamon.observing.workloads import WorkloadObserver
from megamon.recording.appending import next_record
from megamon.sources.kube.projections import jobset_view
from test.timeline import T0, S

UID = "uid-train"


def jobset(ready: int = 2, conditions: tuple[dict[str, Any], ...] = (), **status: Any) -> Any:
    job = {"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 1}}}
    replicated = [{"name": "w", "ready": ready, **status.pop("job_status", {})}]
    return {
        "metadata": {"name": "train", "namespace": "ml", "uid": UID},
        "spec": {"replicatedJobs": [job]},
        "status": {"replicatedJobsStatus": replicated, "conditions": list(conditions), **status},
    }


def restarting(state: str, at: int, reason: str = "DefaultFailurePolicy") -> dict[str, Any]:
    return {"type": "RestartingJobSet", "status": state, "reason": reason,
            "lastTransitionTime": format_ns(at)}  # fmt: skip


class Run:
    """One observer and one JobSet's record, observed at given instants."""

    def __init__(self) -> None:
        self.observer = WorkloadObserver()
        self.record: EventRecord | None = None
        self.last: Observation | None = None

    def look(self, obj: Any, at: int) -> Observation:
        observed = self.observer.jobsets([jobset_view(obj)], Settings(), now=at)
        self.last = observed.observations[UID]
        self.record = next_record(self.record, self.last, at)
        return self.last

    def events(self) -> tuple[UpEvent, ...]:
        assert self.record is not None
        return self.record.events


def interruption(down_at: int, up_at: int) -> tuple[UpEvent, UpEvent]:
    return UpEvent(up=False, ts=down_at, reason="restart"), UpEvent(up=True, ts=up_at)


def test_an_in_place_restart_seen_in_progress_is_down_while_its_pods_restart() -> None:
    """Jobs stay ready while the pods restart in place: the attempts say it restarts."""
    run = Run()
    run.look(jobset(currentInPlaceRestartAttempt=0), T0)
    seen = run.look(jobset(previousInPlaceRestartAttempt=0, currentInPlaceRestartAttempt=0), T0 + S)
    assert (seen.up, seen.reason) == (False, "restart")
    back = run.look(
        jobset(previousInPlaceRestartAttempt=0, currentInPlaceRestartAttempt=1), T0 + 3 * S
    )
    assert back.up
    assert run.events()[2:] == interruption(T0 + S, T0 + 3 * S)
    assert dict(back.restart_counts) == {"jobset": 0, "job": 0, "in-place": 1}
    assert isinstance(back.attrs, JobSetAttrs) and back.attrs.restart_timed_by == "observed"


def test_a_count_that_jumped_while_up_at_both_looks_is_a_restart_since_the_last_look() -> None:
    run = Run()
    run.look(jobset(currentInPlaceRestartAttempt=0), T0)
    after = jobset(previousInPlaceRestartAttempt=0, currentInPlaceRestartAttempt=1)
    seen = run.look(after, T0 + 30 * S)
    assert seen.up
    # since the last look: a nanosecond after the up seen then (one instant has no order)
    assert run.events()[2:] == interruption(T0 + 1, T0 + 30 * S)
    again = run.look(after, T0 + 60 * S)
    assert again is seen or (again.up and not again.down_since)
    assert len(run.events()) == 4  # the same restart is not counted twice


def test_a_whole_restart_is_timed_by_the_restarting_condition() -> None:
    run = Run()
    run.look(jobset(), T0)
    began, ended = T0 + 2 * S, T0 + 7 * S
    run.look(jobset(ready=0, restarts=1, conditions=(restarting("True", began),)), T0 + 5 * S)
    back = run.look(
        jobset(restarts=1, conditions=(restarting("False", ended, "JobsReady"),)), T0 + 9 * S
    )
    assert run.events()[2:] == interruption(began, ended)
    assert isinstance(back.attrs, JobSetAttrs) and back.attrs.restart_timed_by == "condition"


def test_a_whole_restart_without_the_condition_is_timed_when_seen() -> None:
    run = Run()
    run.look(jobset(), T0)
    down = run.look(jobset(ready=0, restarts=1), T0 + 5 * S)
    assert down.reason == "restart"
    back = run.look(jobset(restarts=1), T0 + 9 * S)
    assert run.events()[2:] == interruption(T0 + 5 * S, T0 + 9 * S)
    assert isinstance(back.attrs, JobSetAttrs) and back.attrs.restart_timed_by == "observed"


def test_a_condition_time_before_the_last_look_is_kept_after_it() -> None:
    """A server clock behind megamon's never stamps a restart before the JobSet was seen up."""
    run = Run()
    run.look(jobset(), T0)
    run.look(jobset(ready=0, restarts=1, conditions=(restarting("True", T0 - 60 * S),)), T0 + S)
    assert run.events()[2] == UpEvent(up=False, ts=T0 + 1, reason="restart")


def test_a_single_job_restart_is_a_restart() -> None:
    run = Run()
    run.look(jobset(), T0)
    down = run.look(jobset(ready=1, job_status={"jobRestarts": [0, 1]}), T0 + S)
    assert (down.up, down.reason) == (False, "restart")
    assert dict(down.restart_counts)["job"] == 1


def test_counts_seen_first_are_no_restart() -> None:
    """megamon starting beside a JobSet that restarted before invents no interruption."""
    run = Run()
    seen = run.look(jobset(restarts=3, currentInPlaceRestartAttempt=5), T0)
    assert seen.up and len(run.events()) == 2
    assert dict(seen.restart_counts) == {"jobset": 3, "job": 0, "in-place": 2}
    assert not isinstance(seen.attrs, JobSetAttrs)


def test_an_unchanged_jobset_keeps_its_observation_object() -> None:
    """The cycle's contract (docs/architecture.md): unchanged inputs, the same observation."""
    run = Run()
    obj = jobset(restarts=1)
    first = run.look(obj, T0)
    assert run.look(obj, T0 + S) is first


def test_the_kinds_are_the_label_values_documented() -> None:
    assert restarts.KINDS == ("jobset", "job", "in-place")


def test_a_jobs_ready_from_before_the_restart_does_not_time_its_end() -> None:
    """JobSet sets ``RestartingJobSet=False`` (``JobsReady``) once its Jobs are first ready;
    an in-place restart later ends when megamon sees it, not at that old time."""
    ready = (restarting("False", T0 - 60 * S, "JobsReady"),)
    run = Run()
    run.look(jobset(conditions=ready, currentInPlaceRestartAttempt=0), T0)
    during = jobset(
        conditions=ready, previousInPlaceRestartAttempt=0, currentInPlaceRestartAttempt=0
    )
    run.look(during, T0 + S)
    after = jobset(
        conditions=ready, previousInPlaceRestartAttempt=0, currentInPlaceRestartAttempt=1
    )
    back = run.look(after, T0 + 3 * S)
    assert run.events()[2:] == interruption(T0 + S, T0 + 3 * S)
    assert isinstance(back.attrs, JobSetAttrs) and back.attrs.restart_timed_by == "observed"


def test_a_jump_between_two_looks_ends_at_a_jobs_ready_between_them_only() -> None:
    old = (restarting("False", T0 - 60 * S, "JobsReady"),)
    run = Run()
    run.look(jobset(conditions=old), T0)
    run.look(jobset(conditions=old, restarts=1), T0 + 30 * S)
    assert run.events()[2:] == interruption(T0 + 1, T0 + 30 * S)
    fresh = (restarting("False", T0 + 40 * S, "JobsReady"),)
    run.look(jobset(conditions=fresh, restarts=2), T0 + 50 * S)
    assert run.events()[4:] == interruption(T0 + 30 * S + 1, T0 + 40 * S)
