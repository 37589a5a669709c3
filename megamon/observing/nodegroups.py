"""The cluster's nodes as the observers read them: by node pool and by JobSet.

A node pool is counted from its TPU nodes and a JobSet's nodes from the nodes labelled for
it, so every cycle used to walk the 65,000 nodes of a large fleet twice to group them, and
count every group again. Between two snapshots only a few nodes change (the watch caches
hand out the same projection object for a node that did not), so ``NodeIndex`` keeps the
groups from one snapshot to the next and regroups only the nodes that changed: a group
none of whose nodes changed is the same tuple object as before, which lets the counts of
its nodes be kept too (``nodepools.Tallies``).

A group lists its nodes by name, so that it does not depend on the order in which the
watch saw them; ``NodeGroups.of`` groups the same way in one pass.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Generic, TypeVar

from megamon.observing.tallies import GroupChange
from megamon.sources.kube.projections import NodeView

JobSetName = tuple[str, str]
"""(namespace, name) of a JobSet, as its nodes' labels name it."""

_BY_NAME = attrgetter("name")
RETALLY_FROM = 64
"""Groups of fewer nodes are counted again when they change (``NodeIndex`` keeps no
changes for them): one pass over them costs no more than counting the change; a 2,000-node
slice one node of which turned NotReady is counted from that node."""

G = TypeVar("G", str, JobSetName)


def pool_of(node: NodeView) -> str | None:
    """The node pool a node is counted in: TPU nodes (with a topology) only."""
    return node.nodepool if node.topology else None


def jobset_of(node: NodeView) -> JobSetName | None:
    """The JobSet a node was provisioned for, if its labels name one."""
    return (node.jobset_namespace, node.jobset_name) if node.jobset_name else None


@dataclass(frozen=True)
class NodeGroups:
    """Nodes grouped by node pool (``pool_of``) and by JobSet (``jobset_of``), each group
    sorted by node name. Only non-empty groups are present."""

    pools: Mapping[str, tuple[NodeView, ...]] = field(default_factory=dict)
    jobsets: Mapping[JobSetName, tuple[NodeView, ...]] = field(default_factory=dict)
    changes: Mapping[int, tuple[tuple[NodeView, ...], GroupChange]] = field(
        default_factory=dict, compare=False
    )
    """What made each group the last regrouping touched of the group before it, by the
    identity of its tuple (``change``)."""

    def change(self, nodes: Sequence[NodeView]) -> GroupChange | None:
        """What made the group ``nodes`` (one of these groups' tuples) of the group before
        it, when the last regrouping made it of one (``Tallies`` counts it from that)."""
        found = self.changes.get(id(nodes))
        return found[1] if found is not None and found[0] is nodes else None

    @classmethod
    def of(cls, nodes: Iterable[NodeView]) -> NodeGroups:
        """The groups of ``nodes``, in one pass."""
        pools: dict[str, list[NodeView]] = {}
        jobsets: dict[JobSetName, list[NodeView]] = {}
        for node in nodes:
            pool, jobset = pool_of(node), jobset_of(node)
            if pool is not None:
                pools.setdefault(pool, []).append(node)
            if jobset is not None:
                jobsets.setdefault(jobset, []).append(node)
        return cls(
            {key: tuple(sorted(found, key=_BY_NAME)) for key, found in pools.items()},
            {key: tuple(sorted(found, key=_BY_NAME)) for key, found in jobsets.items()},
        )


class _Grouping(Generic[G]):
    """One way of grouping (by pool, or by JobSet): each group's nodes by name, and the
    groups a change touched since they were last handed out."""

    def __init__(self) -> None:
        self.members: dict[G, dict[str, NodeView]] = {}
        self.touched: dict[G, tuple[list[NodeView], list[NodeView]] | None] = {}
        """The groups touched since they were last handed out; for a group of
        ``RETALLY_FROM`` nodes or more, the nodes taken out and the nodes put in."""

    def put(self, group: G, node: NodeView) -> None:
        members = self.members.setdefault(group, {})
        delta = self._touch(group, members)
        was = members.get(node.name)
        members[node.name] = node
        if delta is not None:
            if was is not None:
                delta[0].append(was)
            delta[1].append(node)

    def drop(self, group: G, node: NodeView) -> None:
        found = self.members.get(group)
        if found is None or node.name not in found:
            return
        delta = self._touch(group, found)
        was = found.pop(node.name)
        if delta is not None:
            delta[0].append(was)
        if not found:
            del self.members[group]

    def _touch(
        self, group: G, members: Mapping[str, NodeView]
    ) -> tuple[list[NodeView], list[NodeView]] | None:
        """Mark ``group`` touched; the lists its changes go into, if they are kept."""
        if group in self.touched:
            return self.touched[group]
        delta: tuple[list[NodeView], list[NodeView]] | None = None
        if len(members) >= RETALLY_FROM:
            delta = ([], [])
        self.touched[group] = delta
        return delta

    def handed_out(
        self,
        before: Mapping[G, tuple[NodeView, ...]],
        changes: dict[int, tuple[tuple[NodeView, ...], GroupChange]],
    ) -> dict[G, tuple[NodeView, ...]]:
        """``before`` with the touched groups listed afresh (the others: the same tuples);
        what made each of a group before goes into ``changes``."""
        groups = dict(before)
        for group, delta in self.touched.items():
            found = self.members.get(group)
            if not found:
                groups.pop(group, None)
                continue
            nodes = groups[group] = tuple(found[name] for name in sorted(found))
            was = before.get(group)
            if was is not None and delta is not None:
                removed, added = delta
                changes[id(nodes)] = (nodes, GroupChange(was, tuple(removed), tuple(added)))
        self.touched.clear()
        return groups


class NodeIndex:
    """``NodeGroups`` of each snapshot, regrouping only the nodes that changed since the
    last one: one identity check per node, then the changed nodes' groups.

    Built once (``megamon.app``) and shared by the node pool and JobSet-nodes observers of
    one aggregator, which call it from its two loops: a lock keeps it whole.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: Mapping[str, NodeView] = {}
        self._pools: _Grouping[str] = _Grouping()
        self._jobsets: _Grouping[JobSetName] = _Grouping()
        self._groups = NodeGroups()

    def groups(self, nodes: Mapping[str, NodeView]) -> NodeGroups:
        """The groups of ``nodes`` (a snapshot's, keyed by node name)."""
        with self._lock:
            if nodes is not self._nodes:
                self._update(nodes)
            return self._groups

    def _update(self, nodes: Mapping[str, NodeView]) -> None:
        old = self._nodes
        added = 0
        for name, node in nodes.items():
            was = old.get(name)
            if was is node:
                continue
            if was is None:
                added += 1
            else:
                self._regroup(was, into=False)
            self._regroup(node, into=True)
        if len(old) + added != len(nodes):  # some nodes are gone
            for name in old.keys() - nodes.keys():
                self._regroup(old[name], into=False)
        changes: dict[int, tuple[tuple[NodeView, ...], GroupChange]] = {}
        pools = self._pools.handed_out(self._groups.pools, changes)
        jobsets = self._jobsets.handed_out(self._groups.jobsets, changes)
        self._groups = NodeGroups(pools, jobsets, changes)
        self._nodes = nodes

    def _regroup(self, node: NodeView, *, into: bool) -> None:
        """Put ``node`` into its groups (``into``) or take it out of them."""
        pool, jobset = pool_of(node), jobset_of(node)
        if pool is not None:
            (self._pools.put if into else self._pools.drop)(pool, node)
        if jobset is not None:
            (self._jobsets.put if into else self._jobsets.drop)(jobset, node)
