"""Fixtures for secure ``/metrics``: the Kubernetes emulator answering the reviews, a registry
with megamon's collector, and a metrics server over TLS guarded by the emulator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from internal.fakekube.fixtures import fake_kube, kube_api_client
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.serving.auth import KubeGuard
from megamon.serving.http import MetricsServer
from megamon.serving.tls import ServingTLS

__all__ = ["fake_kube", "kube_api_client"]

T = 1_780_272_000 * 10**9


class Latest:
    """The aggregator's side: the latest report, absent until a test sets one."""

    def __init__(self) -> None:
        self.report: Report | None = None

    def __call__(self) -> Report | None:
        return self.report

    def ready(self) -> bool:
        return self.report is not None

    def publish(self) -> None:
        obs = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="tpu-pool-a"))
        self.report = Report(
            generated_at=T, kinds={Kind.NODEPOOL: KindReport(observations={"a": obs})}
        )


class Clock:
    """A monotonic clock the test moves, to step over cache TTLs without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def latest() -> Latest:
    return Latest()


@pytest.fixture
def registry(latest: Latest) -> CollectorRegistry:
    registry = CollectorRegistry()
    build = BuildInfo(version="0.1.0", commit="abc1234", date="2026-06-01")
    registry.register(ReportCollector("megamon", latest, build=build))
    return registry


@pytest.fixture(scope="module")
def self_signed() -> ServingTLS:
    return ServingTLS.self_signed()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def guard(kube_api_client: Any, clock: Clock) -> KubeGuard:
    return KubeGuard(kube_api_client, clock=clock, timeout=2.0)


@pytest.fixture
def secure_metrics(
    registry: CollectorRegistry, latest: Latest, self_signed: ServingTLS, guard: KubeGuard
) -> Iterator[MetricsServer]:
    server = MetricsServer("127.0.0.1:0", registry, tls=self_signed.context, guard=guard)
    with server:
        yield server
