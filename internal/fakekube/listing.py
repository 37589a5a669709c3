"""Paginated, consistent lists: `limit`, `continue` tokens and listing at a past version.

The API server promises that all pages of a `limit`/`continue` list come from one snapshot (the
first page's resourceVersion), returns items sorted by key, and answers 410 when that snapshot
left the history. With 65k nodes a snapshot must be cheap, so it is a sorted key list plus a
dict of references to immutable stored objects: the current state when nothing changed since,
otherwise the current state with the later history events undone. A few recent snapshots are
cached so each page is a bisect rather than a sort.
"""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from internal.fakekube.errors import ApiError, continue_expired, too_old
from internal.fakekube.history import ADDED, History

Obj = dict[str, Any]


@dataclass(frozen=True)
class View:
    """A resource's objects at one resourceVersion, with keys in API order."""

    rv: int
    objects: Mapping[str, Obj]
    keys: list[str]


@dataclass
class Page:
    items: list[Obj]
    rv: int
    continue_token: str | None
    remaining: int | None


class Bucket:
    """The live objects of one resource, keyed `namespace/name` (or `name`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.objects: dict[str, Obj] = {}
        self.last_change = 0
        self._keys: list[str] | None = None

    def put(self, key: str, obj: Obj, rv: int) -> None:
        if key not in self.objects:
            self._keys = None
        self.objects[key] = obj
        self.last_change = rv

    def remove(self, key: str, rv: int) -> None:
        del self.objects[key]
        self._keys = None
        self.last_change = rv

    def sorted_keys(self) -> list[str]:
        if self._keys is None:
            self._keys = sorted(self.objects)
        return self._keys


def encode_continue(rv: int, start_key: str) -> str:
    """A continue token in the API server's format (base64 JSON with `rv` and `start`)."""
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start_key + "\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        rv, start = int(data["rv"]), str(data["start"])
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise ApiError(400, f"continue key is not valid: {exc}") from exc
    if data.get("v") != "meta.k8s.io/v1":
        raise ApiError(400, "continue key is not valid: incorrect encoded start resourceVersion")
    return rv, start


class Snapshots:
    """Builds views of a bucket at a resourceVersion; caches the latest few."""

    def __init__(self, size: int = 8) -> None:
        self._cache: OrderedDict[tuple[str, int], View] = OrderedDict()
        self._size = size

    def clear(self) -> None:
        self._cache.clear()

    def view(self, bucket: Bucket, history: History, rv: int) -> View:
        if rv >= bucket.last_change:
            return View(rv, bucket.objects, bucket.sorted_keys())
        cached = self._cache.get((bucket.name, rv))
        if cached is not None:
            self._cache.move_to_end((bucket.name, rv))
            return cached
        events = history.since(rv)
        if events is None:
            raise too_old(rv, history.floor)
        state = dict(bucket.objects)
        for event in reversed(events):
            if event.resource != bucket.name:
                continue
            if event.type == ADDED:
                state.pop(event.key, None)
            elif event.prev is not None:
                state[event.key] = event.prev
        view = View(rv, state, sorted(state))
        self._cache[(bucket.name, rv)] = view
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return view


def key_range(keys: list[str], namespace: str | None) -> tuple[int, int]:
    """The index range of keys in `namespace` (all keys when None)."""
    if namespace is None:
        return 0, len(keys)
    return bisect_left(keys, namespace + "/"), bisect_left(keys, namespace + "0")


def page(
    view: View,
    namespace: str | None,
    keep: Callable[[Obj], bool],
    *,
    limit: int | None,
    start_key: str | None,
    filtered: bool,
) -> Page:
    """Up to `limit` matching objects after `start_key`, and how to continue."""
    lo, hi = key_range(view.keys, namespace)
    if start_key is not None:
        lo = max(lo, bisect_left(view.keys, start_key))
    items: list[Obj] = []
    index = lo
    while index < hi and (limit is None or len(items) < limit):
        obj = view.objects[view.keys[index]]
        if keep(obj):
            items.append(obj)
        index += 1
    if index >= hi or limit is None:
        return Page(items, view.rv, None, None)
    token = encode_continue(view.rv, view.keys[index - 1])
    return Page(items, view.rv, token, None if filtered else hi - index)


def start_from_continue(token: str, history: History) -> tuple[int | None, str]:
    """The snapshot version and start key of a continue token; 410 when it is too old.

    A version of -1 (from an earlier 410) means "continue from the latest state".
    """
    rv, start = decode_continue(token)
    if rv == -1:
        return None, start
    if rv < history.floor:
        restart = base64.urlsafe_b64encode(
            orjson.dumps({"v": "meta.k8s.io/v1", "rv": -1, "start": start})
        )
        raise continue_expired(restart.decode().rstrip("="))
    return rv, start
