"""JobSets, the nodes provisioned for them, and LeaderWorkerSets (docs/rules.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import partial

from megamon.domain import labels
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.rules import tpu
from megamon.observing.common import Observed, Reuse, Settings, problem_of
from megamon.observing.nodepools import _count
from megamon.sources.kube.projections import JobSetView, LwsView, NodeView, TpuSelector


def _first_tpu(selectors: Iterable[TpuSelector]) -> TpuSelector:
    for selector in selectors:
        if selector.accelerator or selector.topology:
            return selector
    return TpuSelector()


def _jobset_attrs(js: JobSetView) -> Attrs:
    chips = 0
    for rj in js.replicated_jobs:
        if rj.tpu.topology:
            chips += rj.replicas * tpu.topology_chips(rj.tpu.topology)
    first = _first_tpu(rj.tpu for rj in js.replicated_jobs)
    return Attrs(
        jobset_name=js.name,
        jobset_namespace=js.namespace,
        jobset_uid=js.uid,
        tpu_accelerator=first.accelerator,
        tpu_topology=first.topology,
        spot=any(rj.tpu.spot for rj in js.replicated_jobs),
        tpu_chip_count=chips,
    )


def _subject(js: JobSetView) -> str:
    return f"{js.namespace}/{js.name}"


_JOBSETS: Reuse[str, Observation] = Reuse()
_JOBSET_NODES: Reuse[str, Observation] = Reuse()
_LWS: Reuse[str, Observation] = Reuse()


def _jobset_observation(js: JobSetView, settings: Settings) -> Observation:
    return Observation.build(
        expected=sum(rj.replicas for rj in js.replicated_jobs),
        ready=0 if js.terminal else js.ready,
        threshold=settings.threshold,
        status=js.terminal,
        expected_down=js.terminal == labels.JOBSET_COMPLETED,
        attrs=_jobset_attrs(js),
    )


def observe_jobsets(jobsets: Iterable[JobSetView], settings: Settings) -> Observed:
    """Keyed by JobSet UID: replicated Jobs expected vs ready.

    A JobSet in a terminal state runs nothing, whatever its last ready count says: Completed
    is expected down (a planned end), Failed and Suspended are down and count as
    interruptions.
    """
    result = Observed()
    with _JOBSETS.call() as reuse:
        for js in jobsets:
            try:
                inputs = (js, settings)
                observation = reuse(js.uid, inputs, partial(_jobset_observation, *inputs))
            except Exception as err:  # one object, never the cycle
                result.problems.append(problem_of(Kind.JOBSET, _subject(js), err))
                continue
            result.observations[js.uid] = observation
    return result


def _jobset_nodes_observation(
    js: JobSetView, ready: int, unknown: int, settings: Settings
) -> Observation:
    return Observation.build(
        expected=sum(rj.replicas * rj.parallelism for rj in js.replicated_jobs),
        ready=ready,
        unknown=unknown,
        threshold=settings.threshold,
        status=js.terminal,
        expected_down=js.terminal == labels.JOBSET_COMPLETED,
        attrs=_jobset_attrs(js),
    )


def observe_jobset_nodes(
    jobsets: Iterable[JobSetView], nodes: Iterable[NodeView], now: int, settings: Settings
) -> Observed:
    """Keyed by JobSet UID: nodes the TPU provisioner created for the JobSet vs how many it
    needs (Σ replicas × parallelism)."""
    by_jobset: dict[tuple[str, str], list[NodeView]] = defaultdict(list)
    for node in nodes:
        if node.jobset_name:
            by_jobset[(node.jobset_namespace, node.jobset_name)].append(node)
    result = Observed()
    with _JOBSET_NODES.call() as reuse:
        for js in jobsets:
            ready, unknown = _count(by_jobset.get((js.namespace, js.name), []), now, settings)
            inputs = (js, ready, unknown, settings)
            try:
                observation = reuse(js.uid, inputs, partial(_jobset_nodes_observation, *inputs))
            except Exception as err:  # one object, never the cycle
                result.problems.append(problem_of(Kind.JOBSET_NODES, _subject(js), err))
                continue
            result.observations[js.uid] = observation
    return result


def _lws_observation(lws: LwsView, settings: Settings) -> Observation:
    chips = tpu.topology_chips(lws.tpu.topology) * lws.replicas if lws.tpu.topology else 0
    return Observation.build(
        expected=lws.replicas,
        ready=lws.ready_replicas,
        threshold=settings.threshold,
        attrs=Attrs(
            lws_name=lws.name,
            lws_namespace=lws.namespace,
            lws_uid=lws.uid,
            tpu_accelerator=lws.tpu.accelerator,
            tpu_topology=lws.tpu.topology,
            spot=lws.tpu.spot,
            tpu_chip_count=chips,
        ),
    )


def observe_leaderworkersets(lwss: Iterable[LwsView], settings: Settings) -> Observed:
    """Keyed by LWS UID: replicas expected vs ready."""
    result = Observed()
    with _LWS.call() as reuse:
        for lws in lwss:
            try:
                inputs = (lws, settings)
                observation = reuse(lws.uid, inputs, partial(_lws_observation, *inputs))
            except Exception as err:  # one object, never the cycle
                subject = f"{lws.namespace}/{lws.name}"
                result.problems.append(problem_of(Kind.LEADERWORKERSET, subject, err))
                continue
            result.observations[lws.uid] = observation
    return result
