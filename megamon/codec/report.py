"""The report JSON: the Go megamon's shape (``nodePoolsUp``, ``nodePoolsUpSummaries``, …,
``nodePoolScheduling``, ``generatedAt``), written by every exporter, and read back for the
attributes it carries (``parse_labels``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from megamon.domain import timestamps
from megamon.domain.kinds import KIND_SPECS, Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import Report
from megamon.domain.summaries import Summary

ATTR_KEYS = frozenset(f.alias or name for name, f in Attrs.model_fields.items())
"""The attribute keys a report embeds in its upness and summary entries."""


def summary_dict(summary: Summary) -> dict[str, Any]:
    """A summary with the Go megamon's keys, durations as integer nanoseconds."""
    return summary.model_dump(by_alias=True, mode="json")


def encode_summaries(summaries: Mapping[str, Summary], *, indent: bool = False) -> bytes:
    """``{key: summary}`` with the Go megamon's keys, keys sorted."""
    option = orjson.OPT_INDENT_2 if indent else 0
    document = {key: summary_dict(summaries[key]) for key in sorted(summaries)}
    return orjson.dumps(document, option=option)


def report_dict(report: Report) -> dict[str, Any]:
    """A report in the Go megamon's shape: ``nodePoolsUp``, ``nodePoolsUpSummaries``, …"""
    document: dict[str, Any] = {}
    for kind, spec in KIND_SPECS.items():
        part = report.kind(kind)
        document[spec.report_up_key] = {
            key: _upness_dict(obs.model_dump(by_alias=True, mode="json"))
            for key, obs in sorted(part.observations.items())
        }
        document[spec.report_summaries_key] = {
            key: _summary_with_attrs(summary, part.observations.get(key))
            for key, summary in sorted(part.summaries.items())
        }
    document["nodePoolScheduling"] = {
        key: job.model_dump(by_alias=True) for key, job in sorted(report.scheduling.items())
    }
    document["generatedAt"] = timestamps.format_ns(report.generated_at)
    return document


def _upness_dict(observation: dict[str, Any]) -> dict[str, Any]:
    """Go embeds the attrs in the upness object: flatten them."""
    attrs = observation.pop("attrs")
    observation.update(attrs)
    return observation


def _summary_with_attrs(summary: Summary, observation: Observation | None) -> dict[str, Any]:
    """Go embeds the attrs in the summary object too."""
    attrs = observation.attrs.model_dump(by_alias=True) if observation is not None else {}
    return {**attrs, **summary_dict(summary)}


def encode_report(report: Report) -> bytes:
    """The report as one line of JSON."""
    return orjson.dumps(report_dict(report))


def parse_labels(data: bytes) -> dict[Kind, dict[str, dict[str, object]]]:
    """Attributes per kind and key from a report in the Go megamon's shape (the upness and
    summary entries both embed them)."""
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
                    attrs = {k: v for k, v in entry.items() if k in ATTR_KEYS}
                    per_key.setdefault(key, {}).update(attrs)
        labels[kind] = per_key
    return labels
