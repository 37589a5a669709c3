"""The series of maintenance ahead, rendered from the latest report; the help of the
allocatable chips (which the collector writes beside each pool's other series).

Node pools carry the maintenance GKE announced on their nodes (``NodePoolAttrs``) and the
chips their nodes report allocatable (``Observation.tpu_chips_allocatable``); this module
turns the first into families. The windows are measured from the report's ``generated_at``, the
moment its observations were made, so a scrape adds no clock of its own.
"""

from __future__ import annotations

from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

from megamon.domain import interruptions, maintenance
from megamon.domain.kinds import Kind
from megamon.domain.observations import NodePoolAttrs
from megamon.domain.reports import Report
from megamon.publishing.metrics import names

SCHEDULED_HELP = {
    names.MAINTENANCE_SCHEDULED_CHIPS: (
        "TPU chips of the node pools with a host maintenance announced (GKE's "
        "scheduled-maintenance-time) within the window, by accelerator."
    ),
    names.MAINTENANCE_SCHEDULED_NODEPOOLS: (
        "Node pools with a host maintenance announced within the window, by accelerator."
    ),
    names.MAINTENANCE_SCHEDULED_JOBSETS: (
        "JobSets whose TPU provisioner node pools have a host maintenance announced within the "
        "window."
    ),
}
ALLOCATABLE_HELP = (
    "TPU chips the node pool's nodes report allocatable (status.allocatable google.com/tpu), "
    "beside the chips its topology promises (tpu_chip_count); only when a node reports them."
)


def scheduled(prefix: str, report: Report) -> list[Metric]:
    """The three maintenance-ahead gauges: a sample per window (and accelerator of the node
    pools observed now), 0 when nothing is announced in it, so alerts compare numbers."""
    windows = [name for name, _ in maintenance.WINDOWS]
    pools = report.kind(Kind.NODEPOOL).observations.values()
    accelerators = sorted({obs.attrs.tpu_accelerator for obs in pools})
    chips = {(w, a): 0 for w in windows for a in accelerators}
    counted = dict.fromkeys(chips, 0)
    jobsets: dict[str, set[str]] = {w: set() for w in windows}
    for obs in pools:
        attrs = obs.attrs
        if not isinstance(attrs, NodePoolAttrs) or obs.reason == interruptions.MAINTENANCE:
            continue  # no announcement, or the maintenance has begun: it is no longer ahead
        for window in maintenance.windows_within(attrs.scheduled_maintenance, report.generated_at):
            chips[window, attrs.tpu_accelerator] += attrs.tpu_chip_count
            counted[window, attrs.tpu_accelerator] += 1
            if attrs.maintenance_jobset:
                jobsets[window].add(attrs.maintenance_jobset)
    families = []
    for suffix, values in (
        (names.MAINTENANCE_SCHEDULED_CHIPS, chips),
        (names.MAINTENANCE_SCHEDULED_NODEPOOLS, counted),
    ):
        family = _family(prefix, suffix)
        for (window, accelerator), value in values.items():
            labels = {names.LABEL_WITHIN: window}
            if accelerator:
                labels[names.LABEL_TPU_ACCELERATOR] = accelerator
            family.samples.append(Sample(family.name, labels, float(value)))
        families.append(family)
    family = _family(prefix, names.MAINTENANCE_SCHEDULED_JOBSETS)
    for window in windows:
        count = float(len(jobsets[window]))
        family.samples.append(Sample(family.name, {names.LABEL_WITHIN: window}, count))
    families.append(family)
    return families


def describe(prefix: str) -> list[Metric]:
    """Every family of this module, empty: for the registry's clash check."""
    name = names.kind_metric(prefix, Kind.NODEPOOL.value, names.TPU_CHIPS_ALLOCATABLE)
    return [
        *(_family(prefix, suffix) for suffix in SCHEDULED_HELP),
        Metric(name, ALLOCATABLE_HELP, "gauge"),
    ]


def _family(prefix: str, suffix: str) -> Metric:
    return Metric(names.process_metric(prefix, suffix), SCHEDULED_HELP[suffix], "gauge")
