"""What one pass over a group of nodes counts (a node pool's, a JobSet's), and the counts of
each group kept from one call of an observer to the next while they still hold.

The pass runs over every node of the fleet, so it is a plain loop; ``Tallies`` makes a
cycle pass only over the groups whose nodes changed (``NodeIndex`` hands out an unchanged
group as the same tuple) or whose counts time alone changed (an Unknown node whose grace
period ended).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from megamon.domain import interruptions, maintenance
from megamon.domain.interruptions import NodeSignals
from megamon.domain.rules.readiness import CONDITION_UNKNOWN, Readiness, node_readiness
from megamon.sources.kube.projections import NodeView


@dataclass(frozen=True, slots=True)
class NodeCounts:
    """What one pass over a pool's nodes counts."""

    ready: int
    unknown: int
    allocatable: int | None
    """Σ allocatable TPU chips; None when no node reports any."""
    scheduled: int
    """The earliest announced maintenance (Unix seconds), ``maintenance.NOT_SCHEDULED``."""
    malformed: int
    """Nodes whose ``scheduled-maintenance-time`` holds no time."""
    maintained: int
    """Nodes on which GKE says a maintenance has begun (``in_maintenance``)."""
    reporting: int
    """Nodes that report allocatable chips (``allocatable`` is None without any)."""
    signals: NodeSignals
    """What the nodes say of why the group is down, should it be (counted in the same pass,
    and kept with the rest: a group down for many cycles is not passed over again)."""
    holds_from: int
    holds_until: int
    """The counts hold for every ``now`` in [holds_from, holds_until): the only thing that
    changes them with time alone is the end of an Unknown node's grace period."""

    def hold_at(self, now: int) -> bool:
        return self.holds_from <= now < self.holds_until

    @property
    def in_maintenance(self) -> bool:
        """Whether GKE says a maintenance has begun on one of the nodes."""
        return self.maintained > 0


_ALWAYS = 1 << 64
"""Beyond any nanosecond timestamp, either way."""


def tally(nodes: Sequence[NodeView], now: int, grace_ns: int) -> NodeCounts:
    """Ready and unknown nodes, allocatable chips, announced maintenance, the signals of a
    down group: a plain loop with its constants in locals, as it runs over every node of
    the groups that changed, every cycle."""
    ready = unknown = malformed = maintained = reporting = 0
    lost = not_ready = active = terminating = cordoned = 0
    allocatable: int | None = None
    scheduled = not_scheduled = maintenance.NOT_SCHEDULED
    readiness, is_ready, is_unknown = node_readiness, Readiness.READY, Readiness.UNKNOWN
    holds_from, holds_until = -_ALWAYS, _ALWAYS
    for node in nodes:
        status = node.ready_status
        state = readiness(status, node.ready_since_ns, now, grace_ns)
        if state is is_ready:
            ready += 1
        else:
            if state is is_unknown:
                unknown += 1
            elif status == CONDITION_UNKNOWN:  # not ready: Unknown past the grace
                lost += 1
            else:
                not_ready += 1
            since = node.ready_since_ns
            if status == CONDITION_UNKNOWN and since is not None:
                # Unknown until since + grace, not ready from then on
                if since + grace_ns > now:
                    holds_until = min(holds_until, since + grace_ns)
                else:
                    holds_from = max(holds_from, since + grace_ns)
        chips = node.tpu_allocatable
        if chips is not None:
            allocatable = chips + (allocatable or 0)
            reporting += 1
        at = node.scheduled_maintenance
        if at != not_scheduled:
            if at == maintenance.MALFORMED:
                malformed += 1
            elif scheduled == not_scheduled or at < scheduled:
                scheduled = at
        if node.maintenance:
            maintained += 1
            if node.maintenance == interruptions.NODE_MAINTENANCE_ACTIVE:
                active += 1
            elif node.maintenance == interruptions.NODE_MAINTENANCE_TERMINATING:
                terminating += 1
        if node.unschedulable:
            cordoned += 1
    signals = NodeSignals(len(nodes), lost, not_ready, active, terminating, cordoned)
    return NodeCounts(
        *(ready, unknown, allocatable, scheduled, malformed, maintained, reporting, signals),
        *(holds_from, holds_until),
    )


