"""Described kinds: from the projection a kind description reads to an observation (pure).

The same rules as the built-in JobSet observer, which is one of these: a resource that has
ended runs nothing, whatever its last ready count says; ended by a ``Completed`` condition it
is expected down (a planned end), by a ``Failed`` or ``Suspended`` one it is down and counts
as an interruption. Chips are what the projection counted from the pod templates (their
``google.com/tpu`` requests, or a declared count per replica), or, for a kind whose replica is
one slice (``ChipsPerReplica: topology``), Σ replicas × chips of each template's topology.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from megamon.domain.descriptions import COMPLETED, WORKLOAD_UID, KindDescription
from megamon.domain.interruptions import NO_CAUSE, Cause, workload_cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation, WorkloadAttrs
from megamon.domain.rules import tpu
from megamon.domain.rules.upness import is_up
from megamon.observing.common import Observed, Reuse, Settings, problem_of
from megamon.sources.kube.described import DescribedView


def described_attrs(view: DescribedView, fields: tuple[str, str, str]) -> Attrs:
    """The attrs of a described resource; ``fields`` hold its name, namespace and UID."""
    name, namespace, uid = fields
    chips = view.chips
    if chips is None:
        chips = sum(replicas * tpu.topology_chips(top) for top, replicas in view.shapes)
    model = WorkloadAttrs if uid == WORKLOAD_UID else Attrs
    return model.model_validate(
        {
            name: view.name,
            namespace: view.namespace,
            uid: view.uid,
            "tpu_accelerator": view.tpu.accelerator,
            "tpu_topology": view.tpu.topology,
            "spot": view.tpu.spot,
            "tpu_chip_count": chips,
        }
    )


PoolsDown = Callable[[DescribedView], tuple[str, ...]]
"""The node pools a workload runs on that are down now (``()`` when none, or unknown)."""


def no_pools(view: DescribedView) -> tuple[str, ...]:
    return ()


@dataclass
class Causes:
    """What the observer of one kind needs, beyond the object, to say why a resource is down:
    each resource's restart count when it was last seen up (kept from call to call, in the
    observer object), and the down node pools it runs on."""

    restarts_when_up: dict[str, int] = field(default_factory=dict)
    pools_down: PoolsDown = no_pools


def _down(view: DescribedView, settings: Settings) -> bool:
    """Whether the observation will be down and not expected down (the same rule as build)."""
    if view.meaning == COMPLETED:
        return False
    up = is_up(view.expected, view.ready, 0, settings.threshold, exact=settings.exact_count)
    return bool(view.meaning) or not up


def _cause(view: DescribedView, causes: Causes, settings: Settings) -> Cause:
    if not _down(view, settings):
        return NO_CAUSE
    last = causes.restarts_when_up.get(view.uid)
    restarted = view.restarts is not None and last is not None and view.restarts > last
    pools = causes.pools_down(view) if not view.meaning else ()
    return workload_cause(
        meaning=view.meaning,
        pools_down=pools,
        restarted=restarted,
        preempted=view.preempted,
        named=view.interrupted,
    )


def described_observation(
    view: DescribedView,
    fields: tuple[str, str, str],
    settings: Settings,
    cause: Cause = NO_CAUSE,
) -> Observation:
    return Observation.build(
        expected=view.expected,
        ready=0 if view.meaning else view.ready,
        threshold=settings.threshold,
        exact=settings.exact_count,
        status=view.terminal,
        expected_down=view.meaning == COMPLETED,
        attrs=described_attrs(view, fields),
        restarts=view.restarts,
        cause=cause,
        queued=view.queued,
    )


def _subject(view: DescribedView) -> str:
    return f"{view.namespace}/{view.name}" if view.namespace else view.name


def observe_described(
    kind: Kind,
    views: Iterable[DescribedView],
    fields: tuple[str, str, str],
    settings: Settings,
    reuse: Reuse[str, Observation],
    *,
    causes: Causes | None = None,
) -> Observed:
    """Keyed by UID: each resource's expected vs ready, as its description reads them, and
    why it is down (``causes``: restart counts are remembered there while resources are up).
    A resource that cannot be observed this time keeps its last observation (``stale``)."""
    causes = causes or Causes()
    result = Observed()
    seen: dict[str, int] = {}
    with reuse.call() as get:
        for view in views:
            try:
                inputs = (view, fields, settings, _cause(view, causes, settings))
                observation = get(view.uid, inputs, described_observation)
            except Exception as err:  # one object, never the cycle
                result.problems.append(problem_of(kind, _subject(view), err))
                stale = get.stale(view.uid)
                if stale is not None:  # unobserved now, not gone: its last observation stands
                    result.observations[view.uid] = stale
                continue
            result.observations[view.uid] = observation
            last = causes.restarts_when_up.get(view.uid)
            if observation.up and view.restarts is not None:
                seen[view.uid] = view.restarts
            elif last is not None:
                seen[view.uid] = last
    causes.restarts_when_up = seen
    return result


class DescribedObserver:
    """One described kind's observer, with the memo of its latest call (built once in
    ``megamon.app``, called every cycle)."""

    def __init__(self, description: KindDescription) -> None:
        self.description = description
        self.kind = description.kind
        self._fields = description.Labels.attr_fields()
        self._reuse: Reuse[str, Observation] = Reuse()
        self._causes = Causes()

    def __call__(self, views: Iterable[DescribedView], settings: Settings) -> Observed:
        return observe_described(
            self.kind, views, self._fields, settings, self._reuse, causes=self._causes
        )
