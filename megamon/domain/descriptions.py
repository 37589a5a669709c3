"""Kind descriptions: a training workload kind declared as data, not written as code.

A description says where the resource is served (group, versions, resource), how to read its
``expected`` and ``ready`` counts and its TPU shape (field paths), which conditions end it
(completed: expected down; failed; suspended), and how its history and series are named
(the metric noun, the label keys of its name, namespace and UID, the event file). The format
and the path syntax are documented in docs/kinds.md; ``WorkloadKinds`` in the configuration
is a list of descriptions, or of the names of the ones shipped with megamon.

Everything is checked when the configuration is loaded, so a description that megamon starts
with can be applied to any object: a field that is missing counts as its default, a field of
the wrong type makes that one object unobservable (a problem, logged once), never the kind.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Annotated, Any, Final

from jsonpath_ng.jsonpath import Child, Fields, Index, JSONPath, Wildcard
from jsonpath_ng.parser import parse as parse_path
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from megamon.domain import interruptions
from megamon.domain.kinds import BUILTIN_VALUES, KIND_SPECS, NOUN_PATTERN, Kind, KindSpec

SHIPPED_PACKAGE: Final = "megamon.domain.shipped_kinds"
"""Where the descriptions shipped with megamon live, one ``<name>.json`` each."""

JOBSET_DESCRIPTION: Final = "jobset"
LWS_DESCRIPTION: Final = "leaderworkerset"
"""The shipped descriptions of the built-in JobSet and LeaderWorkerSet kinds."""

LABEL_PATTERN: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
EVENT_FILE_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9._-]*\.json")
STAGE_PATTERN: Final = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""A queueing stage is a label value: lowercase letters, digits and ``_``."""
MAX_STAGES: Final = 4
"""A kind's queueing stages are label values of one histogram: a few, never per resource."""
VERSION_PATTERN: Final = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
"""An API version is a DNS label (``v1``, ``v1beta2``), as a CRD's version names are."""

WORKLOAD_NAME: Final = "workload_name"
WORKLOAD_NAMESPACE: Final = "workload_namespace"
WORKLOAD_UID: Final = "workload_uid"

_BUILTIN_NAME_FIELDS: Final = frozenset(
    {"jobset_name", "jobset_namespace", "jobset_uid", "lws_name", "lws_namespace", "lws_uid"}
)
"""Label keys a description may share with a built-in kind: its series then carry the
built-in attrs (the shipped JobSet and LeaderWorkerSet descriptions do)."""

_RESERVED_LABELS: Final = frozenset(
    {"nodepool_name", "tpu_topology", "tpu_accelerator", "spot", "provisioning_state"}
    | {"slice_name", "slice_owner_kind", "slice_owner_name", "slice_owner_namespace"}
    | {"job_name", "source", "version", "commit", "date"}
)


Step = str | int | None
"""One step of a simple path: a field name, a list index, or ``None`` for ``[*]``."""


def _steps(node: JSONPath) -> list[Step] | None:
    """The steps of a path made only of fields, indexes and ``[*]``; ``None`` otherwise."""
    if isinstance(node, Child):
        left, right = _steps(node.left), _steps(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, Fields) and len(node.fields) == 1 and node.fields[0] != "*":
        return [str(node.fields[0])]
    if isinstance(node, Index) and len(node.indices) == 1:
        return [int(node.indices[0])]
    if isinstance(node, Wildcard):
        return [None]
    return None


def _walk(steps: tuple[Step, ...], value: Any) -> list[Any]:
    found = [value]
    for step in steps:
        if isinstance(step, str):
            found = [item[step] for item in found if type(item) is dict and step in item]
        elif step is None:
            found = [
                element
                for item in found
                if isinstance(item, list | dict)
                for element in (item if isinstance(item, list) else item.values())
            ]
        else:
            found = [i[step] for i in found if type(i) is list and -len(i) <= step < len(i)]
        if not found:
            break
    return found


