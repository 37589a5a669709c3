"""The projection of an object of a described kind: the few values its description reads.

A described kind's watch cache keeps one ``DescribedView`` per object, never the object: the
counts, the ending (a condition or a field value), the merged TPU node selector, the slice
shapes and the chips, evaluated once per change from the description's field paths (compiled
once per kind). What the
observer then decides from them is pure and lives in ``megamon.observing.described``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from sys import intern
from typing import Any

from megamon.domain import labels, timestamps
from megamon.domain.descriptions import (
    TOPOLOGY_CHIPS,
    CompiledPath,
    Condition,
    Count,
    KindDescription,
    Match,
    NodeSelectorPaths,
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
    """The status of the first ending that holds: its condition's type or its field's value
    (``""`` when none holds, or a missing field matched ``NoneOf``)."""
    meaning: str
    """What the ending means: ``completed``, ``failed``, ``suspended``; ``""`` while the
    resource has not ended (whether it has ended is this, never ``terminal``)."""
    tpu: TpuSelector
    shapes: tuple[tuple[str, int], ...]
    """(topology, replicas) of each pod template that asks for a TPU topology."""
    chips: int | None = None
    """The TPU chips the pod templates ask for (Σ replicas × their containers' requests, or
    × the declared chips per replica); ``None`` when each replica is one slice of its
    topology (``ChipsPerReplica: topology``): the observer counts them from ``shapes``."""
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


def _holds(condition: Json, wanted: Match | Condition) -> bool:
    return (
        condition.get("type") == wanted.Type
        and condition.get("status") == labels.TRUE
        and (wanted.Reason is None or condition.get("reason") == wanted.Reason)
    )


def _field_text(value: Any, what: str) -> str:
    """A field's value as ``AnyOf``/``NoneOf`` compare it: a string, a boolean as ``true`` or
    ``false``, an integer in decimal; anything else is an error of the object."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    raise ObservationError(f"{what} must be a string, a boolean or an integer, got {value!r}")


class _Matcher:
    """One ``Match`` of a description, its field paths compiled: whether it holds of an
    object, and with what status (the condition's type, the field's value).

    Its rank orders the endings that hold at once: a condition ranks by its place in the
    object's ``status.conditions`` (the first there wins, as for a JobSet); a field value or
    ``All`` ranks after every condition, and then the description's order decides."""

    def __init__(self, match: Match) -> None:
        self._match = match
        self._field = compile_path(match.Field) if match.Field is not None else None
        self._any = frozenset(match.AnyOf or ())
        self._none = frozenset(match.NoneOf or ())
        self._all = [_Matcher(part) for part in match.All or ()]

    def find(self, obj: Json, conditions: list[Json], where: str) -> tuple[int, str] | None:
        """``(rank, status)`` when the match holds of ``obj``, ``None`` otherwise; the status
        of ``All`` is its last part's (the most particular: ``SUCCEEDED``, ``STOPPED``)."""
        if self._match.Type is not None:
            for index, condition in enumerate(conditions):
                if _holds(condition, self._match):
                    return index, intern(str(condition["type"]))
            return None
        if self._field is not None:
            return self._field_value(self._field, obj, where, len(conditions))
        status = ""
        for part in self._all:
            found = part.find(obj, conditions, where)
            if found is None:
                return None
            status = found[1]
        return len(conditions), status

    def _field_value(
        self, path: CompiledPath, obj: Json, where: str, rank: int
    ) -> tuple[int, str] | None:
        what = f"{where}: {path.text}"
        read = [_field_text(value, what) for value in _values(path, obj) if value is not None]
        texts = read or [""]  # a missing field (Go's omitempty) reads as the empty string
        if self._any:
            hit = next((text for text in texts if text in self._any), None)
            return None if hit is None else (rank, intern(hit))
        if any(text in self._none for text in texts):
            return None
        return rank, intern(texts[0])

    def holds(self, obj: Json, conditions: list[Json], where: str) -> bool:
        return self.find(obj, conditions, where) is not None


class _Endings:
    """The ending matches of a description (completed, failed, suspended) with what each
    means, compiled once."""

    def __init__(self, description: KindDescription) -> None:
        self._enders = [(_Matcher(m), meaning) for m, meaning in description.terminal]

    def __call__(self, obj: Json, conditions: list[Json], where: str) -> tuple[str, str]:
        """The status and meaning of the first ending that holds (``("", "")`` when none):
        conditions in the object's order, then field values in the description's order."""
        best: tuple[int, int, str, str] | None = None
        for order, (matcher, meaning) in enumerate(self._enders):
            found = matcher.find(obj, conditions, where)
            if found is not None and (best is None or (found[0], order) < best[:2]):
                best = (found[0], order, found[1], meaning)
        return ("", "") if best is None else (best[2], best[3])


