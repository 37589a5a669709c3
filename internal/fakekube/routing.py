"""URL routing: map an API path to a resource, namespace, name and subresource.

Paths follow the API server's layout: `/api/v1/...` for the core group, `/apis/G/V/...` for
the others, `namespaces/NS/` before namespaced resources, an optional trailing subresource,
and the legacy `/watch/` prefix. Deriving the Kubernetes verb (get/list/watch/...) here lets
fault injection and request counters speak the same vocabulary as audit logs and RBAC.
"""

from __future__ import annotations

from dataclasses import dataclass

from internal.fakekube.resources import BUILTIN, ResourceTable, ResourceType

REVIEWS = {
    ("authentication.k8s.io", "v1", "tokenreviews"): "TokenReview",
    ("authorization.k8s.io", "v1", "subjectaccessreviews"): "SubjectAccessReview",
}


@dataclass(frozen=True)
class Route:
    """A parsed API path; exactly one of `rt` / `review` is set."""

    rt: ResourceType | None
    namespace: str | None
    name: str | None
    subresource: str | None
    review: str | None = None
    legacy_watch: bool = False

    @property
    def resource_label(self) -> str:
        """The resource as counters and fault rules name it, e.g. `nodes` or `jobs/status`."""
        base = self.rt.plural if self.rt is not None else (self.review or "").lower() + "s"
        return f"{base}/{self.subresource}" if self.subresource else base


def parse(path: str, table: ResourceTable = BUILTIN) -> Route | None:
    """The route of an API path, or None when nothing is served there."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    legacy_watch = bool(rest) and rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    if len(rest) == 1 and (group, version, rest[0]) in REVIEWS:
        return Route(None, None, None, None, review=REVIEWS[(group, version, rest[0])])
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rt = table.by_path(group, version, rest[0])
    if rt is None or (namespace is not None and not rt.namespaced):
        return None
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else None
    if subresource is not None and (subresource != "status" or not rt.status_subresource):
        return None
    if name is not None and rt.namespaced and namespace is None:
        return None
    return Route(rt, namespace, name, subresource, legacy_watch=legacy_watch)


def verb_of(method: str, route: Route | None, watch: bool) -> str:
    """The Kubernetes verb of a request (`get`, `list`, `watch`, `create`, ...)."""
    if route is None:
        return method.lower()
    collection = route.name is None
    if method == "GET":
        if watch or route.legacy_watch:
            return "watch"
        return "list" if collection else "get"
    if method == "DELETE":
        return "deletecollection" if collection else "delete"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
