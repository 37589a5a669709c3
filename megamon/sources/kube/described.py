"""The projection of an object of a described kind: the few values its description reads.

A described kind's watch cache keeps one ``DescribedView`` per object, never the object: the
counts, the ending condition, the merged TPU node selector and the slice shapes, evaluated
once per change from the description's field paths (compiled once per kind). What the
observer then decides from them is pure and lives in ``megamon.observing.described``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from sys import intern
from typing import Any

from megamon.domain import labels, timestamps
from megamon.domain.descriptions import (
    CompiledPath,
    Condition,
    Count,
    KindDescription,
    compile_path,
)
from megamon.errors import ObservationError

_TPU_KEYS = (labels.TPU_ACCELERATOR, labels.TPU_TOPOLOGY, labels.SPOT)

Json = dict[str, Any]


def meta_and_name(obj: Json, what: str) -> tuple[Json, str]:
    """An object's metadata and name; ``ObservationError`` when it has no name."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ObservationError(f"{what} without metadata.name")
    return meta, meta["name"]


@dataclass(frozen=True, slots=True)
class TpuSelector:
    """TPU attributes a pod template asks for through its ``nodeSelector``."""

    accelerator: str = ""
    topology: str = ""
    spot: bool = False


@dataclass(frozen=True, slots=True)
class DescribedView:
    uid: str
    name: str
    namespace: str
    expected: int
    ready: int
    """0 unless every ``ReadyWhen`` condition holds."""
    terminal: str
    """The type of the first ending condition that holds, or ``""``."""
    meaning: str
    """What it means: ``completed``, ``failed``, ``suspended`` (or ``""``)."""
    tpu: TpuSelector
    shapes: tuple[tuple[str, int], ...]
    """(topology, replicas) of each pod template that asks for a TPU topology."""
    restarts: int | None = None
    """The description's ``Restarts`` count, ``None`` when it has none."""
    preempted: bool = False
    """One of the description's ``Preempted`` conditions holds."""
    queued: tuple[tuple[str, int, int], ...] = ()
    """(stage, created, reached) in nanoseconds of each of the description's ``Queued``
    stages whose condition holds with a readable ``lastTransitionTime``."""
    interrupted: str = ""
    """The reason (``Means``) of the first of the description's ``Interrupted`` conditions
    that holds, ``""`` when none does."""


def _values(path: CompiledPath, obj: Any) -> list[Any]:
    return path.values(obj)


def _count_value(value: Any, what: str) -> int:
    if type(value) is not int or value < 0:
        raise ObservationError(f"{what} must be a non-negative integer, got {value!r}")
    return value


class _Counter:
    """One ``Count`` of a description, its paths compiled.

    ``required`` (the ``Expected`` count): a count that matches nothing — no element for
    ``Each``, no value for any ``Path`` and no ``Default`` given — is an error of the object,
    not 0: a typo in a path would otherwise make every resource "0 of 0 ready", up."""

    def __init__(self, count: Count, what: str, *, required: bool = False) -> None:
        self._what = what
        self._paths = [(text, compile_path(text)) for text in count.Path]
        self._each = compile_path(count.Each) if count.Each is not None else None
        self._each_text = count.Each or ""
        self._times = [(text, compile_path(text)) for text in count.Times]
        self._default = count.Default
        self._required = required and not count.has_default

    def _sum(self, obj: Any, where: str) -> int:
        total, found = 0, False
        for text, path in self._paths:
            for value in _values(path, obj):
                if value is None:
                    continue
                total += _count_value(value, f"{where}: {self._what} {text}")
                found = True
        if not found and self._required:
            paths = ", ".join(text for text, _ in self._paths)
            raise ObservationError(f"{where}: {self._what}: nothing matches {paths}")
        return total if found else self._default

    def __call__(self, obj: Json, where: str) -> int:
        if self._each is None:
            return self._sum(obj, where)
        elements = _values(self._each, obj)
        if not elements and self._required:
            raise ObservationError(f"{where}: {self._what}: nothing matches {self._each_text}")
        total = 0
        for element in elements:
            if not isinstance(element, dict):
                raise ObservationError(f"{where}: {self._what}: each element must be an object")
            value = self._sum(element, where)
            for text, path in self._times:
                for factor in _values(path, element)[:1]:
                    if factor is not None:
                        value *= _count_value(factor, f"{where}: {self._what} {text}")
            total += value
        return total


