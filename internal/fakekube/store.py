"""The object store: one lock, one global resourceVersion, one event per committed write.

Stored objects are plain dicts treated as immutable: a write builds a new top level (sharing
untouched subtrees) and never changes a stored dict in place. That makes reads, list
snapshots and watch events mere references, which keeps 65k nodes of ~9 KB affordable. Both the
HTTP handler (`via_api=True`, real strategies) and the test-facing Python API (`via_api=False`,
which writes `.status` freely) go through here, so both emit the same watch events.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from internal.fakekube import errors, strategy
from internal.fakekube.errors import ApiError
from internal.fakekube.history import ADDED, DELETED, MODIFIED, Event, History
from internal.fakekube.listing import Bucket, Page, Snapshots, page, start_from_continue
from internal.fakekube.patching import apply_patch
from internal.fakekube.resources import RESOURCES, ResourceType
from internal.fakekube.selectors import ObjectFilter

Obj = dict[str, Any]


def object_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace is not None else name


class Store:
    """Thread-safe storage of all resources, with watchable history."""

    def __init__(self, history_size: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.history = History(history_size)
        self.snapshots = Snapshots()
        self.clock = clock
        self.rv = 0
        self._buckets = {rt.qualified: Bucket(rt.qualified) for rt in RESOURCES}

    def bucket(self, rt: ResourceType) -> Bucket:
        found = self._buckets.get(rt.qualified)
        if found is None:  # the resource of a CRD created since
            found = self._buckets[rt.qualified] = Bucket(rt.qualified)
        return found

    def _now(self) -> str:
        return datetime.fromtimestamp(self.clock(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _commit(self, rt: ResourceType, key: str, kind: str, obj: Obj, prev: Obj | None) -> Obj:
        """Give `obj` the next resourceVersion, store it and record the event."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        bucket = self.bucket(rt)
        if kind == DELETED:
            bucket.remove(key, self.rv)
        else:
            bucket.put(key, obj, self.rv)
        namespace = obj["metadata"].get("namespace")
        self.history.append(Event(self.rv, kind, rt.qualified, key, namespace, obj, prev))
        self.changed.notify_all()
        return obj

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        with self.lock:
            found = self.bucket(rt).objects.get(object_key(namespace, name))
        if found is None:
            raise errors.not_found(rt, name)
        return found

    def create(self, rt: ResourceType, obj: Obj, namespace: str | None, *, via_api: bool) -> Obj:
        """Create `obj` (owned by the store from now on) in `namespace` (None: from the body)."""
        meta = strategy.metadata(obj)
        if via_api and meta.get("resourceVersion"):
            raise ApiError(500, "resourceVersion should not be set on objects to be created")
        meta.pop("resourceVersion", None)
        name = strategy.name_for_create(rt, meta)
        ns = strategy.namespace_for(rt, meta, namespace)
        strategy.prepare_create(rt, obj, via_api=via_api)
        key = object_key(ns, name)
        with self.lock:
            if key in self.bucket(rt).objects:
                raise errors.already_exists(rt, name)
            strategy.stamp_new(rt, meta, str(uuid.uuid4()), self._now())
            return self._commit(rt, key, ADDED, obj, None)

    def replace(
        self,
        rt: ResourceType,
        obj: Obj,
        namespace: str | None,
        name: str,
        *,
        subresource: str | None = None,
        via_api: bool = True,
    ) -> Obj:
        """PUT semantics: optimistic concurrency on `metadata.resourceVersion` when given."""
        return self.replace_or_create(rt, obj, namespace, name, subresource, via_api=via_api)[0]

    def replace_or_create(
        self,
        rt: ResourceType,
        obj: Obj,
        namespace: str | None,
        name: str,
        subresource: str | None = None,
        *,
        via_api: bool = True,
    ) -> tuple[Obj, bool]:
        """`replace`, plus create for resources whose PUT may create; says if it created."""
        meta = strategy.metadata(obj)
        strategy.check_name(rt, meta.get("name"), name)
        meta["name"] = name
        ns = strategy.namespace_for(rt, meta, namespace)
        key = object_key(ns, name)
        with self.lock:
            old = self.bucket(rt).objects.get(key)
            if old is not None:
                return self._update(
                    rt, key, obj, old, subresource=subresource, via_api=via_api
                ), False
            if rt.create_on_update and subresource is None and not meta.get("resourceVersion"):
                return self.create(rt, obj, ns, via_api=via_api), True
            raise errors.not_found(rt, name)

    def _update(
        self,
        rt: ResourceType,
        key: str,
        new: Obj,
        old: Obj,
        *,
        subresource: str | None,
        via_api: bool,
    ) -> Obj:
        wanted = new["metadata"].get("resourceVersion")
        current = old["metadata"]["resourceVersion"]
        if wanted and str(wanted) != current:
            raise errors.conflict(rt, old["metadata"]["name"])
        strategy.prepare_update(rt, new, old, subresource=subresource, via_api=via_api)
        new["metadata"]["resourceVersion"] = current
        if new == old:
            return old  # a no-op write: no new version, no event (as etcd3 storage does)
        return self._commit(rt, key, MODIFIED, new, old)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        body: bytes,
        *,
        subresource: str | None = None,
        via_api: bool = True,
    ) -> Obj:
        """PATCH: apply to the stored object, then update (a patched resourceVersion is checked)."""
        key = object_key(namespace, name)
        with self.lock:
            old = self.bucket(rt).objects.get(key)
            if old is None:
                raise errors.not_found(rt, name)
            patched = strategy.require_object(apply_patch(content_type, old, body, rt.custom))
            meta = strategy.metadata(patched)
            if meta.get("name") != name or meta.get("namespace") != namespace:
                raise errors.bad_request("a patch may not change the name or namespace")
            return self._update(rt, key, patched, old, subresource=subresource, via_api=via_api)

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        precondition_rv: str | None = None,
        precondition_uid: str | None = None,
    ) -> Obj:
        """Remove at once (no graceful deletion); the DELETED event carries the new version."""
        key = object_key(namespace, name)
        with self.lock:
            old = self.bucket(rt).objects.get(key)
            if old is None:
                raise errors.not_found(rt, name)
            old_meta = old["metadata"]
            if precondition_uid and precondition_uid != old_meta.get("uid"):
                why = f"Precondition failed: UID in precondition: {precondition_uid}, "
                raise errors.conflict(rt, name, why + f"UID in object meta: {old_meta['uid']}")
            if precondition_rv and precondition_rv != old_meta["resourceVersion"]:
                raise errors.conflict(rt, name)
            last = dict(old)
            last["metadata"] = dict(old_meta)
            return self._commit(rt, key, DELETED, last, old)

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, keep: ObjectFilter
    ) -> list[Obj]:
        with self.lock:
            doomed = self._matching(rt, namespace, keep)
            return [
                self.delete(rt, o["metadata"].get("namespace"), o["metadata"]["name"])
                for o in doomed
            ]

    def _matching(self, rt: ResourceType, namespace: str | None, keep: ObjectFilter) -> list[Obj]:
        view = self.snapshots.view(self.bucket(rt), self.history, self.rv)
        return page(
            view, namespace, keep.predicate(), limit=None, start_key=None, filtered=True
        ).items

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        keep: ObjectFilter,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> Page:
        """One page of a list, consistent with earlier pages of the same continue chain."""
        with self.lock:
            start_key = None
            at = self.rv
            if continue_token:
                if resource_version not in (None, "", "0"):
                    raise errors.bad_request(
                        "specifying resource version is not allowed when using continue"
                    )
                snapshot, start_key = start_from_continue(continue_token, self.history)
                at = self.rv if snapshot is None else snapshot
            elif resource_version not in (None, "", "0"):
                at = self._list_version(str(resource_version), resource_version_match)
            view = self.snapshots.view(self.bucket(rt), self.history, at)
            return page(
                view,
                namespace,
                keep.predicate(),
                limit=limit or None,
                start_key=start_key,
                filtered=not keep.empty,
            )

    def _list_version(self, resource_version: str, match: str | None) -> int:
        wanted = parse_rv(resource_version)
        if wanted > self.rv:
            raise errors.too_large(wanted, self.rv)
        if match == "Exact":
            return wanted
        return self.rv

    def compact(self) -> int:
        """Drop all history and skip one version, so every older version is "too old"."""
        with self.lock:
            self.rv += 1
            self.history.compact(self.rv)
            self.snapshots.clear()
            self.changed.notify_all()
            return self.rv


def parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise errors.bad_request(f"invalid resource version: {text!r}") from exc
    if value < 0:
        raise errors.bad_request(f"invalid resource version: {text!r}")
    return value
