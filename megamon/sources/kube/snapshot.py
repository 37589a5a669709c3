"""A snapshot of the watched cluster: projections only, no I/O (observers read these)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from megamon.domain.kinds import Kind
from megamon.sources.kube.described import DescribedView
from megamon.sources.kube.projections import JobSetView, LwsView, NodeView, PodView, SliceView


@dataclass(frozen=True)
class ClusterSnapshot:
    """Projections of every watched object at one moment, keyed as the cache keys them."""

    nodes: Mapping[str, NodeView] = field(default_factory=dict)
    leader_pods: Mapping[str, PodView] = field(default_factory=dict)
    jobsets: Mapping[str, JobSetView] = field(default_factory=dict)
    leaderworkersets: Mapping[str, LwsView] = field(default_factory=dict)
    slices: Mapping[str, SliceView] = field(default_factory=dict)
    described: Mapping[Kind, Mapping[str, DescribedView]] = field(default_factory=dict)
    """Per described kind whose resource the cluster serves and has listed, its objects."""
