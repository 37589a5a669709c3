"""The Kubernetes side of the cluster as megamon sees it: one watch cache per resource type.

``ClusterView`` is what observers read (snapshots of projections); ``KubeCluster`` keeps it
current with watches; ``StaticCluster`` holds fixed snapshots for tests and tools.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from megamon.domain.descriptions import KindDescription
from megamon.domain.kinds import Kind
from megamon.domain.rejections import Rejection
from megamon.sources.kube import resources
from megamon.sources.kube.cache import WatchCache
from megamon.sources.kube.described import DescribedView, described_projection
from megamon.sources.kube.projections import jobset_view, lws_view, node_view, pod_view, slice_view
from megamon.sources.kube.slim import SlimNode, item_decoder
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.sources.kube.watching import WatchSettings

KIND_NODE = "node"
KIND_POD = "pod"
KIND_JOBSET = Kind.JOBSET.value
KIND_LEADERWORKERSET = Kind.LEADERWORKERSET.value
KIND_SLICE = Kind.SLICE.value
"""The ``kind`` label of objects a watch cache skipped: the values of ``Kind`` where there is
one, so a JobSet problem is ``kind="jobset"`` wherever it was found (and a described kind's
is its noun, ``kind="rayjob"``, never its resource name)."""


class ClusterView(Protocol):
    def snapshot(self) -> ClusterSnapshot: ...

    def synced(self) -> bool:
        """Whether every watched type has been listed once."""
        ...

    def last_contact_ns(self) -> int | None:
        """When the API server last answered every watch (the oldest of them)."""
        ...

    def alive(self) -> bool:
        """Whether every watch thread still runs: a dead one freezes its data for good."""
        ...


class StaticCluster:
    """A cluster that never changes: fixed snapshots."""

    def __init__(self, snapshot: ClusterSnapshot, contact_ns: int | None = None) -> None:
        self._snapshot = snapshot
        self._contact = contact_ns

    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    def synced(self) -> bool:
        return True

    def last_contact_ns(self) -> int | None:
        return self._contact

    def alive(self) -> bool:
        return True


def _cache_name(description: KindDescription) -> str:
    return f"{description.Resource}.{description.Group}"


class KubeCluster:
    """Watch caches for nodes, leader pods, JobSets and, when enabled, LWS, Slices and the
    described kinds (one projected cache each, keeping only what its description reads).

    A described kind's resource may not be served (its CRD not installed): its watch says so
    once and keeps retrying, and neither readiness nor the other kinds wait for it.
    """

    def __init__(
        self,
        api: Any,
        *,
        leaderworkersets: bool = False,
        slices: bool = False,
        described: Sequence[KindDescription] = (),
        settings: WatchSettings | None = None,
        on_change: Callable[[], None] | None = None,
        on_problem: Callable[[Rejection], None] | None = None,
    ) -> None:
        common: dict[str, Any] = {
            "settings": settings,
            "on_change": on_change,
            "on_problem": on_problem,
        }
        self.nodes = WatchCache(
            "nodes",
            resources.node_lister(api),
            node_view,
            kind=KIND_NODE,
            decode_item=item_decoder(SlimNode),
            **common,
        )
        self.pods = WatchCache(
            "pods", resources.leader_pod_lister(api), pod_view, kind=KIND_POD, **common
        )
        self.jobsets = WatchCache(
            "jobsets",
            resources.custom_lister(api, resources.JOBSETS),
            jobset_view,
            kind=KIND_JOBSET,
            **common,
        )
        self.lws = (
            WatchCache(
                "leaderworkersets",
                resources.custom_lister(api, resources.LEADERWORKERSETS),
                lws_view,
                kind=KIND_LEADERWORKERSET,
                **common,
            )
            if leaderworkersets
            else None
        )
        self.slices = (
            WatchCache(
                "slices",
                resources.custom_lister(api, resources.SLICES),
                slice_view,
                kind=KIND_SLICE,
                **common,
            )
            if slices
            else None
        )

        self.described: dict[Kind, WatchCache[DescribedView]] = {
            d.kind: WatchCache(
                _cache_name(d),
                resources.described_lister(api, d),
                described_projection(d),
                kind=d.kind.value,
                **common,
            )
            for d in described
        }

    def _caches(self) -> list[WatchCache[Any]]:
        """The caches readiness waits for: every built-in one that is enabled."""
        optional = [c for c in (self.lws, self.slices) if c is not None]
        return [self.nodes, self.pods, self.jobsets, *optional]

    def start(self) -> KubeCluster:
        for cache in [*self._caches(), *self.described.values()]:
            cache.start()
        return self

    def stop(self) -> None:
        for cache in [*self._caches(), *self.described.values()]:
            cache.stop()

    def wait_synced(self, timeout: float) -> bool:
        """Wait until every cache has listed once; ``False`` if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        return all(
            cache.synced.wait(max(0.0, deadline - time.monotonic())) for cache in self._caches()
        )

    def synced(self) -> bool:
        return all(cache.synced.is_set() for cache in self._caches())

    def alive(self) -> bool:
        return all(cache.alive() for cache in self._caches())

    def last_contact_ns(self) -> int | None:
        """The oldest last answer of every enabled built-in watch and of every described
        kind's watch that has listed once: a described kind whose resource stopped being
        served shows as stale Kubernetes data, one that never was does not."""
        listed = [c for c in self.described.values() if c.synced.is_set()]
        contacts = [cache.last_contact_ns for cache in [*self._caches(), *listed]]
        if any(c is None for c in contacts):
            return None
        return min(c for c in contacts if c is not None)

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(
            nodes=self.nodes.snapshot(),
            leader_pods=self.pods.snapshot(),
            jobsets=self.jobsets.snapshot(),
            leaderworkersets=self.lws.snapshot() if self.lws else {},
            slices=self.slices.snapshot() if self.slices else {},
            described={
                kind: cache.snapshot()
                for kind, cache in self.described.items()
                if cache.synced.is_set()
            },
        )