class CompiledPath:
    """A field path ready to read objects with: what it matches, as a list of values.

    Paths made of fields, indexes and ``[*]`` (every shipped one) are read by a small loop
    over the steps ``jsonpath-ng`` parsed — a watch cache projects every event, and this is
    5–7× faster than the library's general evaluator, which reads every other path."""

    __slots__ = ("_parsed", "_steps", "text")

    def __init__(self, text: str, parsed: JSONPath) -> None:
        self.text = text
        self._parsed = parsed
        steps = _steps(parsed)
        self._steps = tuple(steps) if steps is not None else None

    def values(self, obj: Any) -> list[Any]:
        if self._steps is not None:
            return _walk(self._steps, obj)
        return [match.value for match in self._parsed.find(obj)]


def compile_path(text: str) -> CompiledPath:
    """A field path (JSONPath as ``jsonpath-ng`` reads it: ``spec.replicatedJobs[*].replicas``)."""
    try:
        return CompiledPath(text, parse_path(text))
    except Exception as err:  # JsonPathParserError, and the lexer's bare Exceptions
        raise ValueError(f"{text!r} is not a field path: {err}") from None


def _path(text: str) -> str:
    compile_path(text)
    return text


FieldPath = Annotated[str, Field(min_length=1)]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")


class Count(_Part):
    """A count read from an object: the sum of every integer ``Path`` matches.

    With ``Each``, the paths are read in each element ``Each`` matches and the element
    counts are added up: ``Path`` (its matches summed, ``Default`` when none) times every
    ``Times`` path (1 when missing) — Σ replicas × parallelism over replicated jobs.
    """

    Path: list[FieldPath] = Field(min_length=1)
    Each: FieldPath | None = None
    Times: list[FieldPath] = []
    Default: int = Field(0, ge=0)

    @field_validator("Path", "Times", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("Path", "Times")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        return [_path(p) for p in value]

    @field_validator("Each")
    @classmethod
    def _each(cls, value: str | None) -> str | None:
        return None if value is None else _path(value)

    @property
    def has_default(self) -> bool:
        """Whether the description gives ``Default``: only then is a count that matches
        nothing that default rather than a path that names no field (a typo)."""
        return "Default" in self.model_fields_set

    @model_validator(mode="after")
    def _times_need_each(self) -> Count:
        if self.Times and self.Each is None:
            raise ValueError("Times multiplies per element: it needs Each")
        return self


class Condition(_Part):
    """A condition of ``status.conditions`` with ``status: "True"`` (and, if given, this
    ``reason``: Kueue says Finished with reason Succeeded or Failed)."""

    Type: str = Field(min_length=1)
    Reason: str | None = None


class Interruption(Condition):
    """A condition that says why a resource expected back went down, and the reason megamon
    records for it (Kueue's ``Evicted`` with reason ``NodeFailures``: ``node-lost``)."""

    Means: str

    @field_validator("Means")
    @classmethod
    def _reason(cls, value: str) -> str:
        if value not in interruptions.NAMED_REASONS:
            known = ", ".join(sorted(interruptions.NAMED_REASONS))
            raise ValueError(f"{value!r} is not a reason a condition can mean (one of {known})")
        return value


class QueueStage(Condition):
    """A stage a queued resource reaches, when its condition holds: the time from the
    resource's creation to the condition's ``lastTransitionTime`` is counted in the kind's
    queueing histogram under ``until=<Until>``."""

    Until: str

    @field_validator("Until")
    @classmethod
    def _until(cls, value: str) -> str:
        if not STAGE_PATTERN.fullmatch(value):
            raise ValueError(f"{value!r} is not a stage name like 'admitted'")
        return value


class NodeSelectorPaths(_Part):
    """Where the pod templates' ``nodeSelector`` maps are (``Each`` element, then ``Path``),
    and how many slices each asks for (``Replicas``, 1 when missing)."""

    Path: FieldPath
    Each: FieldPath | None = None
    Replicas: FieldPath | None = None

    @field_validator("Path", "Each", "Replicas")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return None if value is None else _path(value)


class LabelNames(_Part):
    """The label keys of a resource's name, namespace and UID on its series."""

    Name: str
    Namespace: str
    UID: str

    @field_validator("Name", "Namespace", "UID")
    @classmethod
    def _label(cls, value: str) -> str:
        if not LABEL_PATTERN.fullmatch(value) or value.startswith("__"):
            raise ValueError(f"{value!r} is not a Prometheus label name")
        if value in _RESERVED_LABELS:
            raise ValueError(f"{value!r} is a label megamon already uses for something else")
        return value

    @model_validator(mode="after")
    def _distinct(self) -> LabelNames:
        if len({self.Name, self.Namespace, self.UID}) != 3:
            raise ValueError("Name, Namespace and UID must be three different labels")
        return self

    def attr_fields(self) -> tuple[str, str, str]:
        """The ``Attrs`` fields that hold the name, namespace and UID: the built-in ones a
        label key names, else the generic workload fields."""
        generic = (WORKLOAD_NAME, WORKLOAD_NAMESPACE, WORKLOAD_UID)
        labels = (self.Name, self.Namespace, self.UID)
        return tuple(  # type: ignore[return-value]
            label if label in _BUILTIN_NAME_FIELDS else default
            for label, default in zip(labels, generic, strict=True)
        )


class KindDescription(_Part):
    """One described kind (docs/kinds.md)."""

    Noun: str
    """The metric infix (``megamon_<Noun>_up``) and the kind's name in logs and archives."""
    Group: str = Field(min_length=1)
    Version: list[str] = Field(min_length=1)
    """The API versions megamon may read it at, in order of preference (newest first): it
    watches the first one the cluster serves (discovery, at every listing). A single string
    is one version."""
    Resource: str = Field(min_length=1)
    """The plural resource name, as in the URL: ``trainjobs``."""
    Namespaced: bool = True
    Expected: Count
    Ready: Count
    ReadyWhen: list[Condition] = []
    """Conditions that must all hold for ``Ready`` to count (else ready is 0)."""
    Completed: list[Condition] = []
    Failed: list[Condition] = []
    Suspended: list[Condition] = []
    Preempted: list[Condition] = []
    """Conditions that say a resource was preempted (Kueue's ``Evicted`` with reason
    ``Preempted``). Not ending ones: a preempted resource is requeued and expected back, so
    it is down as an interruption, whose reason is ``preemption``."""
    Interrupted: list[Interruption] = []
    """Conditions that say why a resource expected back is down, each with its reason
    (``Means``), the first that holds winning; after ``Preempted``, before the node pools."""
    Queued: list[QueueStage] = Field([], max_length=MAX_STAGES)
    """The stages whose time since creation the kind's queueing histogram counts (Kueue:
    ``QuotaReserved`` as ``quota_reserved``, ``Admitted`` as ``admitted``)."""
    NodeSelector: NodeSelectorPaths | None = None
    Restarts: Count | None = None
    """A count of how many times the resource restarted (JobSet ``status.restarts``),
    published as ``megamon_<Noun>_restarts``; no series without it."""
    Labels: LabelNames
    EventFile: str
    Title: str = ""
    """How HELP texts name one resource (``TrainJob``); the noun when empty."""
    ReportKey: str = ""
    """The report JSON key stem (``trainJobs`` → ``trainJobsUp``); noun-based when empty."""

    @field_validator("Version", mode="before")
    @classmethod
    def _one_version_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("Version")
    @classmethod
    def _versions(cls, value: list[str]) -> list[str]:
        for version in value:
            if not VERSION_PATTERN.fullmatch(version):
                raise ValueError(f"{version!r} is not an API version like 'v1beta2'")
        if len(set(value)) != len(value):
            raise ValueError("a version is listed twice")
        return value

    @field_validator("Queued")
    @classmethod
    def _stages(cls, value: list[QueueStage]) -> list[QueueStage]:
        if len({stage.Until for stage in value}) != len(value):
            raise ValueError("a stage is named twice")
        return value

    @field_validator("Noun")
    @classmethod
    def _noun(cls, value: str) -> str:
        if not NOUN_PATTERN.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a metric noun (lowercase letters, digits, single '_')"
            )
        return value

    @field_validator("EventFile")
    @classmethod
    def _event_file(cls, value: str) -> str:
        if not EVENT_FILE_PATTERN.fullmatch(value):
            raise ValueError(f"{value!r} is not an event file name like 'trainjobs.json'")
        return value

    @property
    def builtin(self) -> bool:
        """Whether it describes one of the built-in kinds (the shipped JobSet, LWS)."""
        return self.Noun in BUILTIN_VALUES

    @property
    def terminal(self) -> tuple[tuple[Condition, str], ...]:
        """Every ending condition with what it means, in the order they are checked."""
        return (
            *((c, COMPLETED) for c in self.Completed),
            *((c, FAILED) for c in self.Failed),
            *((c, SUSPENDED) for c in self.Suspended),
        )

    def spec(self) -> KindSpec:
        stem = self.ReportKey or self.Noun
        return KindSpec(
            self.EventFile,
            f"{stem}Up",
            f"{stem}UpSummaries",
            self.Title or self.Noun,
            (self.Labels.Name, self.Labels.Namespace, self.Labels.UID),
            restarts=self.Restarts is not None,
        )

    @property
    def kind(self) -> Kind:
        """The ``Kind`` of this description, carrying its spec (equal to every other
        ``Kind`` of the same noun)."""
        return Kind(self.Noun) if self.builtin else Kind.described(self.Noun, self.spec())


