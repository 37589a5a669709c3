"""JobSets, the nodes provisioned for them, and LeaderWorkerSets (docs/rules.md).

JobSets and LeaderWorkerSets are observed through their shipped descriptions
(docs/kinds.md), as any described kind; the nodes of a JobSet join nodes to JobSets and stay
code. Their memos live in a ``WorkloadObserver`` built once in ``megamon.app``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from megamon.domain import interruptions, labels
from megamon.domain import restarts as restart_rules
from megamon.domain.descriptions import JOBSET_DESCRIPTION, LWS_DESCRIPTION, shipped
from megamon.domain.interruptions import NO_CAUSE, Cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import JobSetAttrs, Observation
from megamon.domain.rules.upness import is_up, surplus
from megamon.observing.common import Observed, Reuse, Settings, problem_of
from megamon.observing.described import (
    Causes,
    PoolsDown,
    described_attrs,
    no_pools,
    observe_described,
)
from megamon.observing.nodegroups import NodeGroups
from megamon.observing.tallies import NodeCounts, Tallies
from megamon.sources.kube.projections import JobSetView, LwsView, NodeView

JOBSET_FIELDS = shipped(JOBSET_DESCRIPTION).Labels.attr_fields()
LWS_FIELDS = shipped(LWS_DESCRIPTION).Labels.attr_fields()


def _subject(js: JobSetView) -> str:
    return f"{js.namespace}/{js.name}"


def _expected_nodes(js: JobSetView) -> int:
    return sum(rj.replicas * rj.parallelism for rj in js.replicated_jobs)


def _jobset_nodes_observation(  # noqa: PLR0917 - the reuse key spread out
    js: JobSetView,
    ready: int,
    unknown: int,
    settings: Settings,
    cause: Cause = NO_CAUSE,
    present: int = 0,
) -> Observation:
    expected = _expected_nodes(js)
    return Observation.build(
        expected=expected,
        ready=ready,
        unknown=unknown,
        threshold=settings.threshold,
        exact=settings.exact_count,
        surplus=surplus(expected, present),
        status=js.terminal,
        expected_down=js.terminal == labels.JOBSET_COMPLETED,
        attrs=described_attrs(js.described, JOBSET_FIELDS),
        cause=cause,
    )


def _jobset_nodes_cause(  # noqa: PLR0917 - the inputs of one rule
    js: JobSetView,
    found: Sequence[NodeView],
    counts: NodeCounts,
    settings: Settings,
    pools_down: PoolsDown,
    provisioned: bool,
) -> Cause:
    """Why the JobSet's nodes are down (``interruptions.jobset_nodes_cause``); none when up.

    The down pools are looked up (a pass over the cluster's nodes, once per call) only for
    a JobSet that has not ended, whose nodes were complete once and say nothing themselves
    of why they are down: the rule needs them for no other (at L, with 1% of the nodes
    flipping every cycle, asking anyway cost 0.2 s a cycle)."""
    expected = _expected_nodes(js)
    ready, unknown = counts.ready, counts.unknown
    completed = js.terminal == labels.JOBSET_COMPLETED
    if completed or is_up(expected, ready, unknown, settings.threshold, exact=settings.exact_count):
        return NO_CAUSE
    spot = js.described.tpu.spot or any(node.spot for node in found)
    signals = counts.signals
    explained = interruptions.node_cause(expected=expected, spot=spot, nodes=signals)
    asks = provisioned and not js.terminal and explained is None
    return interruptions.jobset_nodes_cause(
        meaning=js.described.meaning,
        expected=expected,
        spot=spot,
        nodes=signals,
        pools_down=pools_down(js.described) if asks else (),
        provisioned=provisioned,
    )


def _with_restarts(
    observation: Observation, status: restart_rules.RestartStatus, decision: restart_rules.Decision
) -> Observation:
    """The JobSet's observation with its restarts: the counts of each kind, how its latest
    restart was timed (``JobSetAttrs``), and — while it restarts — down with reason
    ``restart`` even when its Jobs look ready; a down with no better reason after a count that
    grew is a restart too. A down or up the server (or the last look) timed carries its time
    (``down_since``, ``up_since``) for the append rules."""
    update: dict[str, object] = {"restart_counts": status.counts()}
    if decision.timed_by:
        attrs = observation.attrs.model_dump()
        update["attrs"] = JobSetAttrs(**attrs, restart_timed_by=decision.timed_by)
    if observation.expected_down or observation.status:
        return observation.model_copy(update=update)
    if decision.restarting or (decision.restarted and not observation.up):
        if observation.up or observation.reason in ("", interruptions.UNKNOWN):
            update.update(up=False, reason=interruptions.RESTART, reason_detail="")
    elif decision.down_since and observation.up:  # came and went between two looks
        update["reason"] = interruptions.RESTART
    if decision.down_since:
        update["down_since"] = decision.down_since
    if decision.up_since and observation.up:
        update["up_since"] = decision.up_since
    return observation.model_copy(update=update)


@dataclass(frozen=True, slots=True)
class _Restarted:
    """What the restart layer made of one JobSet at its latest call, and from what."""

    base: Observation
    status: restart_rules.RestartStatus
    up: bool
    decision: restart_rules.Decision
    observation: Observation
    steady: bool


class JobSetRestarts:
    """The restart layer of the JobSet observer: each JobSet's ``restart_rules.Memory`` from
    call to call, and the observation it made of each. A JobSet whose observation and
    restart status are the same objects as last call, with nothing beginning or ending,
    gets the same observation object back (no decision made, nothing built)."""

    def __init__(self) -> None:
        self._latest: dict[str, _Restarted] = {}
        self._last_look = 0
        """The ``now`` of the latest call: when every JobSet it observed was last seen."""

    def apply(self, views: dict[str, JobSetView], observed: Observed, now: int) -> Observed:
        latest: dict[str, _Restarted] = {}
        previous = self._latest
        for uid, base in observed.observations.items():
            view = views.get(uid)
            if view is None:
                continue
            status = view.restarts
            up = base.up and not base.expected_down
            kept = previous.get(uid)
            if (
                kept is not None
                and kept.steady
                and kept.base is base
                and kept.status is status
                and kept.up == up
            ):
                latest[uid] = kept
                continue
            memory = kept.decision.memory if kept is not None else None
            decision = restart_rules.decide(
                status, memory, up=up, now=now, last_look=self._last_look
            )
            built = (
                kept.observation
                if kept is not None and kept.base is base and kept.decision == decision
                else _with_restarts(base, status, decision)
            )
            steady = restart_rules.steady(decision, status, up=up)
            latest[uid] = _Restarted(base, status, up, decision, built, steady)
        for uid, found in latest.items():
            observed.observations[uid] = found.observation
        self._latest = latest
        self._last_look = now
        return observed


class WorkloadObserver:
    """The JobSet, JobSet-nodes and LeaderWorkerSet observers and what each built last.

    Observers are pure; the memos only hand back the observation built last time for a
    resource whose inputs are unchanged (``Reuse``).
    """

    def __init__(self) -> None:
        self._jobsets: Reuse[str, Observation] = Reuse()
        self._jobset_nodes: Reuse[str, Observation] = Reuse()
        self._jobset_tallies = Tallies()
        self._lws: Reuse[str, Observation] = Reuse()
        self._jobset_causes = Causes()
        self._restarts = JobSetRestarts()
        self._lws_causes = Causes()
        self._provisioned: set[str] = set()

    def jobsets(
        self,
        jobsets: Iterable[JobSetView],
        settings: Settings,
        pools_down: PoolsDown | None = None,
        now: int = 0,
    ) -> Observed:
        """Keyed by JobSet UID: replicated Jobs expected vs ready (the JobSet description).

        A JobSet in a terminal state runs nothing, whatever its last ready count says:
        Completed is expected down (a planned end), Failed and Suspended are down and count
        as interruptions. TPU accelerator, topology and spot come from the last replicated
        job that names them, as the Go megamon reads them. ``pools_down`` names the down
        node pools a JobSet runs on (``observing.attribution``): its ``nodepool`` reason.
        Restarts of every kind are counted, and each is an interruption with reason
        ``restart`` (``JobSetRestarts``, docs/rules.md), timed at ``now`` or by the server.
        """
        by_uid = {js.uid: js for js in jobsets}
        views = (js.described for js in by_uid.values())
        causes = self._jobset_causes
        causes.pools_down = pools_down or no_pools
        observed = observe_described(
            Kind.JOBSET, views, JOBSET_FIELDS, settings, self._jobsets, causes=causes
        )
        return self._restarts.apply(by_uid, observed, now)

    def jobset_nodes(
        self,
        jobsets: Iterable[JobSetView],
        nodes: Iterable[NodeView] | NodeGroups,
        now: int,
        settings: Settings,
        pools_down: PoolsDown | None = None,
    ) -> Observed:
        """Keyed by JobSet UID: nodes the TPU provisioner created for the JobSet vs how many
        it needs (Σ replicas × parallelism), and why they are down when they are: what the
        nodes say, else the down node pools it runs on (``pools_down``, as for JobSets).
        ``nodes`` may come grouped already (``NodeIndex``); the counts of a JobSet whose
        nodes did not change are kept (``Tallies``).

        Nodes never seen complete are not lost when missing (the provisioner is still
        creating them): the UIDs seen up are remembered from call to call."""
        groups = nodes if isinstance(nodes, NodeGroups) else NodeGroups.of(nodes)
        by_jobset = groups.jobsets
        result = Observed()
        provisioned: set[str] = set()
        tallies = self._jobset_tallies.call(groups.change)
        with self._jobset_nodes.call() as reuse, tallies as tally:
            for js in jobsets:
                found = by_jobset.get((js.namespace, js.name), ())
                counted = tally(js.uid, found, now, settings.grace_ns)
                try:
                    was_up = js.uid in self._provisioned
                    cause = _jobset_nodes_cause(
                        js, found, counted, settings, pools_down or no_pools, was_up
                    )
                    inputs = (js, counted.ready, counted.unknown, settings, cause, len(found))
                    observation = reuse(js.uid, inputs, _jobset_nodes_observation)
                except Exception as err:  # one object, never the cycle
                    result.problems.append(problem_of(Kind.JOBSET_NODES, _subject(js), err))
                    stale = reuse.stale(js.uid)
                    if stale is not None:  # unobserved now, not gone
                        result.observations[js.uid] = stale
                    continue
                result.observations[js.uid] = observation
                if observation.up or was_up:
                    provisioned.add(js.uid)
        self._provisioned = provisioned
        return result

    def leaderworkersets(self, lwss: Iterable[LwsView], settings: Settings) -> Observed:
        """Keyed by LWS UID: replicas expected vs ready (the LeaderWorkerSet description)."""
        views = (lws.described for lws in lwss)
        return observe_described(
            Kind.LEADERWORKERSET, views, LWS_FIELDS, settings, self._lws, causes=self._lws_causes
        )


def observe_jobsets(jobsets: Iterable[JobSetView], settings: Settings) -> Observed:
    """``WorkloadObserver.jobsets`` without a memo (one call, nothing kept)."""
    return WorkloadObserver().jobsets(jobsets, settings)


def observe_jobset_nodes(
    jobsets: Iterable[JobSetView],
    nodes: Iterable[NodeView],
    now: int,
    settings: Settings,
    pools_down: PoolsDown | None = None,
) -> Observed:
    """``WorkloadObserver.jobset_nodes`` without a memo (so nothing was ever seen up)."""
    return WorkloadObserver().jobset_nodes(jobsets, nodes, now, settings, pools_down)


def observe_leaderworkersets(lwss: Iterable[LwsView], settings: Settings) -> Observed:
    """``WorkloadObserver.leaderworkersets`` without a memo."""
    return WorkloadObserver().leaderworkersets(lwss, settings)
