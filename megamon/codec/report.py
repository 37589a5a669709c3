"""The report JSON: the Go megamon's shape (``jobSetsUp``, ``jobSetsUpSummaries``, …,
``nodePoolScheduling``), written by every exporter, and read back for the attributes it
carries (``parse_labels``).

Byte-compatible with what the Go megamon's exporters write for the same report
(``json.Marshal`` of ``records.Report``), plus only new keys: the objects' keys come in the
Go structs' field order (``Upness``: counts, ``status``, ``expectedDown``, then the embedded
``Attrs``; a summary: the ``Attrs``, then the ``EventSummary``), every attribute key is
written even when empty (a summary whose resource has no observation carries empty ones, as
in Go), map keys are sorted, and ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped as Go
escapes them. megamon's own keys follow Go's in each object: ``failed`` and ``up`` on an
upness, ``provisioningDuration`` and ``provisioningState`` on a summary, ``generatedAt``
last in the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from megamon.domain import timestamps
from megamon.domain.kinds import KIND_SPECS, Kind, kind_spec
from megamon.domain.observations import Attrs, Observation, WorkloadAttrs
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import Summary

GO_REPORT_ORDER = (
    Kind.JOBSET,
    Kind.JOBSET_NODES,
    Kind.LEADERWORKERSET,
    Kind.NODEPOOL,
    Kind.SLICE,
)
"""The order of ``records.Report``'s fields, by kind."""

GO_ATTR_FIELDS = (
    "jobset_name",
    "jobset_namespace",
    "jobset_uid",
    "lws_name",
    "lws_namespace",
    "lws_uid",
    "tpu_topology",
    "tpu_accelerator",
    "tpu_chip_count",
    "spot",
    "nodepool_name",
    "slice_name",
    "slice_uid",
    "slice_owner_kind",
    "slice_owner_name",
    "slice_owner_namespace",
)
"""``Attrs`` fields in the order of Go's ``records.Attrs``."""

_ATTR_ALIASES = tuple((name, Attrs.model_fields[name].alias or name) for name in GO_ATTR_FIELDS)
ATTR_KEYS = frozenset(alias for _, alias in _ATTR_ALIASES)
"""The attribute keys a report embeds in its upness and summary entries."""

EXPECTED_DOWN_KEY = "expectedDown"
SCHEDULING_KEY = "nodePoolScheduling"
GENERATED_AT_KEY = "generatedAt"

_GO_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def go_json(document: object, *, indent: bool = False) -> bytes:
    """``document`` as Go's ``json.Marshal`` writes it: no spaces, HTML characters escaped.

    The escaped characters can only occur inside strings in orjson's output, so replacing
    them in the bytes is exact.
    """
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2 if indent else 0)
    for raw, escaped in _GO_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def attrs_dict(attrs: Attrs) -> dict[str, Any]:
    """Every attribute key, in Go's order, empty ones included."""
    return {alias: getattr(attrs, name) for name, alias in _ATTR_ALIASES}


def summary_dict(summary: Summary) -> dict[str, Any]:
    """A summary with the Go megamon's keys, durations as integer nanoseconds."""
    return summary.model_dump(by_alias=True, mode="json")


def encode_summaries(summaries: Mapping[str, Summary], *, indent: bool = False) -> bytes:
    """``{key: summary}`` with the Go megamon's keys, keys sorted."""
    document = {key: summary_dict(summaries[key]) for key in sorted(summaries)}
    return go_json(document, indent=indent)


def upness_dict(observation: Observation) -> dict[str, Any]:
    """Go's ``records.Upness``: counts, status, ``expectedDown``, the attributes; then
    megamon's ``failed`` and ``up``."""
    return {
        "readyCount": observation.ready,
        "expectedCount": observation.expected,
        "unknownCount": observation.unknown,
        "status": observation.status,
        EXPECTED_DOWN_KEY: observation.expected_down,
        **attrs_dict(observation.attrs),
        "failed": observation.failed,
        "up": observation.up,
    }


def _summary_with_attrs(summary: Summary, observation: Observation | None) -> dict[str, Any]:
    """Go's ``UpnessSummaryWithAttrs``: the resource's attributes (empty without an
    observation), then the summary."""
    attrs = observation.attrs if observation is not None else _NO_ATTRS
    return {**attrs_dict(attrs), **summary_dict(summary)}


_NO_ATTRS = Attrs()


def report_dict(report: Report) -> dict[str, Any]:
    """A report in the Go megamon's shape and order, ``generatedAt`` last."""
    document: dict[str, Any] = {}
    for kind in GO_REPORT_ORDER:
        spec = KIND_SPECS[kind]
        part = report.kind(kind)
        document[spec.report_up_key] = {
            key: upness_dict(obs) for key, obs in sorted(part.observations.items())
        }
        document[spec.report_summaries_key] = {
            key: _summary_with_attrs(summary, part.observations.get(key))
            for key, summary in sorted(part.summaries.items())
        }
    document[SCHEDULING_KEY] = {
        key: job.model_dump(by_alias=True) for key, job in sorted(report.scheduling.items())
    }
    for kind in sorted((k for k in report.kinds if not k.builtin), key=str):
        _described_parts(document, kind, report.kind(kind))
    document[GENERATED_AT_KEY] = timestamps.format_ns(report.generated_at)
    return document


def _described_parts(document: dict[str, Any], kind: Kind, part: KindReport) -> None:
    """A described kind's two sections (``<noun>Up``, ``<noun>UpSummaries``), after the Go
    megamon's keys: new keys only, which Go's readers ignore. Its attributes include the
    workload's name, namespace and UID (``WorkloadAttrs``)."""
    spec = kind_spec(kind)
    document[spec.report_up_key] = {
        key: {**upness_dict(obs), **_workload_attrs(obs)}
        for key, obs in sorted(part.observations.items())
    }
    document[spec.report_summaries_key] = {
        key: {
            **_summary_with_attrs(summary, part.observations.get(key)),
            **_workload_attrs(part.observations.get(key)),
        }
        for key, summary in sorted(part.summaries.items())
    }


def _workload_attrs(observation: Observation | None) -> dict[str, Any]:
    if observation is None or not isinstance(observation.attrs, WorkloadAttrs):
        return {}
    attrs = observation.attrs
    return {
        "workloadName": attrs.workload_name,
        "workloadNamespace": attrs.workload_namespace,
        "workloadUID": attrs.workload_uid,
    }


def encode_report(report: Report) -> bytes:
    """The report as one line of JSON, as Go's ``json.Marshal`` writes it."""
    return go_json(report_dict(report))


def parse_labels(data: bytes) -> dict[Kind, dict[str, dict[str, object]]]:
    """Attributes per kind and key from a report in the Go megamon's shape (the upness and
    summary entries both embed them; an empty attribute says nothing)."""
    document = orjson.loads(data)
    if not isinstance(document, dict):
        raise TypeError("a report is a JSON object")
    labels: dict[Kind, dict[str, dict[str, object]]] = {}
    for kind, spec in KIND_SPECS.items():
        per_key: dict[str, dict[str, object]] = {}
        for section in (spec.report_up_key, spec.report_summaries_key):
            entries = document.get(section)
            for key, entry in entries.items() if isinstance(entries, dict) else ():
                if isinstance(entry, dict):
                    attrs = {k: v for k, v in entry.items() if k in ATTR_KEYS and v}
                    per_key.setdefault(key, {}).update(attrs)
        labels[kind] = per_key
    return labels
