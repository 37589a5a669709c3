"""Reports for the exporter tests: a small fleet at a chosen ``generated_at``."""

from __future__ import annotations

from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import ProvisioningState, Summary

MINUTE = 60 * 10**9
HOUR = 60 * MINUTE


def report_at(generated_at: int, *, ready: int = 16) -> Report:
    """One v5e node pool (``ready`` of 16 nodes) and one JobSet running on it."""
    pool = Observation.build(
        expected=16,
        ready=ready,
        status="RUNNING",
        attrs=Attrs(
            nodepool_name="np-a",
            tpu_topology="8x8",
            tpu_accelerator="tpu-v5-lite-podslice",
            tpu_chip_count=64,
        ),
    )
    jobset = Observation.build(
        expected=1,
        ready=1,
        attrs=Attrs(jobset_name="train", jobset_namespace="ml", jobset_uid="uid-1"),
    )
    summary = Summary(
        down_time_initial=5 * MINUTE,
        down_time=5 * MINUTE,
        up_time=HOUR,
        provisioning_duration=5 * MINUTE,
        provisioning_state=ProvisioningState.SUCCESS,
    )
    return Report(
        generated_at=generated_at,
        kinds={
            Kind.NODEPOOL: KindReport(observations={"np-a": pool}, summaries={"np-a": summary}),
            Kind.JOBSET: KindReport(observations={"uid-1": jobset}, summaries={"uid-1": summary}),
        },
    )
