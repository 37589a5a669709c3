"""Answers for TokenReview and SubjectAccessReview, configured by tests.

megamon's HTTP server delegates authentication and authorization to the API server (like
kube-rbac-proxy): it POSTs a TokenReview for the caller's bearer token, then a
SubjectAccessReview for the user and the path or resource. Tests decide the answers here:
a token table, and either allow/deny rules or a function. Every review received is recorded
so tests can assert what was asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Identity:
    """Who a token belongs to; `authenticated=False` makes the review fail."""

    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)
    authenticated: bool = True


class TokenReviews:
    """token -> Identity; unknown tokens are not authenticated."""

    def __init__(self) -> None:
        self.tokens: dict[str, Identity] = {}
        self.received: list[Obj] = []
        self._lock = threading.Lock()

    def set(
        self, token: str, username: str, groups: tuple[str, ...] | list[str] = (), **kw: Any
    ) -> Identity:
        identity = Identity(username, tuple(groups), **kw)
        self.tokens[token] = identity
        return identity

    def review(self, body: Obj) -> Obj:
        """Fill `status` of a TokenReview body as the API server would."""
        with self._lock:
            self.received.append(body)
        spec = body.get("spec") or {}
        identity = self.tokens.get(str(spec.get("token", "")))
        status: Obj = {"authenticated": False}
        if identity is None:
            status["error"] = "invalid bearer token"
        elif not identity.authenticated:
            status["error"] = "token rejected"
        else:
            user: Obj = {"username": identity.username, "groups": list(identity.groups)}
            if identity.uid:
                user["uid"] = identity.uid
            if identity.extra:
                user["extra"] = identity.extra
            status = {"authenticated": True, "user": user}
            if spec.get("audiences"):
                status["audiences"] = spec["audiences"]
        return _answer(body, "TokenReview", "authentication.k8s.io/v1", status)


@dataclass(frozen=True)
class AccessRequest:
    """The question of a SubjectAccessReview, flattened."""

    user: str
    groups: tuple[str, ...]
    verb: str
    path: str | None = None  # non-resource requests
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def targets(self) -> set[str]:
        """Spellings a rule's target may use for this request."""
        if self.path is not None:
            return {self.path}
        names = {self.resource}
        if self.group:
            names.add(f"{self.resource}.{self.group}")
        if self.subresource:
            names = {f"{n}/{self.subresource}" for n in names}
        return names


@dataclass(frozen=True)
class Rule:
    subject: str  # a username, "group:NAME", or "*"
    verb: str  # a verb or "*"
    target: str  # "/path", "/prefix*", "resource", "resource.group[/sub]", or "*"
    allowed: bool

    def matches(self, request: AccessRequest) -> bool:
        subject_ok = self.subject in ("*", request.user) or (
            self.subject.startswith("group:") and self.subject[6:] in request.groups
        )
        verb_ok = self.verb in ("*", request.verb)
        return subject_ok and verb_ok and self._target_ok(request)

    def _target_ok(self, request: AccessRequest) -> bool:
        if self.target == "*":
            return True
        if self.target.endswith("*") and request.path is not None:
            return request.path.startswith(self.target[:-1])
        return self.target in request.targets()


Decider = Callable[[AccessRequest], bool | tuple[bool, str]]


class AccessReviews:
    """Rules (deny wins over allow; no match: not allowed) or a `decide` function."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.decide: Decider | None = None
        self.received: list[AccessRequest] = []
        self._lock = threading.Lock()

    def allow(self, subject: str, verb: str, target: str) -> None:
        self.rules.append(Rule(subject, verb, target, True))

    def deny(self, subject: str, verb: str, target: str) -> None:
        self.rules.append(Rule(subject, verb, target, False))

    def review(self, body: Obj) -> Obj:
        """Fill `status` of a SubjectAccessReview body."""
        request = _access_request(body.get("spec") or {})
        with self._lock:
            self.received.append(request)
        allowed, denied, reason = self._decide(request)
        status: Obj = {"allowed": allowed}
        if denied:
            status["denied"] = True
        if reason:
            status["reason"] = reason
        return _answer(body, "SubjectAccessReview", "authorization.k8s.io/v1", status)

    def _decide(self, request: AccessRequest) -> tuple[bool, bool, str]:
        if self.decide is not None:
            verdict = self.decide(request)
            allowed, reason = verdict if isinstance(verdict, tuple) else (verdict, "")
            return allowed, False, reason
        matching = [rule for rule in self.rules if rule.matches(request)]
        if any(not rule.allowed for rule in matching):
            return False, True, "denied by fakekube rule"
        if matching:
            return True, False, "allowed by fakekube rule"
        return False, False, "no fakekube rule allows this"


def _access_request(spec: Obj) -> AccessRequest:
    user, groups = str(spec.get("user", "")), tuple(spec.get("groups") or ())
    if non_resource := spec.get("nonResourceAttributes"):
        return AccessRequest(
            user, groups, str(non_resource.get("verb", "")), non_resource.get("path", "")
        )
    attrs = spec.get("resourceAttributes") or {}
    return AccessRequest(
        user,
        groups,
        str(attrs.get("verb", "")),
        group=str(attrs.get("group", "")),
        resource=str(attrs.get("resource", "")),
        subresource=str(attrs.get("subresource", "")),
        namespace=str(attrs.get("namespace", "")),
        name=str(attrs.get("name", "")),
    )


def _answer(body: Obj, kind: str, api_version: str, status: Obj) -> Obj:
    answer = dict(body)
    answer["kind"], answer["apiVersion"] = kind, api_version
    answer["metadata"] = dict(body.get("metadata") or {})
    answer["metadata"].setdefault("creationTimestamp", None)
    answer["status"] = status
    return answer