def _conditions(obj: Json) -> list[Json]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _holds(condition: Json, wanted: Condition) -> bool:
    return (
        condition.get("type") == wanted.Type
        and condition.get("status") == labels.TRUE
        and (wanted.Reason is None or condition.get("reason") == wanted.Reason)
    )


def _time(value: Any) -> int | None:
    """Nanoseconds of an RFC 3339 timestamp; ``None`` when missing or unreadable (the stage
    is then not counted: a queueing time is never guessed)."""
    if not isinstance(value, str):
        return None
    try:
        return timestamps.parse(value)
    except timestamps.TimestampError:
        return None


def _queued(
    meta: Json, conditions: list[Json], description: KindDescription
) -> tuple[tuple[str, int, int], ...]:
    if not description.Queued:
        return ()
    created = _time(meta.get("creationTimestamp"))
    if created is None:
        return ()
    found = []
    for stage in description.Queued:
        for condition in conditions:
            if _holds(condition, stage):
                reached = _time(condition.get("lastTransitionTime"))
                if reached is not None:
                    found.append((stage.Until, created, reached))
                break
    return tuple(found)


def _terminal(conditions: list[Json], description: KindDescription) -> tuple[str, str]:
    """The first condition (in the object's order) that ends the resource, and its meaning."""
    for condition in conditions:
        for wanted, meaning in description.terminal:
            if _holds(condition, wanted):
                return intern(str(condition["type"])), meaning
    return "", ""


class _Selectors:
    """The TPU node selector of a described object, merged as the Go megamon merges a
    JobSet's: every pod template in order, a later one's keys winning."""

    def __init__(self, description: KindDescription) -> None:
        paths = description.NodeSelector
        self._each = compile_path(paths.Each) if paths and paths.Each else None
        self._selector = compile_path(paths.Path) if paths else None
        self._replicas = compile_path(paths.Replicas) if paths and paths.Replicas else None

    def _elements(self, obj: Json) -> list[Any]:
        return _values(self._each, obj) if self._each is not None else [obj]

    def __call__(self, obj: Json, where: str) -> tuple[TpuSelector, tuple[tuple[str, int], ...]]:
        if self._selector is None:
            return TpuSelector(), ()
        merged: dict[str, str] = {}
        shapes = []
        for element in self._elements(obj):
            for selector in _values(self._selector, element)[:1]:
                if not isinstance(selector, dict):
                    continue
                merged.update({k: str(selector[k]) for k in _TPU_KEYS if k in selector})
                topology = selector.get(labels.TPU_TOPOLOGY)
                if topology:
                    shapes.append((intern(str(topology)), self._replicas_of(element, obj, where)))
        tpu = TpuSelector(
            accelerator=intern(merged.get(labels.TPU_ACCELERATOR, "")),
            topology=intern(merged.get(labels.TPU_TOPOLOGY, "")),
            spot=merged.get(labels.SPOT) == "true",
        )
        return tpu, tuple(shapes)

    def _replicas_of(self, element: Any, obj: Json, where: str) -> int:
        if self._replicas is None:
            return 1
        for value in _values(self._replicas, element):
            if value is not None:
                return _count_value(value, f"{where}: replicas")
        return 1


def described_projection(description: KindDescription) -> Callable[[Json], DescribedView]:
    """The projection of one described kind's objects (paths compiled once, here)."""
    expected = _Counter(description.Expected, "expected", required=True)
    ready = _Counter(description.Ready, "ready")
    selectors = _Selectors(description)
    restarts = _Counter(description.Restarts, "restarts") if description.Restarts else None
    what = description.Noun

    def project(obj: Json) -> DescribedView:
        meta, name = meta_and_name(obj, what)
        namespace = str(meta.get("namespace", ""))
        where = f"{what} {namespace}/{name}" if namespace else f"{what} {name}"
        conditions = _conditions(obj)
        terminal, meaning = _terminal(conditions, description)
        admitted = all(any(_holds(c, w) for c in conditions) for w in description.ReadyWhen)
        tpu, shapes = selectors(obj, where)
        return DescribedView(
            uid=str(meta.get("uid", "")),
            name=name,
            namespace=namespace,
            expected=expected(obj, where),
            ready=ready(obj, where) if admitted else 0,
            terminal=terminal,
            meaning=meaning,
            tpu=tpu,
            shapes=shapes,
            restarts=restarts(obj, where) if restarts is not None else None,
            preempted=any(_holds(c, w) for c in conditions for w in description.Preempted),
            queued=_queued(meta, conditions, description),
            interrupted=next(
                (w.Means for w in description.Interrupted if any(_holds(c, w) for c in conditions)),
                "",
            ),
        )

    return project
