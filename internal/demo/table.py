"""The demo's live table: what megamon reports, read from ``/metrics`` as Prometheus would."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

PREFIX = "megamon_"


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


def rows(text: str) -> dict[str, dict[str, Row]]:
    """Kind → resource name → its row."""
    table: dict[str, dict[str, Row]] = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found = _kind_and_suffix(sample.name, KINDS)
            if found is None:
                continue
            kind, suffix = found
            labels = dict(sample.labels)
            state = labels.pop("provisioning_state", None)
            name = labels.get(_KEYS[kind], "?")
            row = table[kind].setdefault(name, Row(labels))
            if state is not None:
                row.provisioning = (state, sample.value)
            else:
                row.values[suffix] = sample.value
    return table


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def _line(kind: str, name: str, row: Row) -> str:
    up = "UP  " if row.values.get("up") == 1.0 else "down"
    state, took = row.provisioning or ("-", None)
    shape = f"{row.labels.get('tpu_accelerator', '')} {row.labels.get('tpu_topology', '')}"
    return (
        f"{kind:15} {name[:26]:26} {shape[:28]:28} {up} {state:12} {_duration(took):>7} "
        f"{int(row.values.get('interruption_count', 0)):>4} "
        f"{_duration(row.values.get('down_time_between_recovery_mean_seconds')):>7} "
        f"{_duration(row.values.get('up_time_between_interruption_mean_seconds')):>7}"
    )


HEADER = (
    f"{'kind':15} {'name':26} {'accelerator / topology':28} {'up':4} {'provisioning':12} "
    f"{'took':>7} {'intr':>4} {'MTTR':>7} {'MTBI':>7}"
)


def render(text: str) -> str:
    """The table of every node pool and workload megamon reports."""
    table = rows(text)
    lines = [HEADER, "-" * len(HEADER)]
    for kind in ("nodepool", "jobset", "leaderworkerset", "slice", "jobset_nodes"):
        for name in sorted(table.get(kind, {})):
            lines.append(_line(kind, name, table[kind][name]))
    return "\n".join(lines)
