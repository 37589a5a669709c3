"""Per-resource create and update rules, after the API server's registry "strategies".

The real server rewrites what clients send: create drops or resets `.status` (except for
nodes), PUT of the main resource keeps the stored `.status` when status is a subresource, PUT of
`/status` keeps everything but `.status` (custom resources) or `.spec` (built-ins), system
metadata is never taken from the client, and `metadata.generation` moves only when the spec
does. Controllers that look right against a naive fake break on these rules, so they live here.

Functions take freshly built top-level dicts they may modify; nested values are shared with
stored objects and must never be mutated.
"""

from __future__ import annotations

import secrets
from typing import Any

from internal.fakekube.errors import ApiError, bad_request, invalid
from internal.fakekube.resources import ResourceType

Obj = dict[str, Any]

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "generation", "deletionTimestamp")


def metadata(obj: Obj) -> Obj:
    """The object's `metadata`, replaced by a private copy that may be modified."""
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    fresh = dict(meta or {})
    obj["metadata"] = fresh
    return fresh


def name_for_create(rt: ResourceType, meta: Obj) -> str:
    """`metadata.name`, or one generated from `generateName` as the API server does."""
    name = meta.get("name")
    if not name and meta.get("generateName"):
        suffix = "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
        name = f"{meta['generateName']}{suffix}"
        meta["name"] = name
    if not name or not isinstance(name, str):
        raise invalid(rt, "", "metadata.name", "Required value: name or generateName is required")
    return name


def namespace_for(rt: ResourceType, meta: Obj, path_namespace: str | None) -> str | None:
    """Reconcile `metadata.namespace` with the namespace of the URL (or the default)."""
    if not rt.namespaced:
        meta.pop("namespace", None)
        return None
    given = meta.get("namespace")
    if path_namespace is not None and given and given != path_namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    namespace = path_namespace or given or "default"
    meta["namespace"] = namespace
    return str(namespace)


def served_as(rt: ResourceType, obj: Obj) -> Obj:
    """`obj` as read at `rt`'s version: a custom resource served at several versions keeps
    one object, which the API server converts to the version asked for (the fields megamon
    reads are the same in Kueue's v1beta1 and v1beta2, so only `apiVersion` changes)."""
    if not rt.custom or obj.get("apiVersion") == rt.api_version:
        return obj
    return {**obj, "apiVersion": rt.api_version}


def _pruned(value: Any, path: tuple[str, ...]) -> Any:
    """`value` without the field at `path`, copied along the path only (nested values are
    shared with stored objects and never mutated)."""
    head, rest = path[0], path[1:]
    if head == "*":
        return [_pruned(item, rest) for item in value] if isinstance(value, list) else value
    if not isinstance(value, dict) or head not in value:
        return value
    if not rest:
        return {key: item for key, item in value.items() if key != head}
    return {**value, head: _pruned(value[head], rest)}


def prune(rt: ResourceType, obj: Obj) -> None:
    """Drop the fields the served CRD's schema does not have (`ResourceType.pruned`), as the
    real server prunes unknown fields of a structural schema on every write."""
    for path in rt.pruned:
        if path[0] in obj:
            obj[path[0]] = _pruned(obj[path[0]], path[1:])


def prepare_create(rt: ResourceType, obj: Obj, *, via_api: bool) -> None:
    """Apply the create strategy: type fields, and `.status` as the real server treats it."""
    obj["apiVersion"] = rt.api_version
    obj["kind"] = rt.kind
    prune(rt, obj)
    if not via_api or not rt.status_subresource:
        return
    if rt.status_on_create == "drop":
        obj.pop("status", None)
    elif rt.status_on_create == "empty":
        obj["status"] = {}
    elif rt.status_on_create == "pending":
        obj["status"] = {"phase": "Pending"}


def stamp_new(rt: ResourceType, meta: Obj, uid: str, created: str) -> None:
    """Set the system metadata of a newly created object."""
    for field in _SYSTEM_FIELDS:
        meta.pop(field, None)
    meta["uid"] = uid
    meta["creationTimestamp"] = created
    if rt.tracks_generation:
        meta["generation"] = 1


def prepare_update(
    rt: ResourceType, new: Obj, old: Obj, *, subresource: str | None, via_api: bool
) -> None:
    """Apply the update (or status-update) strategy to `new`, which replaces `old`."""
    new["apiVersion"] = rt.api_version
    new["kind"] = rt.kind
    prune(rt, new)
    if subresource == "status":
        _keep_all_but_status(rt, new, old)
    elif via_api and rt.status_subresource:
        _keep_old(new, old, "status")
    meta = metadata(new)
    old_meta = old["metadata"]
    for field in ("name", "namespace", "uid", "creationTimestamp"):
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    meta.pop("generation", None)
    if "generation" in old_meta:
        bumped = rt.tracks_generation and _spec_changed(new, old)
        meta["generation"] = old_meta["generation"] + (1 if bumped else 0)
    if "deletionTimestamp" in old_meta:
        meta["deletionTimestamp"] = old_meta["deletionTimestamp"]


def _keep_all_but_status(rt: ResourceType, new: Obj, old: Obj) -> None:
    if rt.custom:
        status = new.get("status")
        new.clear()
        new.update(old)
        new.pop("status", None)
        if status is not None:
            new["status"] = status
        return
    for key in set(old) | set(new):
        if key not in ("metadata", "status", "apiVersion", "kind"):
            _keep_old(new, old, key)


def _keep_old(new: Obj, old: Obj, key: str) -> None:
    if key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)


def _spec_changed(new: Obj, old: Obj) -> bool:
    ignored = ("metadata", "status")
    keys = (set(new) | set(old)).difference(ignored)
    return any(new.get(k) != old.get(k) for k in keys)


def check_name(rt: ResourceType, body_name: Any, url_name: str) -> None:
    """PUT and status PUT must name the object of the URL."""
    if body_name and body_name != url_name:
        raise bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({url_name})"
        )
    if not url_name:
        raise invalid(rt, "", "metadata.name", "Required value: name is required")


def require_object(body: Any) -> Obj:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body
