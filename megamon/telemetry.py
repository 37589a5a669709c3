"""Instruments megamon keeps about itself: latencies of its dependencies and error counters.

They are ordinary prometheus-client metrics registered in the registry the caller passes (the
application's private one, never the module-global default), and handed to the components
that observe them through their constructors. The fleet's own figures are not here: those are
rendered from the latest report by the collector.

Every labelled counter starts at 0 for each kind megamon tracks: a counter whose series only
appears at its first increment is invisible to ``increase()`` and ``rate()`` (the first sample
is already 1, there is nothing to compare it with), so an alert on the first corrupt event file
would never fire.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from megamon.domain.kinds import Kind
from megamon.domain.rejections import REASONS

LABEL_OPERATION = "operation"
LABEL_KIND = "kind"
LABEL_REASON = "reason"
LABEL_METHOD = "method"
LABEL_ERROR = "error"

METHOD_LIST_NODE_POOLS = "ListNodePools"
"""GKE's ListNodePools: the cluster's node pools, every poll."""
METHOD_GET_RESOURCE_POLICY = "GetResourcePolicy"
"""Compute Engine's ResourcePolicies.Get: the topology of a workload policy (TPU7x), once per
policy."""
GKE_METHODS = (METHOD_LIST_NODE_POOLS, METHOD_GET_RESOURCE_POLICY)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Instruments:
    """The self-observation metrics of one megamon process."""

    def __init__(
        self, prefix: str, registry: CollectorRegistry, kinds: Iterable[Kind] = tuple(Kind)
    ) -> None:
        self.registry = registry
        self.gcs_latency = Histogram(
            f"{prefix}_gcs_latency_seconds",
            "Latency of Google Cloud Storage calls (event store and report exporter), "
            "retries included.",
            [LABEL_OPERATION],
            registry=registry,
            buckets=_LATENCY_BUCKETS,
        )
        self.corrupt_objects = Counter(
            f"{prefix}_event_store_corrupt_objects",
            "Event files that could not be parsed and were quarantined (copied aside).",
            [LABEL_KIND],
            registry=registry,
        )
        self.refused_events = Counter(
            f"{prefix}_event_store_refused_events",
            "Events (and other log lines) dated beyond now plus the clock skew allowance, "
            "refused when the history was loaded; the objects that hold them are kept as "
            "they are.",
            [LABEL_KIND],
            registry=registry,
        )
        self.store_conflicts = Counter(
            f"{prefix}_event_store_conflicts",
            "Compare-and-swap writes that lost to another writer and were re-applied.",
            [LABEL_KIND],
            registry=registry,
        )
        self.writer_standing_by = Gauge(
            f"{prefix}_history_writer_standing_by",
            "1 while another process holds the history's writer lease and this one records "
            "nothing (it takes over when the lease lapses or is released), else 0.",
            registry=registry,
        )
        self.history_refused = Gauge(
            f"{prefix}_history_refused",
            "1 while a kind's history is refused: its snapshot is missing or not the one its "
            "mark covers, and the log no longer holds what the mark covers. Nothing of the "
            "kind is recorded (the service is not ready) until the file is restored.",
            [LABEL_KIND],
            registry=registry,
        )
        self.history_rebuilds = Counter(
            f"{prefix}_history_rebuilds",
            "Kinds whose history was rebuilt from the log at load, because their snapshot was "
            "missing or not the one its mark covers.",
            [LABEL_KIND],
            registry=registry,
        )
        self.summary_state_rebuilds = Counter(
            f"{prefix}_summary_state_rebuilds",
            "Kinds whose summaries were folded from the history at start-up instead of read "
            "from the summary state beside the snapshot, by why: missing, stale (written "
            "beside another snapshot), corrupt, unreadable.",
            [LABEL_KIND, LABEL_REASON],
            registry=registry,
        )
        self.history_write_failures = Counter(
            f"{prefix}_history_write_failures",
            "Writes of the history the store refused (segments, snapshots, archives, the "
            "writer lease's renewal): a full disk, a store outage. What was not written is "
            "kept in memory and written again.",
            registry=registry,
        )
        self.history_last_write = Gauge(
            f"{prefix}_history_last_write_timestamp_seconds",
            "When a write of the history (a segment or a snapshot) last landed, in seconds "
            "since the epoch; 0 before the first (or while standing by).",
            registry=registry,
        )

        self.gke_latency = Histogram(
            f"{prefix}_gke_latency_seconds",
            "Latency of Google Cloud API calls about the cluster's node pools (GKE "
            "ListNodePools, Compute Engine GetResourcePolicy), retries included, by method and "
            "whether the call failed.",
            [LABEL_METHOD, LABEL_ERROR],
            registry=registry,
            buckets=_LATENCY_BUCKETS,
        )
        for method in GKE_METHODS:
            for failed in ("false", "true"):
                self.gke_latency.labels(method=method, error=failed)
        self.aggregation_duration = Histogram(
            f"{prefix}_aggregation_duration_seconds",
            "Duration of one aggregation cycle: observe, record events, summarize, report.",
            registry=registry,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0),
        )
        self.observation_errors = Counter(
            f"{prefix}_observation_errors",
            "Objects skipped because they could not be observed (bad topology, missing or "
            "malformed fields, nodes of unknown node pools), by kind and reason; each "
            "distinct problem counts once.",
            [LABEL_KIND, LABEL_REASON],
            registry=registry,
        )
        for kind in kinds:
            for counter in (
                self.corrupt_objects,
                self.refused_events,
                self.store_conflicts,
                self.history_rebuilds,
            ):
                counter.labels(kind=kind.value)
            self.history_refused.labels(kind=kind.value)
            for reason in sorted(REASONS):
                self.observation_errors.labels(kind=kind.value, reason=reason)

    def observe_gke(self, method: str, seconds: float, *, failed: bool) -> None:
        """One Google Cloud API call of ``method`` (a ``METHOD_*`` constant) that took
        ``seconds``; ``failed``: it raised (its count is the errors' count)."""
        error = "true" if failed else "false"
        self.gke_latency.labels(method=method, error=error).observe(seconds)

    def count_skipped(self, kind: str, reason: str) -> None:
        """One more object of ``kind`` skipped for ``reason`` (a ``REASON_*`` constant)."""
        self.observation_errors.labels(kind=kind, reason=reason).inc()

    @classmethod
    def unregistered(cls, prefix: str = "megamon") -> Instruments:
        """Instruments nobody scrapes, for commands that are not the service."""
        return cls(prefix, CollectorRegistry())
