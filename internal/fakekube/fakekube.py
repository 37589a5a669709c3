"""`FakeKube`: the emulator's public face for tests, benchmarks and the CLI.

It wires the store, watch hub, fault injector and review answers to an HTTP server on
127.0.0.1, writes a kubeconfig for the official client, and offers direct state manipulation
that bypasses HTTP (and the API's status rules) yet emits the same watch events, so tests can
play kubelet or a controller while the code under test talks HTTP. State outlives
`stop()`/`restart()`, as etcd outlives an apiserver restart.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from internal.fakekube import kubeconfig
from internal.fakekube.admin import handle_admin
from internal.fakekube.auth import AccessReviews, TokenReviews
from internal.fakekube.faults import Fault, FaultInjector
from internal.fakekube.handler import Handler, RequestRecord
from internal.fakekube.operations import Operations
from internal.fakekube.patching import MERGE, deep_copy
from internal.fakekube.resources import (
    JOBSET_RELEASE,
    ResourceTable,
    ResourceType,
    served_resources,
)
from internal.fakekube.selectors import make_filter
from internal.fakekube.server import ServerRunner
from internal.fakekube.store import Store, object_key
from internal.fakekube.watch import WatchHub

Obj = dict[str, Any]


class FakeKube:
    """An in-process Kubernetes API emulator (see the package docstring for the scope).

    ``jobset_release``: the JobSet release whose CRD it serves; status fields that release's
    schema lacks are pruned from every write (``resources.JOBSET_STATUS_SINCE``)."""

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        token: str = "fakekube-token",
        require_auth: bool = True,
        history_size: int = 10_000,
        bookmark_interval: float = 5.0,
        watch_timeout: float = 1800.0,
        clock: Callable[[], float] = time.time,
        request_log_size: int = 10_000,
        jobset_release: str = JOBSET_RELEASE,
    ) -> None:
        self.host = host
        self.token = token
        self.require_auth = require_auth
        self.accepted_tokens: set[str] = {token}
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.store = Store(history_size, clock)
        self.token_reviews = TokenReviews()
        self.access_reviews = AccessReviews()
        self.resources = ResourceTable(served_resources(jobset_release))
        """What this emulator serves: the built-in resources and the CRDs created since."""
        self.ops = Operations(self.store, self.token_reviews, self.access_reviews, self.resources)
        self.faults = FaultInjector()
        self.watches = WatchHub(self.store)
        self.requests: Counter[tuple[str, str]] = Counter()
        self.request_log: deque[RequestRecord] = deque(maxlen=request_log_size)
        self.server_errors: list[str] = []
        self._counter_lock = threading.Lock()
        self._port = port
        self._runner: ServerRunner | None = None
        self._lifecycle = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeKube:
        """Bind (the same port as before, after the first start) and serve in a thread."""
        with self._lifecycle:
            if self._runner is None:
                self._runner = ServerRunner(self.host, self._port, Handler, self)
                self._port = self._runner.port
                self._runner.start()
        return self

    def stop(self, graceful: bool = False) -> None:
        """Stop serving and reset every connection; watches end abruptly unless `graceful`."""
        with self._lifecycle:
            runner, self._runner = self._runner, None
        if runner is None:
            return
        if graceful:
            self.watches.drop_all(abrupt=False)
            deadline = time.monotonic() + 1.0
            while self.watches.count and time.monotonic() < deadline:
                time.sleep(0.01)
        runner.stop(before_reset=lambda: self.watches.drop_all(abrupt=True))

    def restart(self, graceful: bool = False) -> None:
        """Simulate an apiserver restart: connections die, state and port survive."""
        self.stop(graceful=graceful)
        self.start()

    @property
    def running(self) -> bool:
        return self._runner is not None

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self._port}"

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig for this server and its token; returns the path."""
        if not self._port:
            raise RuntimeError("start() the emulator before writing its kubeconfig")
        return kubeconfig.write(path, self.endpoint, self.token)

    # -- hooks used by the HTTP handler ------------------------------------------------------

    def record(self, request: RequestRecord) -> None:
        with self._counter_lock:
            self.requests[(request.verb, request.resource)] += 1
            self.request_log.append(request)

    def authorized(self, header: str | None) -> bool:
        if not self.require_auth:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        return header[len("Bearer ") :].strip() in self.accepted_tokens

    def record_error(self, text: str) -> None:
        self.server_errors.append(text)

    def admin(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        return handle_admin(self, method, path, body)

    # -- counters, faults, history ----------------------------------------------------------

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests served so far with this verb and/or resource (e.g. "list", "nodes")."""
        with self._counter_lock:
            return sum(
                n
                for (v, r), n in self.requests.items()
                if (verb is None or v == verb) and (resource is None or r == resource)
            )

    def reset_counters(self) -> None:
        with self._counter_lock:
            self.requests.clear()
            self.request_log.clear()

    def fail_next(self, count: int | None = 1, **kwargs: Any) -> Fault:
        """Shorthand for `faults.fail_next` (status, path_prefix, verb, method, ...)."""
        return self.faults.fail_next(count, **kwargs)

    def drop_watches(self, abrupt: bool = False) -> int:
        """End all open watch streams now; returns how many there were."""
        return self.watches.drop_all(abrupt=abrupt)

    def compact(self, drop_watches: bool = False) -> int:
        """Forget the history: watching or continuing from any older version gets 410."""
        with self.store.lock:
            old = self.store.rv
            floor = self.store.compact()
            if drop_watches:
                self.watches.drop_all(abrupt=False)
            else:
                self.watches.advance(old, floor)
        return floor

    @property
    def resource_version(self) -> str:
        return str(self.store.rv)

    def serve_versions(self, resource: str, *versions: str) -> None:
        """Serve a built-in resource (``workloads.kueue.x-k8s.io``) at these versions only,
        from now on: an older or newer Kueue. Open watches of a version no longer served go
        on until they end; lists and new watches of it are 404, as on a cluster."""
        self.resources.serve_versions(resource, versions)

    # -- direct state manipulation (no HTTP; status written as given) ----------------------

    def create(self, obj: Obj) -> Obj:
        """Create `obj` (apiVersion/kind pick the resource), keeping its `.status`."""
        rt = self.resources.for_object(obj)
        return deep_copy(self.store.create(rt, deep_copy(obj), None, via_api=False))

    def create_many(self, objs: Iterable[Obj], *, copy: bool = True) -> int:
        """Create many objects under one lock (bulk fleet setup); returns how many.

        With `copy=False` the store takes the dicts as they are (about twice as fast at 65k
        nodes): the caller must not touch them afterwards. The cyclic garbage collector is
        paused meanwhile; at fleet scale, consider `gc.freeze()` afterwards so later
        collections skip the millions of stored, acyclic objects.
        """
        created = 0
        collecting = gc.isenabled()
        gc.disable()
        try:
            with self.store.lock:
                for obj in objs:
                    fresh = deep_copy(obj) if copy else obj
                    self.store.create(self.resources.for_object(obj), fresh, None, via_api=False)
                    created += 1
        finally:
            if collecting:
                gc.enable()
        return created

    def update(self, obj: Obj) -> Obj:
        """Replace an object, `.status` included; a stale `resourceVersion` raises Conflict."""
        rt, namespace, name = self._locate(obj)
        return deep_copy(self.store.replace(rt, deep_copy(obj), namespace, name, via_api=False))

    def apply(self, obj: Obj) -> Obj:
        """Create or replace (ignoring `resourceVersion`), `.status` included."""
        rt, namespace, name = self._locate(obj)
        fresh = deep_copy(obj)
        (fresh.get("metadata") or {}).pop("resourceVersion", None)
        with self.store.lock:
            if self._exists(rt, namespace, name):
                return deep_copy(self.store.replace(rt, fresh, namespace, name, via_api=False))
            return deep_copy(self.store.create(rt, fresh, namespace, via_api=False))

    def patch(self, kind: str, name: str, patch: Obj, namespace: str | None = None) -> Obj:
        """JSON-merge-patch a whole object (status included)."""
        return self._merge(kind, name, patch, namespace, None)

    def patch_status(self, kind: str, name: str, status: Obj, namespace: str | None = None) -> Obj:
        """JSON-merge-patch `.status` of an object, as kubelet or a controller would."""
        rt = self.resources.resolve(kind)
        sub = "status" if rt.status_subresource else None
        return self._merge(kind, name, {"status": status}, namespace, sub)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> Obj:
        """Delete now; watchers get DELETED. `kind` is a kind, plural or `plural.group`."""
        rt = self.resources.resolve(kind)
        return deep_copy(self.store.delete(rt, self._namespace(rt, namespace), name))

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj:
        rt = self.resources.resolve(kind)
        return deep_copy(self.store.get(rt, self._namespace(rt, namespace), name))

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Objects of a resource (all namespaces when `namespace` is None), sorted by key."""
        rt = self.resources.resolve(kind)
        keep = make_filter(label_selector, field_selector, rt.field_labels)
        ns = namespace if rt.namespaced else None
        return deep_copy(self.store.list(rt, ns, keep).items)

    def _merge(
        self, kind: str, name: str, patch: Obj, namespace: str | None, sub: str | None
    ) -> Obj:
        rt = self.resources.resolve(kind)
        ns = self._namespace(rt, namespace)
        body = orjson.dumps(patch)
        return deep_copy(
            self.store.patch(rt, ns, name, MERGE, body, subresource=sub, via_api=False)
        )

    @staticmethod
    def _namespace(rt: ResourceType, namespace: str | None) -> str | None:
        if not rt.namespaced:
            return None
        return namespace or "default"

    def _locate(self, obj: Obj) -> tuple[ResourceType, str | None, str]:
        rt = self.resources.for_object(obj)
        meta = obj.get("metadata") or {}
        return rt, self._namespace(rt, meta.get("namespace")), str(meta.get("name", ""))

    def _exists(self, rt: ResourceType, namespace: str | None, name: str) -> bool:
        return object_key(namespace, name) in self.store.bucket(rt).objects
