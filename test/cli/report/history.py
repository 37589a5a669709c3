"""A small known history for the ``megamon report`` tests, written through the real
``EventLog`` (``internal.tools.scripted_history``), plus the ``reports/latest.json`` that
labels the live resources.

Timeline, in hours after T (now = T+10h)::

    np-a        v5p 2x2x1  down 0 · up 1 · down 5 · up 6                    live
    np-b        v5p 2x2x1  down 0 · up .5 · planned 2 · up 3 · failed 8     live
    np-old      v6e 4x4    down 0 · up 2 · retired at 4                     archived
    team/train  v5p 2x2x1  down 1 · up 1.5   (jobset, key js-1)             live
"""

from __future__ import annotations

from internal.tools.scripted_history import (
    DOWN,
    FAILED,
    PLANNED,
    UP,
    Batch,
    ScriptedResource,
    export_latest_report,
    record,
)
from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs
from megamon.publishing.exporters.archives import ObjectReportExporter
from megamon.stores.base import EventStore

T = timestamps.parse("2026-06-01T00:00:00Z")
M = 60 * timestamps.NANOS_PER_SECOND
H = 60 * M
NOW = T + 10 * H
NOW_TEXT = "2026-06-01T10:00:00Z"

V5P = {"tpu_accelerator": "tpu-v5p-slice", "tpu_topology": "2x2x1"}
V6E = {"tpu_accelerator": "tpu-v6e-slice", "tpu_topology": "4x4"}

FLEET = [
    ScriptedResource(
        Kind.NODEPOOL,
        "np-a",
        Attrs(nodepool_name="np-a", **V5P),
        ((T, DOWN), (T + H, UP), (T + 5 * H, DOWN), (T + 6 * H, UP)),
    ),
    ScriptedResource(
        Kind.NODEPOOL,
        "np-b",
        Attrs(nodepool_name="np-b", **V5P),
        ((T, DOWN), (T + 30 * M, UP), (T + 2 * H, PLANNED), (T + 3 * H, UP), (T + 8 * H, FAILED)),
    ),
    ScriptedResource(
        Kind.NODEPOOL,
        "np-old",
        Attrs(nodepool_name="np-old", **V6E),
        ((T, DOWN), (T + 2 * H, UP)),
        retired=T + 4 * H,
    ),
    ScriptedResource(
        Kind.JOBSET,
        "js-1",
        Attrs(jobset_name="train", jobset_namespace="team", jobset_uid="js-1", **V5P),
        ((T + H, DOWN), (T + 90 * M, UP)),
    ),
]


def fill(store: EventStore, exporter: ObjectReportExporter | None = None) -> Batch:
    """Write the timeline up to ``NOW`` and, given an exporter, the latest report."""
    latest = record(store, FLEET, NOW)
    if exporter is not None:
        export_latest_report(exporter, store, latest, NOW)
    return latest