def _quantity(value: Any, what: str) -> int:
    """A whole number of chips, as a resource quantity says it (``4`` or ``"4"``)."""
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise ObservationError(f"{what} must be a whole number of chips, got {value!r}")


def _container_chips(container: Any, where: str) -> int:
    """The ``google.com/tpu`` a container asks for: its request, else its limit (Kubernetes
    takes an extended resource's limit as its request); 0 when it names neither."""
    if not isinstance(container, dict):
        raise ObservationError(f"{where}: a container must be an object")
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return 0
    for part in ("requests", "limits"):
        amounts = resources.get(part)
        if isinstance(amounts, dict) and amounts.get(labels.RESOURCE_TPU) is not None:
            what = f"{where}: resources.{part}.{labels.RESOURCE_TPU}"
            return _quantity(amounts[labels.RESOURCE_TPU], what)
    return 0


Shapes = tuple[tuple[str, int], ...]


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


class _Selectors:
    """The TPU node selector of a described object, merged as the Go megamon merges a
    JobSet's: every pod template in order, a later one's keys winning; and its chips."""

    def __init__(self, paths: NodeSelectorPaths | None) -> None:
        self._each = [compile_path(p) for p in paths.Each or ()] if paths else []
        self._selector = compile_path(paths.Path) if paths else None
        self._replicas = [compile_path(p) for p in paths.Replicas] if paths else []
        containers = paths.containers_path if paths else None
        self._containers = compile_path(containers) if containers is not None else None
        declared = paths.ChipsPerReplica if paths else None
        self._per_replica = declared if isinstance(declared, int) else None
        self._topology = declared == TOPOLOGY_CHIPS

    def _elements(self, obj: Json) -> list[Any]:
        if not self._each:
            return [obj]
        return [element for path in self._each for element in _values(path, obj)]

    def __call__(self, obj: Json, where: str) -> tuple[TpuSelector, Shapes, int | None]:
        if self._selector is None:
            return TpuSelector(), (), None
        merged: dict[str, str] = {}
        shapes = []
        chips = 0
        for element in self._elements(obj):
            selector = next(iter(_values(self._selector, element)), None)
            topology = None
            if isinstance(selector, dict):
                merged.update({k: str(selector[k]) for k in _TPU_KEYS if k in selector})
                topology = selector.get(labels.TPU_TOPOLOGY)
            if topology:
                shapes.append((intern(str(topology)), self._replicas_of(element, where)))
                if self._per_replica is not None:
                    chips += shapes[-1][1] * self._per_replica
            if self._containers is not None:
                per_pod = self._pod_chips(element, where)
                chips += self._replicas_of(element, where) * per_pod if per_pod else 0
        tpu = TpuSelector(
            accelerator=intern(merged.get(labels.TPU_ACCELERATOR, "")),
            topology=intern(merged.get(labels.TPU_TOPOLOGY, "")),
            spot=merged.get(labels.SPOT) == "true",
        )
        return tpu, tuple(shapes), None if self._topology else chips

    def _pod_chips(self, element: Any, where: str) -> int:
        assert self._containers is not None
        return sum(_container_chips(c, where) for c in _values(self._containers, element))

    def _replicas_of(self, element: Any, where: str) -> int:
        """The product of the ``Replicas`` paths read in ``element`` (each 1 when missing)."""
        replicas = 1
        for path in self._replicas:
            for value in _values(path, element)[:1]:
                if value is not None:
                    replicas *= _count_value(value, f"{where}: replicas {path.text}")
        return replicas


def described_projection(description: KindDescription) -> Callable[[Json], DescribedView]:
    """The projection of one described kind's objects (paths compiled once, here)."""
    expected = _Counter(description.Expected, "expected", required=True)
    ready = _Counter(description.Ready, "ready")
    selectors = _Selectors(description.NodeSelector)
    restarts = _Counter(description.Restarts, "restarts") if description.Restarts else None
    endings = _Endings(description)
    ready_when = [_Matcher(m) for m in description.ReadyWhen]
    preempted = [_Matcher(m) for m in description.Preempted]
    what = description.Noun

    def project(obj: Json) -> DescribedView:
        meta, name = meta_and_name(obj, what)
        namespace = str(meta.get("namespace", ""))
        where = f"{what} {namespace}/{name}" if namespace else f"{what} {name}"
        conditions = _conditions(obj)
        terminal, meaning = endings(obj, conditions, where)
        admitted = all(m.holds(obj, conditions, where) for m in ready_when)
        tpu, shapes, chips = selectors(obj, where)
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
            chips=chips,
            restarts=restarts(obj, where) if restarts is not None else None,
            preempted=any(m.holds(obj, conditions, where) for m in preempted),
            queued=_queued(meta, conditions, description),
            interrupted=next(
                (w.Means for w in description.Interrupted if any(_holds(c, w) for c in conditions)),
                "",
            ),
        )

    return project