def retallied(
    counts: NodeCounts, change: GroupChange, now: int, grace_ns: int
) -> NodeCounts | None:
    """The counts of a group that ``change`` made of the group ``counts`` counted, from the
    counts of the nodes it took out and put in (``tally`` of each, so the one definition
    stays ``tally``'s); ``None`` where they cannot be had so and the group must be counted
    again: ``counts`` do not hold at ``now``, a node taken out or put in is Unknown with a
    grace period (whose end the counts' interval must follow), or a node taken out had the
    earliest announced maintenance."""
    if not counts.hold_at(now):
        return None
    out, into = tally(change.removed, now, grace_ns), tally(change.added, now, grace_ns)
    if not (_timeless(out) and _timeless(into)):
        return None
    if out.scheduled != maintenance.NOT_SCHEDULED and (
        counts.scheduled == maintenance.NOT_SCHEDULED or out.scheduled <= counts.scheduled
    ):
        return None  # it may have been the earliest
    scheduled = counts.scheduled
    if into.scheduled != maintenance.NOT_SCHEDULED and (
        scheduled == maintenance.NOT_SCHEDULED or into.scheduled < scheduled
    ):
        scheduled = into.scheduled
    reporting = counts.reporting - out.reporting + into.reporting
    chips = (counts.allocatable or 0) - (out.allocatable or 0) + (into.allocatable or 0)
    return NodeCounts(
        ready=counts.ready - out.ready + into.ready,
        unknown=counts.unknown - out.unknown + into.unknown,
        allocatable=chips if reporting else None,
        scheduled=scheduled,
        malformed=counts.malformed - out.malformed + into.malformed,
        maintained=counts.maintained - out.maintained + into.maintained,
        reporting=reporting,
        signals=_signals(counts.signals, out.signals, into.signals),
        holds_from=counts.holds_from,
        holds_until=counts.holds_until,
    )


def _signals(was: NodeSignals, out: NodeSignals, into: NodeSignals) -> NodeSignals:
    return NodeSignals(
        present=was.present - out.present + into.present,
        lost=was.lost - out.lost + into.lost,
        not_ready=was.not_ready - out.not_ready + into.not_ready,
        maintenance=was.maintenance - out.maintenance + into.maintenance,
        terminating=was.terminating - out.terminating + into.terminating,
        cordoned=was.cordoned - out.cordoned + into.cordoned,
    )


def _timeless(counts: NodeCounts) -> bool:
    """Whether no node counted is Unknown with a grace period: time alone changes nothing."""
    return counts.holds_from == -_ALWAYS and counts.holds_until == _ALWAYS


@dataclass(frozen=True, slots=True)
class GroupChange:
    """What made a group of nodes of the group before it: the nodes taken out (or replaced:
    the object before) and the nodes put in (or the object after)."""

    before: Sequence[NodeView]
    removed: tuple[NodeView, ...]
    added: tuple[NodeView, ...]


Changes = Callable[[Sequence[NodeView]], "GroupChange | None"]
"""What made a group (by the identity of its tuple) of the one before it, if known."""


def _no_change(nodes: Sequence[NodeView]) -> GroupChange | None:
    return None


Tally = Callable[[Hashable, Sequence[NodeView], int, int], NodeCounts]
"""``tally(key, nodes, now, grace_ns)``: ``tally(nodes, now, grace_ns)``, or the same
counts as the latest call's for ``key``."""


class Tallies:
    """The counts of each group of nodes at an observer's latest call, kept while they
    hold: for the same group (the same tuple: ``NodeIndex`` hands out a group none of whose
    nodes changed as the same object), the same grace period, and a ``now`` at which no
    Unknown node's grace has ended since (``NodeCounts.hold_at``). Only the latest call's
    entries are kept."""

    def __init__(self) -> None:
        self._latest: dict[Hashable, tuple[Sequence[NodeView], int, NodeCounts]] = {}

    @contextmanager
    def call(self, changes: Changes = _no_change) -> Iterator[Tally]:
        """The ``tally`` of one call of the observer; what it counted is kept when the call
        ends (calls from two threads each keep their own, the later one wins). ``changes``
        tells what made a group of the one before it (``NodeGroups.change``): a group a few
        nodes of which changed is counted from those (``retallied``)."""
        latest: dict[Hashable, tuple[Sequence[NodeView], int, NodeCounts]] = self._latest
        current: dict[Hashable, tuple[Sequence[NodeView], int, NodeCounts]] = {}

        def kept(key: Hashable, nodes: Sequence[NodeView], now: int, grace_ns: int) -> NodeCounts:
            found = latest.get(key)
            if found is None or found[1] != grace_ns:
                found = (nodes, grace_ns, tally(nodes, now, grace_ns))
            elif found[0] is not nodes:
                change = changes(nodes)
                counts = None
                if change is not None and change.before is found[0]:
                    counts = retallied(found[2], change, now, grace_ns)
                found = (nodes, grace_ns, counts or tally(nodes, now, grace_ns))
            elif not found[2].hold_at(now):
                found = (nodes, grace_ns, tally(nodes, now, grace_ns))
            current[key] = found
            return found[2]

        yield kept
        self._latest = current
