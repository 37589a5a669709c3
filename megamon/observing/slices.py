"""Slices, and the memory of which workload owned each one.

A slice that vanishes while its owner (a JobSet or LeaderWorkerSet, named by the slice's
owner labels) is still active is an unexpected interruption: it is recorded down until the
owner ends. That needs to remember owners of slices that no longer exist — the slice→owner
map, which the caller keeps in a ConfigMap so it survives restarts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from megamon.domain import labels
from megamon.domain.interruptions import NO_CAUSE, Cause, SliceSignals, slice_cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.owners import SliceOwner
from megamon.domain.rules import tpu
from megamon.domain.rules.readiness import CONDITION_UNKNOWN
from megamon.domain.rules.upness import is_up
from megamon.observing.attribution import SlicePoolsDown, no_slice_pools
from megamon.observing.common import Observed, Settings, problem_of
from megamon.sources.kube.projections import JobSetView, LwsView, SliceView


def _owner_active(
    owner: SliceOwner, jobsets: Mapping[tuple[str, str], JobSetView], lwss: set[tuple[str, str]]
) -> bool:
    key = (owner.namespace, owner.name)
    if owner.kind == labels.OWNER_KIND_JOBSET:
        js = jobsets.get(key)
        return js is not None and not js.terminal
    if owner.kind == labels.OWNER_KIND_LWS:
        return key in lwss
    return False


def _attrs(name: str, owner: SliceOwner) -> Attrs:
    chips = tpu.topology_chips(owner.topology) if owner.topology else 0
    return Attrs(
        slice_name=name,
        slice_uid=owner.uid,
        slice_owner_kind=owner.kind,
        slice_owner_name=owner.name,
        slice_owner_namespace=owner.namespace,
        tpu_accelerator=owner.accelerator,
        tpu_topology=owner.topology,
        tpu_chip_count=chips,
    )


def _signals(sl: SliceView) -> SliceSignals:
    return SliceSignals(
        vanished=sl.terminating,
        creation_failed=sl.creation_failed_message if sl.creation_failed else None,
        not_ready=sl.not_ready_message if sl.ready_status == labels.FALSE else None,
    )


def _cause(name: str, signals: SliceSignals, pools_down: SlicePoolsDown) -> Cause:
    return slice_cause(signals=signals, pools_down=pools_down(name))


def observe_slices(  # noqa: PLR0917 - the sources a slice is joined with
    slices: Iterable[SliceView],
    jobsets: Iterable[JobSetView],
    lwss: Iterable[LwsView],
    owner_map: Mapping[str, SliceOwner],
    settings: Settings,
    pools_down: SlicePoolsDown = no_slice_pools,
) -> tuple[Observed, dict[str, SliceOwner]]:
    """Observations keyed by slice name, and the owner map to remember for next time.

    A down slice gets a cause (``interruptions.slice_cause``): its conditions, the down node
    pools of its nodes (``pools_down``), or that it vanished while its owner runs.
    """
    jobset_index = {(js.namespace, js.name): js for js in jobsets}
    lws_index = {(w.namespace, w.name) for w in lwss}
    result = Observed()
    new_map: dict[str, SliceOwner] = {}
    for sl in slices:
        owner = SliceOwner(
            sl.owner_kind, sl.owner_name, sl.owner_namespace, sl.accelerator, sl.topology, sl.uid
        )
        try:
            attrs = _attrs(sl.name, owner)
        except Exception as err:  # one object, never the cycle
            result.problems.append(problem_of(Kind.SLICE, sl.name, err))
            continue
        new_map[sl.name] = owner
        ready = 1 if sl.ready_status == labels.TRUE and not sl.terminating else 0
        unknown = 1 if sl.ready_status == CONDITION_UNKNOWN and not sl.terminating else 0
        down = not is_up(1, ready, unknown, settings.threshold)
        result.observations[sl.name] = Observation.build(
            expected=1,
            ready=ready,
            unknown=unknown,
            threshold=settings.threshold,
            status=sl.ready_status or "",
            failed=sl.creation_failed,
            expected_down=not _owner_active(owner, jobset_index, lws_index),
            attrs=attrs,
            cause=_cause(sl.name, _signals(sl), pools_down) if down else NO_CAUSE,
        )
    for name, owner in owner_map.items():
        if name in result.observations or not _owner_active(owner, jobset_index, lws_index):
            continue  # still there, or its owner ended: the slice is retired
        new_map[name] = owner
        result.observations[name] = Observation.build(
            expected=1,
            ready=0,
            threshold=settings.threshold,
            attrs=_attrs(name, owner),
            cause=_cause(name, SliceSignals(vanished=True), pools_down),
        )
    return result, new_map
