"""Label and field selectors with the API server's grammar and matching rules.

megamon narrows lists and watches with selectors (node pools by label, pods by node), so the
emulator must parse the same syntax and apply the same, sometimes surprising, semantics: `!=`
and `notin` match objects that lack the label, an unset field compares as the empty string,
and an unsupported field label is a 400 rather than an empty result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY_RE = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_SET_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s+(in|notin)\s*\(([^()]*)\)\s*$")
_CMP_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|=|!=|>|<)\s*([^\s!=<>(),]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*$")


class SelectorError(ValueError):
    """A selector the API server would reject with 400 BadRequest."""


@dataclass(frozen=True)
class Requirement:
    """One comma-separated term of a label selector."""

    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists", ">", "<"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        if self.op == "exists":
            return has
        if self.op == "!exists":
            return not has
        return has and _compare(value, self.op, next(iter(self.values)))


def _compare(value: str | None, op: str, bound: str) -> bool:
    try:
        number = int(value or "")
    except ValueError:
        return False
    return number > int(bound) if op == ">" else number < int(bound)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside `( )` value sets."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t for t in terms if t.strip()] if text.strip() else []


def _check_key(key: str) -> str:
    if not _KEY_RE.match(key) or len(key) > 317:
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r}")
    return key


def _check_value(value: str) -> str:
    if not _VALUE_RE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value {value!r}")
    return value


def _parse_term(term: str) -> Requirement:
    if m := _SET_RE.match(term):
        values = frozenset(_check_value(v.strip()) for v in m.group(3).split(","))
        return Requirement(_check_key(m.group(1)), m.group(2), values)
    if m := _CMP_RE.match(term):
        op = "=" if m.group(2) == "==" else m.group(2)
        value = _check_value(m.group(3))
        if op in (">", "<") and not re.fullmatch(r"-?\d+", value):
            raise SelectorError(f"unable to parse requirement: {value!r} is not an integer")
        return Requirement(_check_key(m.group(1)), op, frozenset({value}))
    if m := _EXISTS_RE.match(term):
        return Requirement(_check_key(m.group(2)), "!exists" if m.group(1) else "exists")
    raise SelectorError(f"unable to parse requirement: found {term.strip()!r}")


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h` into requirements (all must match)."""
    if not text:
        return ()
    return tuple(_parse_term(term) for term in _split_terms(text))


@dataclass(frozen=True)
class FieldRequirement:
    path: tuple[str, ...]
    negate: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.path) == self.value) != self.negate


def field_value(obj: Mapping[str, Any], path: tuple[str, ...]) -> str:
    """A field as the API server's field selectors see it: unset is "", booleans lowercase."""
    node: Any = obj
    for part in path:
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(
    text: str | None, supported: frozenset[str]
) -> tuple[FieldRequirement, ...]:
    """Parse `metadata.name=x,spec.nodeName!=` against the field labels a resource supports."""
    if not text:
        return ()
    requirements = []
    for term in text.split(","):
        if not term.strip():
            continue
        m = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*", term)
        if m is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field = m.group(1)
        if field not in supported:
            raise SelectorError(f"field label not supported: {field}")
        requirements.append(
            FieldRequirement(tuple(field.split(".")), m.group(2) == "!=", m.group(3))
        )
    return tuple(requirements)


@dataclass(frozen=True)
class ObjectFilter:
    """What a list or watch keeps: labels and fields must all match."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if self.labels:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if not all(r.matches(labels) for r in self.labels):
                return False
        return all(r.matches(obj) for r in self.fields)

    def predicate(self) -> Callable[[Mapping[str, Any]], bool]:
        """A cheap callable: a constant for the empty filter, `matches` otherwise."""
        if self.empty:
            return lambda _obj: True
        return self.matches


def make_filter(
    label_selector: str | None, field_selector: str | None, supported: frozenset[str]
) -> ObjectFilter:
    return ObjectFilter(
        parse_label_selector(label_selector), parse_field_selector(field_selector, supported)
    )
