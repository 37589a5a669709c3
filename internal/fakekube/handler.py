"""HTTP/1.1 framing for the emulator: requests in, JSON or chunked watch streams out.

The handler owns what a socket-level client observes: keep-alive, `Content-Type:
application/json` (the python client refuses to deserialize anything else), chunked transfer
encoding for watches, 401 for a missing or wrong bearer token, `Retry-After` on injected
faults, and `kind: Status` bodies for every error. Semantics live in `operations`, `store`
and `watch`; the admin endpoint lives in `admin`.
"""

from __future__ import annotations

import socket
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import orjson

from internal.fakekube import discovery, errors, routing
from internal.fakekube.errors import ApiError
from internal.fakekube.faults import FaultInjector
from internal.fakekube.operations import Operations, Query, flag, int_param, object_filter, param
from internal.fakekube.resources import ResourceTable
from internal.fakekube.routing import Route
from internal.fakekube.watch import WatchHub, WatchRequest


@dataclass(frozen=True)
class RequestRecord:
    """One API request as the emulator saw it (kept for tests to assert on)."""

    method: str
    path: str
    query: str
    verb: str
    resource: str
    content_type: str


class App(Protocol):
    """What the handler needs from FakeKube."""

    ops: Operations
    resources: ResourceTable
    faults: FaultInjector
    watches: WatchHub
    bookmark_interval: float
    watch_timeout: float

    def record(self, request: RequestRecord) -> None: ...
    def authorized(self, header: str | None) -> bool: ...
    def record_error(self, text: str) -> None: ...
    def admin(self, method: str, path: str, body: bytes) -> tuple[int, Any]: ...


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return "fakekube"

    @property
    def app(self) -> App:
        app: App = self.server.app  # type: ignore[attr-defined]
        return app

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.untrack(self.connection)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and benchmarks do not want a line per request on stderr."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        body = self._read_body()
        if url.path.startswith("/admin/"):
            code, doc = self.app.admin(method, url.path, body)
            self._send_json(code, doc)
            return
        query: Query = parse_qs(url.query, keep_blank_values=True)
        route = routing.parse(url.path, self.app.resources)
        verb = routing.verb_of(method, route, bool(flag(query, "watch")))
        resource = route.resource_label if route is not None else url.path
        content_type = self.headers.get("Content-Type") or ""
        self.app.record(RequestRecord(method, url.path, url.query, verb, resource, content_type))
        try:
            self._serve(method, url.path, route, verb=verb, query=query, body=body)
        except ApiError as exc:
            headers = {}
            if exc.retry_after is not None:
                headers["Retry-After"] = str(exc.retry_after)
            self._send_json(exc.code, exc.status(), headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # a bug in the emulator: answer 500 and keep the trace for tests
            self.app.record_error(traceback.format_exc())
            self._send_json(500, errors.ApiError(500, "fakekube internal error").status())

    def _serve(
        self, method: str, path: str, route: Route | None, *, verb: str, query: Query, body: bytes
    ) -> None:
        fault = self.app.faults.take(method, path, verb)
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status is not None:
                raise errors.for_status(fault.status, fault.message, fault.retry_after)
        if path in ("/healthz", "/livez", "/readyz"):
            self._send(200, b"ok", "text/plain")
            return
        if not self.app.authorized(self.headers.get("Authorization")):
            raise ApiError(401, "Unauthorized")
        if route is None:
            doc = discovery.document(path, self.app.resources) if method == "GET" else None
            if doc is None:
                raise errors.route_not_found()
            self._send_json(200, doc)
            return
        if verb == "watch":
            self._watch(route, query)
            return
        content_type = self.headers.get("Content-Type") or ""
        reply = self.app.ops.serve(route, verb, query, body, content_type)
        self._send_json(reply.code, reply.body)

    def _send(
        self, code: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, code: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        data = doc if isinstance(doc, bytes) else orjson.dumps(doc)
        self._send(code, data, "application/json", headers)

    def _watch(self, route: Route, query: Query) -> None:
        rt = route.rt
        if rt is None or route.name is not None or route.subresource is not None:
            raise ApiError(405, "watch is only supported on collections")
        timeout = int_param(query, "timeoutSeconds")
        request = WatchRequest(
            rt=rt,
            namespace=route.namespace,
            keep=object_filter(rt, query),
            resource_version=param(query, "resourceVersion"),
            allow_bookmarks=bool(flag(query, "allowWatchBookmarks")),
            send_initial_events=flag(query, "sendInitialEvents"),
            timeout=float(timeout) if timeout and timeout > 0 else self.app.watch_timeout,
        )
        session = self.app.watches.open(request, self.app.bookmark_interval)
        session.sock = self.connection
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in session.lines():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
        finally:
            self.app.watches.close(session)
        if session.dropped:
            self.close_connection = True
