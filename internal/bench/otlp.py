"""Benchmark: what one ``otlp`` push of a fleet's ``/metrics`` series costs the pusher thread.

A report of N TPU node pools (every series a node pool has) is collected from the same
registry ``/metrics`` serves, converted to OTLP metrics and encoded to the protobuf request
the OTLP/HTTP exporter sends; nothing is sent. Run with ``make bench`` or
``python -m internal.bench.otlp [--pools N]``.
"""

from __future__ import annotations

import argparse
import time

from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics.export import MetricsData, ResourceMetrics, ScopeMetrics
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client import CollectorRegistry

from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.publishing.exporters.otlp import SCOPE_NAME, megamon_resource, to_metrics
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector

MINUTE = 60 * 10**9


def fleet_report(pools: int) -> Report:
    """``pools`` up node pools of 64 chips, each with one interruption and one recovery."""
    observations = {
        f"np-{i:05d}": Observation.build(
            expected=16,
            ready=16,
            status="RUNNING",
            attrs=Attrs(
                nodepool_name=f"np-{i:05d}",
                tpu_topology="8x8",
                tpu_accelerator="tpu-v5-lite-podslice",
                tpu_chip_count=64,
            ),
        )
        for i in range(pools)
    }
    summary = Summary(
        down_time_initial=5 * MINUTE,
        interruption_count=1,
        recovery_count=1,
        down_time=9 * MINUTE,
        up_time=600 * MINUTE,
        total_down_time_between_recovery=4 * MINUTE,
        latest_down_time_between_recovery=4 * MINUTE,
        mean_down_time_between_recovery=4 * MINUTE,
        total_up_time_between_interruption=300 * MINUTE,
        latest_up_time_between_interruption=300 * MINUTE,
        mean_up_time_between_interruption=300 * MINUTE,
        provisioning_duration=5 * MINUTE,
        provisioning_state=ProvisioningState.SUCCESS,
    )
    part = KindReport(observations=observations, summaries=dict.fromkeys(observations, summary))
    return Report(generated_at=0, kinds={Kind.NODEPOOL: part})


def _best_of(runs: int, fn: object) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    report = fleet_report(args.pools)
    registry = CollectorRegistry()
    build = BuildInfo(version="bench", commit="bench", date="bench")
    registry.register(ReportCollector("megamon", lambda: report, build=build))
    resource = megamon_resource("bench")
    scope = InstrumentationScope(SCOPE_NAME, "bench")

    def convert() -> list[object]:
        return list(to_metrics(registry.collect(), now=1, start=0))

    metrics = convert()
    data = MetricsData([ResourceMetrics(resource, [ScopeMetrics(scope, metrics, "")], "")])  # type: ignore[list-item]
    convert_s = _best_of(args.runs, convert)
    encode_s = _best_of(args.runs, lambda: encode_metrics(data).SerializeToString())
    points = sum(len(m.data.data_points) for m in metrics)  # type: ignore[attr-defined]
    size = len(encode_metrics(data).SerializeToString())
    print(f"otlp push of {args.pools} node pools, best of {args.runs}, CPU time, one core")
    print(f"{'points':>8} {'MB':>6} {'collect+convert s':>18} {'encode s':>9}")
    print(f"{points:>8,} {size / 1e6:>6.1f} {convert_s:>18.2f} {encode_s:>9.2f}")


if __name__ == "__main__":
    main()