COMPLETED: Final = "completed"
FAILED: Final = interruptions.FAILED
SUSPENDED: Final = interruptions.SUSPENDED
"""What an ending condition means; a failed or suspended end is the reason of that name."""


def shipped_names() -> list[str]:
    """The names of the descriptions shipped with megamon (``trainjob``, ``kueue-workload``)."""
    files = resources.files(SHIPPED_PACKAGE).iterdir()
    return sorted(f.name.removesuffix(".json") for f in files if f.name.endswith(".json"))


def shipped(name: str) -> KindDescription:
    """A shipped description by name; ``ValueError`` naming the known ones otherwise."""
    if name not in shipped_names():
        known = ", ".join(shipped_names())
        raise ValueError(f"no shipped description {name!r} (shipped: {known})")
    data = resources.files(SHIPPED_PACKAGE).joinpath(f"{name}.json").read_bytes()
    return KindDescription.model_validate_json(data)


def _resolve_names(value: object) -> object:
    """Names of shipped descriptions become those descriptions."""
    if not isinstance(value, list):
        return value
    return [shipped(entry) if isinstance(entry, str) else entry for entry in value]


def _unique(value: list[KindDescription]) -> list[KindDescription]:
    """Nouns and event files must be unique and clash with no built-in kind's."""
    builtin_files = {spec.event_file for spec in KIND_SPECS.values()}
    nouns: set[str] = set()
    files: set[str] = set()
    for description in value:
        if description.builtin:
            raise ValueError(f"{description.Noun!r} is a built-in kind, tracked without this")
        if description.Noun in nouns:
            raise ValueError(f"kind {description.Noun!r} is described twice")
        if description.EventFile in builtin_files or description.EventFile in files:
            raise ValueError(f"event file {description.EventFile!r} is already used")
        nouns.add(description.Noun)
        files.add(description.EventFile)
    return value


WorkloadKindList = Annotated[
    list[KindDescription], BeforeValidator(_resolve_names), AfterValidator(_unique)
]
"""``WorkloadKinds`` of the configuration: each entry a description, or the name of a
shipped one (``"trainjob"``, ``"kueue-workload"``)."""
