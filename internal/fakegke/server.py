"""The fake GKE HTTP server and its Python control API (``FakeGke``).

Why: megamon talks to GKE through ``google.cloud.container_v1.ClusterManagerClient`` with the
REST transport. Serving GKE's REST surface on a real 127.0.0.1 socket lets tests run that exact
client (URL building, ``$alt=json;enum-encoding=int``, JSON parsing, HTTP error mapping,
retries, timeouts) instead of mocking it. Only the standard library is used, so the fake
starts in milliseconds and needs no binary.

Threads: ``ThreadingHTTPServer`` serves each connection in a daemon thread; shared state lives
in ``NodePoolStore`` / ``FaultPlan`` behind locks. ``stop()`` wakes handlers sleeping on an
injected latency and closes kept-alive client connections, so it returns promptly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from internal.fakegke.errors import ApiError
from internal.fakegke.faults import Fault, FaultPlan, make_fault
from internal.fakegke.routes import (
    ADMIN_PREFIX,
    API_PREFIXES,
    Reply,
    admin_reply,
    api_reply,
    fault_message,
)
from internal.fakegke.store import (
    ClusterRef,
    JsonObject,
    NodePoolStore,
    PolicyRef,
    ResourcePolicyStore,
)

_LOG = logging.getLogger(__name__)


class _StoppingError(Exception):
    """The server stopped while a request slept on an injected latency."""


class ServerState:
    """Everything the handler threads share."""

    def __init__(self) -> None:
        self.store = NodePoolStore()
        self.policies = ResourcePolicyStore()
        self.faults = FaultPlan()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._api_requests = 0

    @property
    def api_requests(self) -> int:
        """API (non-admin) requests received so far, including those failed by a fault."""
        with self._lock:
            return self._api_requests

    def count_api_request(self) -> None:
        """Record one API request."""
        with self._lock:
            self._api_requests += 1


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], state: ServerState) -> None:
        super().__init__(address, _Handler)
        self.state = state
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def track(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def untrack(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def close_connections(self) -> None:
        """Shut down every open client connection so its handler thread ends."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if self.state.stopping.is_set():
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _HttpServer
    protocol_version = "HTTP/1.1"
    server_version = "fakegke/1"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        self.server.untrack(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        _LOG.debug("%s " + format, self.address_string(), *args)

    def _handle(self) -> None:
        url = urlsplit(self.path)
        try:
            body = self._read_body()
            code, payload = self._reply(url.path, parse_qs(url.query), body)
        except ApiError as error:
            code, payload = error.code, error.body()
        except _StoppingError:
            self.close_connection = True
            return
        self._send_json(code, payload)

    def _reply(self, path: str, query: dict[str, list[str]], body: bytes) -> Reply:
        state = self.server.state
        if path.startswith(ADMIN_PREFIX):
            return admin_reply(
                self.command, path, body, state.store, state.faults, policies=state.policies
            )
        state.count_api_request()
        outcome = state.faults.take(path)
        if outcome.latency_seconds and state.stopping.wait(outcome.latency_seconds):
            raise _StoppingError
        if outcome.status is not None:
            raise ApiError(outcome.status, fault_message(outcome.status))
        if not path.startswith(API_PREFIXES):
            raise ApiError(404, f"The requested URL {path} was not found on this server.")
        return api_reply(self.command, path, query, state.store, state.policies)

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        try:
            size = int(length)
        except ValueError as exc:
            self.close_connection = True
            raise ApiError(400, f"invalid Content-Length {length!r}") from exc
        return self.rfile.read(size)

    def _send_json(self, code: int, payload: JsonObject) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except ConnectionError:
            # The client gave up (e.g. its timeout fired during an injected latency).
            self.close_connection = True


class FakeGke:
    """A fake GKE REST endpoint on 127.0.0.1 with a Python API to steer it.

    State (node pools, faults) lives in the object, so it may be seeded before ``start()``.
    Methods that change state raise ``ApiError`` (code 400 or 404) on bad input or unknown
    resources, exactly as the admin HTTP endpoints answer.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._requested_port = port
        self._state = ServerState()
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeGke:
        """Bind the socket and serve in a background thread; returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError("FakeGke is already running")
        self._state.stopping.clear()
        httpd = _HttpServer((self._host, self._requested_port), self._state)
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fakegke-{httpd.server_address[1]}",
            daemon=True,
        )
        self._httpd = httpd
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; safe to call twice."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._state.stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeGke:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port (useful when constructed with port 0)."""
        if self._httpd is None:
            raise RuntimeError("FakeGke is not running")
        return int(self._httpd.server_address[1])

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``, the ``api_endpoint`` to give the client."""
        return f"http://{self._host}:{self.port}"

    @property
    def request_count(self) -> int:
        """API requests received so far (admin excluded; injected failures included)."""
        return self._state.api_requests

    def create_cluster(self, project: str, location: str, cluster: str) -> None:
        """A cluster with no node pool yet, as GKE has one before its first pool."""
        self._state.store.create_cluster(ClusterRef(project, location, cluster))

    def put_node_pool(
        self, project: str, location: str, cluster: str, node_pool: JsonObject
    ) -> JsonObject:
        """Create or replace ``node_pool`` (named by its ``name``); returns the stored copy."""
        name = node_pool.get("name")
        if not isinstance(name, str):
            raise ApiError(400, "node_pool needs a string 'name'")
        return self._state.store.put(ClusterRef(project, location, cluster), name, node_pool)

    def delete_node_pool(self, project: str, location: str, cluster: str, name: str) -> None:
        """Remove a node pool; ``ApiError`` 404 if it does not exist."""
        self._state.store.delete(ClusterRef(project, location, cluster), name)

    def get_node_pool(self, project: str, location: str, cluster: str, name: str) -> JsonObject:
        """A copy of a stored node pool, enums as names."""
        return self._state.store.get(ClusterRef(project, location, cluster), name)

    def list_node_pools(self, project: str, location: str, cluster: str) -> list[JsonObject]:
        """Copies of a cluster's node pools in creation order."""
        return self._state.store.list(ClusterRef(project, location, cluster))

    def set_status(  # noqa: PLR0917 - the resource path, then the new status
        self, project: str, location: str, cluster: str, name: str, status: str, message: str = ""
    ) -> JsonObject:
        """Set a node pool's ``status`` and ``statusMessage`` (removed when ``message`` is "")."""
        ref = ClusterRef(project, location, cluster)
        return self._state.store.set_status(ref, name, status, message)

    def put_resource_policy(self, project: str, region: str, policy: JsonObject) -> JsonObject:
        """Create or replace a Compute Engine resource policy (named by its ``name``), e.g.
        ``workload_policy("wp", "2x2x2")``; returns the stored copy."""
        name = policy.get("name")
        if not isinstance(name, str):
            raise ApiError(400, "policy needs a string 'name'")
        return self._state.policies.put(PolicyRef(project, region, name), policy)

    def delete_resource_policy(self, project: str, region: str, name: str) -> None:
        """Remove a resource policy; ``ApiError`` 404 if it does not exist."""
        self._state.policies.delete(PolicyRef(project, region, name))

    def inject_fault(
        self,
        status: int | None = None,
        count: int = 1,
        latency_seconds: float = 0.0,
        path_prefix: str | None = None,
    ) -> None:
        """Fail (``status``) and/or delay (``latency_seconds``) the next ``count`` API requests.

        See ``internal.fakegke.faults`` for how several pending faults combine.
        """
        self._state.faults.add(make_fault(status, count, latency_seconds, path_prefix))

    def clear_faults(self) -> None:
        """Drop every pending fault."""
        self._state.faults.clear()

    def pending_faults(self) -> list[Fault]:
        """Copies of the faults that still apply to some request."""
        return self._state.faults.pending()
