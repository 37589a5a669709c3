"""Described kinds: from the projection a kind description reads to an observation (pure).

The same rules as the built-in JobSet observer, which is one of these: a resource that has
ended runs nothing, whatever its last ready count says; ended by a ``Completed`` condition it
is expected down (a planned end), by a ``Failed`` or ``Suspended`` one it is down and counts
as an interruption. Chips are Σ replicas × chips of each pod template's TPU topology.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from megamon.domain.descriptions import COMPLETED, WORKLOAD_UID, KindDescription
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation, WorkloadAttrs
from megamon.domain.rules import tpu
from megamon.observing.common import Observed, Reuse, Settings, problem_of
from megamon.sources.kube.described import DescribedView


def described_attrs(view: DescribedView, fields: tuple[str, str, str]) -> Attrs:
    """The attrs of a described resource; ``fields`` hold its name, namespace and UID."""
    name, namespace, uid = fields
    chips = sum(replicas * tpu.topology_chips(topology) for topology, replicas in view.shapes)
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


def described_observation(
    view: DescribedView, fields: tuple[str, str, str], settings: Settings
) -> Observation:
    return Observation.build(
        expected=view.expected,
        ready=0 if view.terminal else view.ready,
        threshold=settings.threshold,
        status=view.terminal,
        expected_down=view.meaning == COMPLETED,
        attrs=described_attrs(view, fields),
        restarts=view.restarts,
    )


def _subject(view: DescribedView) -> str:
    return f"{view.namespace}/{view.name}" if view.namespace else view.name


def observe_described(
    kind: Kind,
    views: Iterable[DescribedView],
    fields: tuple[str, str, str],
    settings: Settings,
    reuse: Reuse[str, Observation],
) -> Observed:
    """Keyed by UID: each resource's expected vs ready, as its description reads them."""
    result = Observed()
    with reuse.call() as get:
        for view in views:
            inputs = (view, fields, settings)
            try:
                observation = get(view.uid, inputs, partial(described_observation, *inputs))
            except Exception as err:  # one object, never the cycle
                result.problems.append(problem_of(kind, _subject(view), err))
                continue
            result.observations[view.uid] = observation
    return result


class DescribedObserver:
    """One described kind's observer, with the memo of its latest call (built once in
    ``megamon.app``, called every cycle)."""

    def __init__(self, description: KindDescription) -> None:
        self.description = description
        self.kind = description.kind
        self._fields = description.Labels.attr_fields()
        self._reuse: Reuse[str, Observation] = Reuse()

    def __call__(self, views: Iterable[DescribedView], settings: Settings) -> Observed:
        return observe_described(self.kind, views, self._fields, settings, self._reuse)
