"""The resource kinds megamon tracks, as data: adding a kind means adding a row here, not a
field and a flag per kind across the code base.

The built-in kinds are the members of ``Kind``. A kind declared by a description in the
configuration (docs/kinds.md) is a ``Kind`` too, made by ``Kind.described``: it carries its own
``KindSpec``, so the event log, the stores and the metrics treat it exactly as a built-in kind,
and no registry of kinds exists anywhere in the process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

NOUN_PATTERN: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
"""What a kind's value may be: it is the metric infix (``megamon_<noun>_up``) and the
archive directory name, so lowercase letters, digits and single underscores only."""


@dataclass(frozen=True, slots=True)
class KindSpec:
    """Where a kind's history and report entries live (the Go megamon's names)."""

    event_file: str
    report_up_key: str
    report_summaries_key: str
    noun: str = ""
    """How the metric HELP texts name one resource of the kind (``JobSet``)."""
    workload_labels: tuple[str, str, str] = ("", "", "")
    """A described kind's label keys for ``Attrs.workload_name``, ``_namespace``, ``_uid``."""
    restarts: bool = False
    """Whether the kind reads a restart count (``megamon_<kind>_restarts``)."""
    counts_nodes: bool = False
    """Whether the kind counts nodes, and so nodes beyond the expected ones
    (``megamon_<kind>_surplus_nodes``)."""


class Kind(StrEnum):
    """A resource kind; its value is the metric infix (``megamon_<kind>_up``).

    Iterating ``Kind`` yields the built-in kinds only. ``Kind("trainjob")`` of any other valid
    noun yields a described kind without a spec (as read back from an archive entry or a
    command line); ``Kind.described`` makes one with its spec.
    """

    NODEPOOL = "nodepool"
    JOBSET = "jobset"
    JOBSET_NODES = "jobset_nodes"
    SLICE = "slice"
    LEADERWORKERSET = "leaderworkerset"

    @classmethod
    def _missing_(cls, value: object) -> Kind | None:
        if not isinstance(value, str) or not NOUN_PATTERN.fullmatch(value):
            return None
        member = str.__new__(cls, value)
        member._name_ = value.upper()
        member._value_ = value
        return member

    @classmethod
    def described(cls, noun: str, spec: KindSpec) -> Kind:
        """The kind of a description: ``noun`` (not a built-in one) with its ``spec``."""
        if noun in BUILTIN_VALUES:
            raise ValueError(f"{noun!r} is a built-in kind")
        kind = cls(noun)
        kind.__dict__["spec"] = spec
        return kind

    @property
    def builtin(self) -> bool:
        return self._value_ in BUILTIN_VALUES


BUILTIN_VALUES: Final = frozenset(kind.value for kind in Kind)

KIND_SPECS: dict[Kind, KindSpec] = {
    Kind.NODEPOOL: KindSpec(
        "node-pools.json", "nodePoolsUp", "nodePoolsUpSummaries", "node pool", counts_nodes=True
    ),
    Kind.JOBSET: KindSpec(
        "jobsets.json", "jobSetsUp", "jobSetsUpSummaries", "JobSet", restarts=True
    ),
    Kind.JOBSET_NODES: KindSpec(
        "jobset-nodes.json",
        "jobSetNodesUp",
        "jobSetNodesUpSummaries",
        "JobSet's nodes",
        counts_nodes=True,
    ),
    Kind.SLICE: KindSpec("slices.json", "slicesUp", "slicesUpSummaries", "slice"),
    Kind.LEADERWORKERSET: KindSpec(
        "leader-worker-sets.json",
        "leaderWorkerSetsUp",
        "leaderWorkerSetsUpSummaries",
        "LeaderWorkerSet",
    ),
}
"""The built-in kinds' specs: the Go megamon's file names and report keys."""


def kind_spec(kind: Kind) -> KindSpec:
    """The spec of a built-in or described kind; ``KeyError`` for a described kind that was
    made without its description (``Kind("x")``): its file names are not known."""
    found = KIND_SPECS.get(kind) or kind.__dict__.get("spec")
    if not isinstance(found, KindSpec):
        raise KeyError(f"kind {kind.value!r} is not described in the configuration")
    return found


def event_file(kind: Kind) -> str:
    """The name of the kind's live event file, e.g. ``node-pools.json``."""
    return kind_spec(kind).event_file
