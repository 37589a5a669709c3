"""The three PATCH flavours the API server accepts for JSON bodies.

The python client picks the content type from the body: a list is sent as
`application/json-patch+json`, a dict as `application/strategic-merge-patch+json` for built-in
kinds and as `application/merge-patch+json` for custom objects. So all three must work.

Merge patch follows RFC 7386 exactly. Strategic merge is approximated: it is merge patch plus
merging of well-known lists by their merge key (conditions by `type`, containers by `name`, ...),
union of `finalizers`, and the `$patch: replace|delete` directives; other `$` directives are
dropped. JSON patch follows RFC 6902. Merge functions never mutate their inputs: stored objects
are shared, immutable trees, and results reuse untouched subtrees.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import orjson

from internal.fakekube.errors import ApiError

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

# Lists whose strategic-merge patch strategy is "merge", keyed by field name -> merge key.
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "addresses": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "replicatedJobs": "name",
    "replicatedJobsStatus": "name",
}
UNION_LISTS = frozenset({"finalizers"})


T = TypeVar("T")


def deep_copy(value: T) -> T:
    """A deep copy of JSON data (orjson round trip: faster than `copy.deepcopy`)."""
    return cast(T, orjson.loads(orjson.dumps(value)))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    """Merge patch plus keyed list merging and `$patch` directives (see module docstring)."""
    if isinstance(patch, list):
        return _merge_list(target, patch, field)
    if not isinstance(patch, dict):
        return patch
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    clean = {k: v for k, v in patch.items() if not k.startswith("$")}
    if directive == "replace":
        return clean
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in clean.items():
        if value is None:
            result.pop(key, None)
            continue
        merged = strategic_merge_patch(result.get(key), value, key)
        if merged is None:
            result.pop(key, None)
        else:
            result[key] = merged
    return result


def _merge_list(target: Any, patch: list[Any], field: str) -> list[Any]:
    current = target if isinstance(target, list) else []
    if field in UNION_LISTS:
        return current + [v for v in patch if v not in current]
    key = MERGE_KEYS.get(field)
    if key is None or not all(isinstance(p, dict) for p in patch):
        return [strategic_merge_patch(None, p) for p in patch if not _is_delete(p)]
    result = list(current)
    for item in patch:
        position = _find(result, key, item.get(key))
        if _is_delete(item):
            if position is not None:
                del result[position]
        elif position is None:
            result.append(strategic_merge_patch(None, item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


def _is_delete(item: Any) -> bool:
    return isinstance(item, dict) and item.get("$patch") == "delete"


def _find(items: list[Any], key: str, value: Any) -> int | None:
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get(key) == value:
            return i
    return None


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a private copy of `target`."""
    if not isinstance(operations, list):
        raise ApiError(400, "json patch must be a list of operations")
    doc = deep_copy(target)
    for op in operations:
        if not isinstance(op, dict) or "path" not in op:
            raise ApiError(400, f"invalid json patch operation: {op!r}")
        doc = _apply_op(doc, op)
    return doc


def _apply_op(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind == "test":
        if _get(doc, op["path"]) != op.get("value"):
            raise ApiError(422, f"testing value {op['path']} failed")
        return doc
    if kind == "remove":
        return _remove(doc, op["path"])
    if kind in ("add", "replace"):
        if kind == "replace":
            _get(doc, op["path"])
        return _add(doc, op["path"], deep_copy(op.get("value")), replace=kind == "replace")
    if kind in ("move", "copy"):
        value = deep_copy(_get(doc, op["from"]))
        if kind == "move":
            doc = _remove(doc, op["from"])
        return _add(doc, op["path"], value, replace=False)
    raise ApiError(400, f"unexpected json patch operation {kind!r}")


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ApiError(400, f"invalid json pointer {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _step(node: Any, token: str, pointer: str) -> Any:
    try:
        if isinstance(node, list):
            return node[int(token)]
        return node[token]
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise ApiError(422, f"json patch path {pointer!r} does not exist") from exc


def _walk(doc: Any, tokens: list[str], pointer: str) -> Any:
    node = doc
    for token in tokens:
        node = _step(node, token, pointer)
    return node


def _get(doc: Any, pointer: str) -> Any:
    return _walk(doc, _tokens(pointer), pointer)


def _parent(doc: Any, pointer: str) -> tuple[Any, str]:
    tokens = _tokens(pointer)
    if not tokens:
        raise ApiError(422, "json patch cannot remove the whole document")
    return _walk(doc, tokens[:-1], pointer), tokens[-1]


def _add(doc: Any, pointer: str, value: Any, replace: bool) -> Any:
    if pointer == "":
        return value
    parent, last = _parent(doc, pointer)
    if isinstance(parent, list):
        index = len(parent) if last == "-" else _index(last, len(parent) + (0 if replace else 1))
        if replace:
            parent[index] = value
        else:
            parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise ApiError(422, f"json patch path {pointer!r} does not exist")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    parent, last = _parent(doc, pointer)
    _step(parent, last, pointer)
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]
    return doc


def _index(token: str, size: int) -> int:
    if not token.isdigit() or int(token) >= size:
        raise ApiError(422, f"json patch index {token!r} out of range")
    return int(token)


def apply_patch(content_type: str, target: dict[str, Any], body: bytes, custom: bool) -> Any:
    """Apply a PATCH body of `content_type` to `target`, as the API server would."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == APPLY:
        raise ApiError(415, "server-side apply is not supported by this emulator")
    if media not in (MERGE, STRATEGIC, JSON_PATCH):
        raise ApiError(415, f"the body of the request was in an unknown format: {media}")
    if media == STRATEGIC and custom:
        raise ApiError(415, f"the body of the request was in an unknown format: {media}")
    try:
        patch = orjson.loads(body or b"null")
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, f"error decoding patch: {exc}") from exc
    if media == JSON_PATCH:
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise ApiError(400, "patch body must be a JSON object")
    if media == MERGE:
        return merge_patch(target, patch)
    return strategic_merge_patch(target, patch)
