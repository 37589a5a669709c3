"""Kind descriptions: a training workload kind declared as data, not written as code.

A description says where the resource is served (group, versions, resource), how to read
its ``expected`` and ``ready`` counts, its TPU shape and chips (field paths), which
conditions or field values end it (completed: expected down; failed; suspended), and how
its history and series are named
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
from typing import Annotated, Any, Final, Literal

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
from pydantic_core import PydanticCustomError

from megamon.domain import interruptions
from megamon.domain.kinds import BUILTIN_VALUES, KIND_SPECS, NOUN_PATTERN, Kind, KindSpec
from megamon.domain.similar import similar_key

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


def _one_or_many(value: object) -> object:
    """One path, or a list of them: a string alone is a list of one."""
    return [value] if isinstance(value, str) else value


UNKNOWN_KEY_ERROR: Final = "unknown_key"
"""The error type of a key a description part does not have but one it has is like: the
configuration renders it as its own mistyped keys, with the key it was meant to be."""


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _similar_keys(cls, data: object) -> object:
        """A key the part does not have but is like one it has (``anyOf``, ``Completd``) is
        refused with the key it was meant to be; any other unknown key is refused as extra."""
        if not isinstance(data, dict):
            return data
        known = [field.alias or name for name, field in cls.model_fields.items()]
        for key in data:
            if key in known or not isinstance(key, str):
                continue
            close = similar_key(key, known)
            if close is not None:
                raise PydanticCustomError(
                    UNKNOWN_KEY_ERROR,
                    "unknown key {key}: did you mean {close}?",
                    {"key": key, "close": close},
                )
        return data


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
    def _many(cls, value: object) -> object:
        return _one_or_many(value)

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


class Match(_Part):
    """What holds of an object for it to have ended, be ready or have been preempted: one of

    - a condition: ``status.conditions`` has an entry of ``Type`` with ``status: "True"``
      (and, if given, this ``Reason``: Kueue says Finished with reason Succeeded or Failed);
    - a field value: the value at ``Field`` is one of ``AnyOf``, or none of ``NoneOf`` (a
      KubeRay RayJob ends with ``status.jobDeploymentStatus`` ``Complete`` or ``Failed`` and
      sets no condition); a missing field reads as ``""``, a boolean as ``true``/``false``;
    - ``All``: every one of these matches holds (``Complete`` and ``jobStatus`` ``SUCCEEDED``).
    """

    Type: str | None = None
    Reason: str | None = None
    AnyOf: list[str] | None = None
    NoneOf: list[str] | None = None
    All: list[Match] | None = None
    Field: FieldPath | None = None
    """Last: the name ``Field`` would hide pydantic's ``Field`` in the rest of the body."""

    @field_validator("Field")
    @classmethod
    def _field_path(cls, value: str | None) -> str | None:
        return None if value is None else _path(value)

    @model_validator(mode="after")
    def _one_kind(self) -> Match:
        values = [key for key in ("AnyOf", "NoneOf") if getattr(self, key) is not None]
        if self.Field is None and values:
            raise ValueError(f"{values[0]} lists values of a field: it needs Field")
        if self.Reason is not None and self.Type is None:
            raise ValueError("Reason is a condition's: it needs Type")
        given = [key for key in ("Type", "Field", "All") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(
                "a match is a condition (Type), a field value (Field with AnyOf or NoneOf) "
                f"or All of several, exactly one of them (got {', '.join(given) or 'none'})"
            )
        if self.Type == "":
            raise ValueError("Type: a condition type cannot be empty")
        if self.Field is not None and len(values) != 1:
            raise ValueError(
                f"Field {self.Field!r} needs AnyOf or NoneOf (the values that match), one of them"
            )
        if self.Field is not None and not getattr(self, values[0]):
            raise ValueError(f"{values[0]} of Field {self.Field!r} lists no value")
        if self.All is not None and not self.All:
            raise ValueError("All lists no match")
        return self


TOPOLOGY_CHIPS: Final = "topology"
"""``ChipsPerReplica`` that makes each replica one whole slice of its selector's topology
(the Go megamon's JobSet rule: a replicated job's replica is one slice)."""

_CONTAINERS_OF: Final = "containers[*]"
_NODE_SELECTOR: Final = "nodeSelector"


class Condition(_Part):
    """A condition of ``status.conditions`` with ``status: "True"`` (and, if given, this
    ``Reason``): what an interruption's reason or a queueing stage is read from."""

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
    """The pod templates: where their ``nodeSelector`` maps are (each ``Each`` element, then
    ``Path``), how many replicas of each run (the product of the ``Replicas`` paths, each 1
    when missing), and their TPU chips: by default Σ the ``google.com/tpu`` requests of the
    template's containers (``Containers``; the pod spec holding ``Path`` when not given), or a
    declared ``ChipsPerReplica`` (a number, or ``topology``: one slice per replica)."""

    Path: FieldPath
    Each: list[FieldPath] | None = None
    Replicas: list[FieldPath] = []
    Containers: FieldPath | None = None
    ChipsPerReplica: int | Literal["topology"] | None = None

    @field_validator("Each", "Replicas", mode="before")
    @classmethod
    def _many(cls, value: object) -> object:
        return _one_or_many(value)

    @field_validator("ChipsPerReplica", mode="before")
    @classmethod
    def _declared(cls, value: object) -> object:
        wrong = not (value is None or value == TOPOLOGY_CHIPS or type(value) is int)
        if wrong or (type(value) is int and value < 0):
            raise ValueError(
                f"{value!r} is neither a number of chips (0 or more) nor {TOPOLOGY_CHIPS!r}"
            )
        return value

    @field_validator("Path", "Containers")
    @classmethod
    def _one_path(cls, value: str | None) -> str | None:
        return None if value is None else _path(value)

    @field_validator("Each", "Replicas")
    @classmethod
    def _paths(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_path(p) for p in value]

    @model_validator(mode="after")
    def _chips_source(self) -> NodeSelectorPaths:
        if self.Each is not None and not self.Each:
            raise ValueError("Each lists no path")
        if self.Containers is not None and self.ChipsPerReplica is not None:
            raise ValueError(
                "Containers counts the pods' chips; ChipsPerReplica declares them: one"
            )
        if self.ChipsPerReplica is None and self.containers_path is None:
            raise ValueError(
                f"Path {self.Path!r} does not end in {_NODE_SELECTOR}: say where the pod "
                "template's containers are (Containers) or declare ChipsPerReplica"
            )
        return self

    @property
    def containers_path(self) -> str | None:
        """Where the containers whose ``google.com/tpu`` requests are counted are, read in
        each element: ``Containers``, else beside the ``nodeSelector`` ``Path`` names (the
        same pod spec); ``None`` when chips are declared."""
        if self.ChipsPerReplica is not None:
            return None
        if self.Containers is not None:
            return self.Containers
        if self.Path == _NODE_SELECTOR:
            return _CONTAINERS_OF
        suffix = "." + _NODE_SELECTOR
        if self.Path.endswith(suffix):
            return self.Path.removesuffix(suffix) + "." + _CONTAINERS_OF
        return None


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
    ReadyWhen: list[Match] = []
    """Matches that must all hold for ``Ready`` to count (else ready is 0)."""
    Completed: list[Match] = []
    Failed: list[Match] = []
    Suspended: list[Match] = []
    Preempted: list[Match] = []
    """Matches that say a resource was preempted (Kueue's ``Evicted`` with reason
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
    def terminal(self) -> tuple[tuple[Match, str], ...]:
        """Every ending match with what it means, in the order they are checked."""
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
