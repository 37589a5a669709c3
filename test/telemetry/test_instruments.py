"""megamon's own counters exist at 0 from the start, so the first event is an increase."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from megamon.domain.kinds import Kind
from megamon.domain.rejections import REASONS
from megamon.telemetry import Instruments

COUNTERS = (
    "megamon_event_store_corrupt_objects_total",
    "megamon_event_store_conflicts_total",
    "megamon_observation_errors_total",
)


def test_every_labelled_counter_starts_at_0_for_each_tracked_kind() -> None:
    registry = CollectorRegistry()
    Instruments("megamon", registry, (Kind.NODEPOOL, Kind.JOBSET))
    for name in COUNTERS[:2]:
        for kind in ("nodepool", "jobset"):
            assert registry.get_sample_value(name, {"kind": kind}) == 0.0, (name, kind)
        assert registry.get_sample_value(name, {"kind": "slice"}) is None  # not tracked
    errors = COUNTERS[2]
    for kind in ("nodepool", "jobset"):
        for reason in REASONS:  # every reason a skip can be counted with
            labels = {"kind": kind, "reason": reason}
            assert registry.get_sample_value(errors, labels) == 0.0, labels
    assert registry.get_sample_value(errors, {"kind": "slice", "reason": "invalid"}) is None


def test_by_default_every_kind_is_initialised() -> None:
    registry = CollectorRegistry()
    instruments = Instruments("megamon", registry)
    instruments.corrupt_objects.labels(kind="jobset").inc()
    for kind in Kind:
        expected = 1.0 if kind is Kind.JOBSET else 0.0
        value = registry.get_sample_value(COUNTERS[0], {"kind": kind.value})
        assert value == expected, kind


def test_every_google_cloud_call_and_its_failures_start_at_0() -> None:
    """``_count{error="true"}`` is the failures' count: at 0 before the first, so an alert
    on ``increase()`` sees the first refused workload policy."""
    registry = CollectorRegistry()
    instruments = Instruments("megamon", registry)
    name = "megamon_gke_latency_seconds_count"
    for method in ("ListNodePools", "GetResourcePolicy"):
        for error in ("true", "false"):
            labels = {"method": method, "error": error}
            assert registry.get_sample_value(name, labels) == 0.0, labels
    instruments.observe_gke("GetResourcePolicy", 0.2, failed=True)
    failed = {"method": "GetResourcePolicy", "error": "true"}
    assert registry.get_sample_value(name, failed) == 1.0
    assert registry.get_sample_value(name, {"method": "ListNodePools", "error": "true"}) == 0.0
