"""The demo's live table: what megamon reports, read from ``/metrics`` as Prometheus would,
with each resource's state spelled out.

``/metrics`` says up or down; why a resource is down is in the report megamon exports
(``reports/latest.json``: each observation's ``status``, e.g. a JobSet's ``Completed``,
``Failed`` or ``Suspended`` condition, a node pool's GKE status, and whether it is
``failed``). The table joins the two, so a finished, failed, suspended or deleted resource
reads as such instead of "down". The words are ``megamon report``'s (``up``, ``down``,
``failed``, ``provisioning``) or say more precisely why a resource is expected down or down
(``completed``, ``deleting``, ``deleted``, ``suspended``, ``interrupted``); a failed resource
reads ``failed``, as in the report, whatever its status. A resource that leaves the fleet is
kept in the table as ``deleted`` for as long as the demo runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from prometheus_client.parser import text_string_to_metric_families

PREFIX = "megamon_"

UP = "up"
PROVISIONING = "provisioning"
COMPLETED = "completed"
FAILED = "failed"
SUSPENDED = "suspended"
DELETING = "deleting"
DELETED = "deleted"
INTERRUPTED = "interrupted"
DOWN = "down"

_STATUS_STATES = {
    "Completed": COMPLETED,
    "Failed": FAILED,
    "Suspended": SUSPENDED,
    "ERROR": FAILED,
    "RUNNING_WITH_ERROR": FAILED,
    "STOPPING": DELETING,
    "DELETING": DELETING,
    "DELETED": DELETED,
}
"""Observation statuses (JobSet conditions, GKE node pool statuses) that explain a down."""


@dataclass
class Row:
    """The series of one resource, by metric suffix (``up``, ``interruption_count``, …)."""

    labels: dict[str, str]
    values: dict[str, float] = field(default_factory=dict)
    provisioning: tuple[str, float] | None = None


def _kind_and_suffix(name: str, kinds: tuple[str, ...]) -> tuple[str, str] | None:
    if not name.startswith(PREFIX):
        return None
    rest = name[len(PREFIX) :]
    for kind in kinds:  # longest first: jobset_nodes before jobset
        if rest.startswith(kind + "_"):
            return kind, rest[len(kind) + 1 :]
    return None


KINDS = ("jobset_nodes", "nodepool", "jobset", "slice", "leaderworkerset")
_KEYS = {
    "nodepool": "nodepool_name",
    "jobset": "jobset_name",
    "jobset_nodes": "jobset_name",
    "slice": "slice_name",
    "leaderworkerset": "lws_name",
}
_REPORT_KEYS = {
    "nodepool": ("nodePoolsUp", "nodePoolName"),
    "jobset": ("jobSetsUp", "jobsetName"),
    "jobset_nodes": ("jobSetNodesUp", "jobsetName"),
    "slice": ("slicesUp", "sliceName"),
    "leaderworkerset": ("leaderWorkerSetsUp", "lwsName"),
}


def rows(text: str) -> dict[str, dict[str, Row]]:
    """Kind → resource name → its row."""
    table: dict[str, dict[str, Row]] = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == PREFIX + "jobset_suspended":
                continue  # a status, read from the report
            found = _kind_and_suffix(sample.name, KINDS)
            if found is None:
                continue
            kind, suffix = found
            labels = dict(sample.labels)
            name = labels.get(_KEYS[kind])
            if name is None:
                continue  # a fleet-wide series (histograms, chip figures): no one resource's
            state = labels.pop("provisioning_state", None)
            row = table[kind].setdefault(name, Row(labels))
            if state is not None:
                row.provisioning = (state, sample.value)
            else:
                row.values[suffix] = sample.value
    return table


class Seen(NamedTuple):
    """What the exported report says of one resource besides up or down."""

    status: str
    failed: bool


def statuses(report: dict[str, Any] | None) -> dict[tuple[str, str], Seen]:
    """(kind, name) → the observation's status and whether it is failed, from an exported
    report document."""
    found: dict[tuple[str, str], Seen] = {}
    for kind, (section, name_key) in _REPORT_KEYS.items():
        for observation in ((report or {}).get(section) or {}).values():
            name, status = observation.get(name_key), observation.get("status")
            if isinstance(name, str):
                text = status if isinstance(status, str) else ""
                found[(kind, name)] = Seen(text, observation.get("failed") is True)
    return found


def state(row: Row, status: str, *, failed: bool = False) -> str:
    """The one word that says what a resource is doing now."""
    if row.values.get("up") == 1.0:
        return UP
    if failed:
        return FAILED  # megamon report's word, whatever the status or provisioning says
    if status in _STATUS_STATES:
        return _STATUS_STATES[status]
    if row.provisioning is not None and row.provisioning[0] == PROVISIONING:
        return PROVISIONING
    if row.values.get("interruption_count", 0) > row.values.get("recovery_count", 0):
        return INTERRUPTED
    return DOWN


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def _first_up(row: Row, now: str) -> str:
    """How long the resource took to come up the first time, or why it has no such time."""
    provisioning, took = row.provisioning or ("-", None)
    if provisioning == "success":
        return _duration(took)
    if provisioning == PROVISIONING and now != PROVISIONING:
        return "never"  # finished, failed, suspended or deleted before it was ever up
    return provisioning


def _line(kind: str, name: str, row: Row, now: str) -> str:
    first_up = _first_up(row, now)
    shape = f"{row.labels.get('tpu_accelerator', '')} {row.labels.get('tpu_topology', '')}"
    return (
        f"{kind:15} {name[:26]:26} {shape[:28]:28} {now:12} {first_up:>12} "
        f"{int(row.values.get('interruption_count', 0)):>4} "
        f"{_duration(row.values.get('down_time_between_recovery_mean_seconds')):>7} "
        f"{_duration(row.values.get('up_time_between_interruption_mean_seconds')):>7}"
    )


HEADER = (
    f"{'kind':15} {'name':26} {'accelerator / topology':28} {'state':12} {'first up in':>12} "
    f"{'intr':>4} {'MTTR':>7} {'MTBI':>7}"
)
ORDER = ("nodepool", "jobset", "leaderworkerset", "slice", "jobset_nodes")


class Table:
    """The table across redraws: it remembers resources, to show those that left as deleted."""

    def __init__(self) -> None:
        self._last: dict[str, dict[str, Row]] = defaultdict(dict)

    def render(
        self,
        text: str,
        report: dict[str, Any] | None = None,
        archived: dict[str, dict[str, Row]] | None = None,
    ) -> str:
        """Every node pool and workload megamon reports, and those it reported before or
        archived (retired from the live history: deleted)."""
        table = rows(text)
        found = statuses(report)
        lines = [HEADER, "-" * len(HEADER)]
        for kind in ORDER:
            live = table.get(kind, {})
            known = {**(archived or {}).get(kind, {}), **self._last[kind]}
            gone = {name: row for name, row in known.items() if name not in live}
            self._last[kind] = {**gone, **live}
            for name in sorted(self._last[kind]):
                row = self._last[kind][name]
                seen = found.get((kind, name), Seen("", failed=False))
                now = DELETED if name in gone else state(row, seen.status, failed=seen.failed)
                lines.append(_line(kind, name, row, now))
        return "\n".join(lines)


def archived_row(attrs: dict[str, object]) -> tuple[str, Row] | None:
    """The name and a label-only row of a retired resource, from its archived attrs."""
    labels = {
        label: str(attrs.get(alias) or attrs.get(label) or "")
        for label, alias in (
            ("nodepool_name", "nodePoolName"),
            ("jobset_name", "jobsetName"),
            ("slice_name", "sliceName"),
            ("lws_name", "lwsName"),
            ("tpu_accelerator", "tpuAccelerator"),
            ("tpu_topology", "tpuTopology"),
        )
    }
    name = next((labels[key] for key in _KEYS.values() if labels.get(key)), "")
    return (name, Row({k: v for k, v in labels.items() if v})) if name else None


def render(text: str, report: dict[str, Any] | None = None) -> str:
    """One table, without memory of earlier redraws."""
    return Table().render(text, report)
