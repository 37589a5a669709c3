"""The HTTP side: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz`` for the kubelet.

The standard library's ``HTTPServer`` is enough for a handful of scrapers and probes, and
keeps the service free of a web framework. Each server has one daemon thread that accepts
connections and reads their request heads (the TLS handshake too) without blocking, for all of
them at once: a client that sends half a request and holds costs a socket and a buffer, never
a worker. It has ``head_timeout`` to finish its head, and when ``pending`` clients are still
sending, a new one closes the one that has waited longest, so slow clients can never hold every
place either. Only a complete request goes to a bounded pool (``Limits``): at most ``workers``
at once and ``backlog`` more waiting; a request beyond that is closed at once. Every
connection also has a deadline (from accept to the last byte of the answer), so a client that
reads the answer slowly is cut off when it passes. ``stop()`` shuts the server down, cuts
what is still in flight, and joins every thread, so tests and restarts get their port back at
once.

Addresses are written as in the Go megamon's configuration (``MetricsAddr``, ``ProbeAddr``):
``host:port``, ``:port`` for every interface, ``[v6]:port`` for IPv6, port 0 for an
ephemeral port. ``/metrics`` answers 200 from the start: before the first report it carries
megamon's own series only (``megamon_leader``, ``megamon_build_info``, the self instruments) and
no fleet series, so an empty fleet is never mistaken for a healthy one, while the alert on a
missing ``megamon_last_report_timestamp_seconds`` can see that megamon runs (docs/metrics.md).

With ``SecureMetrics`` the metrics server is given an ``ssl.SSLContext`` (``tls.py``) and a
``Guard`` (``auth.py``): it then speaks only TLS, and serves ``/metrics`` only to a bearer
token the Kubernetes API accepts and authorises — 401 without one or with a bad one, 403 when
its user may not ``get /metrics``, 503 when the API cannot say. The TLS handshake runs in the
intake thread without blocking, so a slow or hostile client cannot stall it. Probes stay plain
HTTP: the kubelet probes without credentials.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import ipaddress
import logging
import selectors
import socket
import socketserver
import ssl
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import gzip_accepted

from megamon.publishing.metrics.exposition import choose_encoder
from megamon.serving.auth import Guard, Outcome, bearer_token

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"
HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of the process one server's clients may hold."""

    workers: int = 8
    """Connections served at once."""
    backlog: int = 16
    """Connections accepted and waiting for a worker; more are closed at once."""
    deadline: float = 20.0
    """Seconds a connection may take from accept to the last byte of the answer (TLS
    handshake included): more than Prometheus's 10 s scrape timeout, less than any client
    should need to hold a worker."""
    head_timeout: float = 5.0
    """Seconds a client may take to complete its TLS handshake and request head (at most
    ``deadline``): Prometheus and the kubelet send theirs at once."""
    pending: int = 128
    """Connections still sending their request head; one more closes the oldest of them."""


METRICS_LIMITS = Limits()
PROBE_LIMITS = Limits(workers=2, backlog=8, deadline=5.0, head_timeout=2.0, pending=64)
"""The kubelet probes one at a time, with a timeout of seconds."""
MAX_HEAD_BYTES = 64 * 1024
"""A request head longer than this is not from a scraper or a probe: closed."""
_ACCEPTS_PER_WAKE = 64
_READ_CHUNK = 16 * 1024
_POLL_SECONDS = 0.1
"""How often the serving loop checks for ``stop()``: the longest ``stop()`` waits for it."""
_GZIP_LEVEL = 1
"""At 65,000 nodes level 6 costs more than the render itself (0.22 s for 38 MB); level 1 takes
0.10 s for a body a tenth the size."""
_TEXT = "text/plain; charset=utf-8"
Check = Callable[[], bool]
"""A probe: true when healthy/ready. One that raises counts as failed."""


@dataclass(frozen=True, slots=True)
class ListenAddress:
    """A parsed Go-style listen address; ``host`` "" means every interface."""

    host: str
    port: int

    @property
    def family(self) -> socket.AddressFamily:
        if self.host == "":
            return socket.AF_INET6 if socket.has_dualstack_ipv6() else socket.AF_INET
        return socket.AF_INET6 if ":" in self.host else socket.AF_INET

    @property
    def bind_host(self) -> str:
        if self.host == "":
            return "::" if self.family == socket.AF_INET6 else "0.0.0.0"
        return self.host


def parse_addr(addr: str) -> ListenAddress:
    """``":8080"``, ``"127.0.0.1:0"``, ``"[::1]:9090"``, ``"localhost:8081"`` → host and port.

    Raises ``ValueError`` naming the address and what is wrong with it.
    """
    host, sep, port_text = addr.rpartition(":")
    if not sep:
        raise ValueError(f"listen address {addr!r}: missing port (write host:port or :port)")
    if host.startswith("[") or host.endswith("]"):
        if not (host.startswith("[") and host.endswith("]")):
            raise ValueError(f"listen address {addr!r}: unbalanced brackets")
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"listen address {addr!r}: {host!r} is not an IPv6 address") from None
    elif ":" in host:
        raise ValueError(f"listen address {addr!r}: an IPv6 host must be in brackets, [::1]:port")
    if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        raise ValueError(f"listen address {addr!r}: port must be a number from 0 to 65535")
    if any(c.isspace() or c in "/[]@" for c in host):
        raise ValueError(f"listen address {addr!r}: {host!r} is not a host name or address")
    return ListenAddress(host, int(port_text))


def _cut(sock: socket.socket) -> None:
    """Wake whatever blocks on ``sock`` (reading, writing, a TLS handshake) with an error.

    The plain socket's ``shutdown``, also for a TLS socket: it acts on the file descriptor
    only, without touching the TLS state another thread is using."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Deadlines:
    """Cuts connections that outlive their deadline; one thread for all of them."""

    def __init__(self, poll: float = _POLL_SECONDS) -> None:
        self._due: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poll = poll
        self._thread = threading.Thread(target=self._run, name="http-deadlines", daemon=True)
        self._thread.start()

    def watch(self, sock: socket.socket, due: float) -> None:
        with self._lock:
            self._due[sock] = due

    def forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._due.pop(sock, None)

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            now = time.monotonic()
            with self._lock:
                late = [sock for sock, due in self._due.items() if due <= now]
                for sock in late:
                    del self._due[sock]
            for sock in late:
                log.debug("http: a client passed its deadline; connection cut")
                _cut(sock)

    def close(self) -> None:
        """Cut every connection still watched and stop the thread."""
        self._stop.set()
        self._thread.join()
        with self._lock:
            socks, self._due = list(self._due), {}
        for sock in socks:
            _cut(sock)


@dataclass(eq=False)
class _Incoming:
    """A connection still handshaking or sending its request head."""

    sock: socket.socket
    address: Any
    head_due: float
    """When it is closed unless its head is complete."""
    deadline: float
    """When it is cut, answered or not (``Limits.deadline`` after accept)."""
    handshaken: bool
    head: bytearray


def _head_complete(head: bytearray) -> bool:
    return b"\r\n\r\n" in head or b"\n\n" in head


class _Server(HTTPServer):
    """An HTTP(S) server on a parsed address: one intake thread reads request heads without
    blocking, a bounded pool serves complete requests."""

    request_queue_size = 128
    """The listen backlog: a burst of connections waits in the kernel, not refused."""

    def __init__(
        self,
        address: ListenAddress,
        handler: type[BaseHTTPRequestHandler],
        tls: ssl.SSLContext | None = None,
        limits: Limits = METRICS_LIMITS,
    ) -> None:
        self.address_family = address.family
        self._dual_stack = address.host == "" and address.family == socket.AF_INET6
        self._tls = tls
        self._limits = limits
        self._slots = threading.BoundedSemaphore(limits.workers + limits.backlog)
        self._pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="http")
        self._deadlines = _Deadlines()
        self._incoming: dict[socket.socket, _Incoming] = {}
        """In accept order: the first is the one that has waited longest."""
        self._heads: dict[socket.socket, bytes] = {}
        self._heads_lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self.dropped = 0
        """Connections closed unserved: every worker and backlog slot taken, or the oldest
        of too many clients still sending their request."""
        super().__init__((address.bind_host, address.port), handler)

    # the intake thread ---------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = _POLL_SECONDS) -> None:
        """Accept and read request heads until ``shutdown``."""
        try:
            with selectors.DefaultSelector() as selector:
                self.socket.setblocking(False)
                selector.register(self.socket, selectors.EVENT_READ)
                while not self._stopping.is_set():
                    for key, _events in selector.select(self._wait(poll_interval)):
                        if key.fileobj is self.socket:
                            self._accept(selector)
                        else:
                            self._advance(selector, key.data)
                    self._expire(selector)
                for incoming in list(self._incoming.values()):
                    self._close(selector, incoming)
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop ``serve_forever`` (running in another thread) and wait for it."""
        self._stopping.set()
        self._stopped.wait()

    def _wait(self, poll: float) -> float:
        if not self._incoming:
            return poll
        first = next(iter(self._incoming.values()))
        return max(0.0, min(poll, first.head_due - time.monotonic()))

    def _accept(self, selector: selectors.BaseSelector) -> None:
        for _ in range(_ACCEPTS_PER_WAKE):
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:  # out of file descriptors, a connection reset at once
                log.debug("http: accept failed: %r", err)
                return
            self._admit(selector, sock, address)

    def _admit(self, selector: selectors.BaseSelector, sock: socket.socket, address: Any) -> None:
        if len(self._incoming) >= self._limits.pending:
            oldest = next(iter(self._incoming.values()))
            log.debug("http: too many clients still sending; %s closed", oldest.address)
            self._close(selector, oldest)
            self.dropped += 1
        if self._tls is not None:
            try:
                sock = self._tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            except OSError:
                sock.close()
                return
        sock.setblocking(False)
        now = time.monotonic()
        incoming = _Incoming(
            sock,
            address,
            head_due=now + min(self._limits.head_timeout, self._limits.deadline),
            deadline=now + self._limits.deadline,
            handshaken=self._tls is None,
            head=bytearray(),
        )
        self._incoming[sock] = incoming
        selector.register(sock, selectors.EVENT_READ, incoming)

    def _advance(self, selector: selectors.BaseSelector, incoming: _Incoming) -> None:
        """Go on with the handshake or the head as far as the client's bytes allow."""
        sock = incoming.sock
        try:
            if not incoming.handshaken:
                cast(ssl.SSLSocket, sock).do_handshake()
                incoming.handshaken = True
                selector.modify(sock, selectors.EVENT_READ, incoming)
            while True:
                chunk = sock.recv(_READ_CHUNK)
                if not chunk:
                    self._close(selector, incoming)
                    return
                incoming.head += chunk
                if _head_complete(incoming.head):
                    self._dispatch(selector, incoming)
                    return
                if len(incoming.head) > MAX_HEAD_BYTES:
                    log.debug("http: request head from %s too long", incoming.address)
                    self._close(selector, incoming)
                    return
        except ssl.SSLWantReadError:
            selector.modify(sock, selectors.EVENT_READ, incoming)
        except ssl.SSLWantWriteError:
            selector.modify(sock, selectors.EVENT_WRITE, incoming)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as err:
            # A client that distrusts the certificate, speaks plain HTTP, hangs up: routine.
            log.debug("http: connection from %s failed: %r", incoming.address, err)
            self._close(selector, incoming)

    def _expire(self, selector: selectors.BaseSelector) -> None:
        now = time.monotonic()
        for incoming in list(self._incoming.values()):
            if incoming.head_due > now:
                break  # in accept order, so every later one is due later
            log.debug("http: %s did not send its request in time; closed", incoming.address)
            self._close(selector, incoming)

    def _close(self, selector: selectors.BaseSelector, incoming: _Incoming) -> None:
        self._incoming.pop(incoming.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(incoming.sock)
        incoming.sock.close()

    def _dispatch(self, selector: selectors.BaseSelector, incoming: _Incoming) -> None:
        """Hand a complete request to the pool, or close it if every slot is taken."""
        self._incoming.pop(incoming.sock, None)
        selector.unregister(incoming.sock)
        if not self._slots.acquire(blocking=False):
            self.dropped += 1
            log.debug("http: every worker busy; connection from %s closed", incoming.address)
            incoming.sock.close()
            return
        incoming.sock.setblocking(True)
        with self._heads_lock:
            self._heads[incoming.sock] = bytes(incoming.head)
        self._deadlines.watch(incoming.sock, incoming.deadline)
        self._pool.submit(self._serve, incoming.sock, incoming.address)

    # the workers --------------------------------------------------------------------------

    def take_head(self, sock: socket.socket) -> bytes:
        """The request head the intake read from ``sock`` (once)."""
        with self._heads_lock:
            return self._heads.pop(sock, b"")

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._deadlines.forget(request)
            self.take_head(request)
            self.shutdown_request(request)
            self._slots.release()

    def server_close(self) -> None:
        super().server_close()
        self._deadlines.close()  # cuts what is in flight, so the pool drains at once
        self._pool.shutdown(wait=True)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(self._limits.deadline)
        super().finish_request(request, client_address)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would resolve the host's FQDN, a DNS round trip per start.
        if self._dual_stack:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver would print the traceback to stderr; a scraper hanging up is routine.
        err = sys.exception()
        if isinstance(err, ConnectionError | TimeoutError):
            log.debug("http: client %s went away: %r", client_address, err)
        else:
            log.warning("http: request from %s failed", client_address, exc_info=err)


class _Handler(BaseHTTPRequestHandler):
    """Routes GET and HEAD by exact path to ``routes``; everything else is 404."""

    routes: dict[str, _Route] = {}
    server_version = "megamon"

    def setup(self) -> None:
        super().setup()
        # The intake has read the request head already (HTTP/1.0: one request, no body).
        self.rfile = io.BytesIO(cast(_Server, self.server).take_head(self.request))

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        route = self.routes.get(urlsplit(self.path).path)
        if route is None:
            status, headers, body = _plain(HTTPStatus.NOT_FOUND, "not found")
        else:
            try:
                status, headers, body = route(self)
            except Exception:
                log.exception("http: %s %s failed", self.command, self.path)
                status, headers, body = _plain(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: %s %s", self.address_string(), format % args)


_Answer = tuple[int, dict[str, str], bytes]
"""Status, headers and body of a response."""
_Route = Callable[[_Handler], _Answer]


def _plain(status: int, text: str) -> _Answer:
    return status, {"Content-Type": _TEXT}, (text + "\n").encode()


def _failure(name: str, check: Check, reason: str) -> str | None:
    """``None`` if ``check()`` passes, else why not; a check that raises has failed."""
    try:
        return None if check() else reason
    except Exception as err:
        log.warning("http: %s check raised %r", name, err)
        return f"{reason}: the {name} check raised {type(err).__name__}"


class _Background:
    """One server in one daemon thread: ``start``, ``stop``, ``port``, ``url``, ``with``."""

    def __init__(
        self,
        addr: str,
        routes: dict[str, _Route],
        tls: ssl.SSLContext | None = None,
        limits: Limits = METRICS_LIMITS,
    ) -> None:
        self._address = parse_addr(addr)
        self._handler: type[_Handler] = type("Handler", (_Handler,), {"routes": routes})
        self._tls = tls
        self._limits = limits
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and serve in a daemon thread; ``OSError`` if the address cannot be bound."""
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        self._server = _Server(self._address, self._handler, self._tls, self._limits)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(_POLL_SECONDS,),
            name=f"{type(self).__name__}:{self.port}",
            daemon=True,
        )
        self._thread.start()
        log.info("http: %s listening on %s", type(self).__name__, self.url)

    def stop(self) -> None:
        """Stop serving, close the socket and join the threads; a no-op if not running."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()

    @property
    def port(self) -> int:
        """The bound port (the ephemeral one when the address said 0)."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._server.server_port

    @property
    def dropped(self) -> int:
        """Connections closed unserved because every worker and backlog slot was taken."""
        return self._server.dropped if self._server is not None else 0

    @property
    def url(self) -> str:
        """``http(s)://host:port`` to reach the server; the loopback address for a wildcard."""
        host = self._address.host
        if host == "":
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        scheme = "http" if self._tls is None else "https"
        return f"{scheme}://{host}:{self.port}"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class MetricsServer(_Background):
    """``/metrics``: the exposition of ``registry``, from the start.

    No readiness gate: a 503 before the first report would hide ``megamon_leader`` too, and
    then nothing could tell "megamon runs but never reported" from "megamon is not there"
    (``MegamonNoReport`` in deploy/alerts). The collector leaves the fleet series out until
    a report exists.

    The format follows the scraper's ``Accept`` header (Prometheus text or OpenMetrics) and is
    gzipped when the scraper accepts it, as Prometheus does: a large fleet's page shrinks
    about thirtyfold.

    ``tls`` serves HTTPS instead of HTTP; ``guard`` then decides each request from its
    ``Authorization`` header before anything else, readiness included, so an anonymous caller
    learns nothing. A guard without TLS is refused: bearer tokens must not travel in clear.
    """

    def __init__(
        self,
        addr: str,
        registry: CollectorRegistry,
        *,
        tls: ssl.SSLContext | None = None,
        guard: Guard | None = None,
        limits: Limits = METRICS_LIMITS,
    ) -> None:
        if guard is not None and tls is None:
            raise ValueError("a metrics guard needs TLS: bearer tokens must not travel in clear")
        self._registry = registry
        self._guard = guard
        super().__init__(addr, {METRICS_PATH: self._metrics}, tls, limits)

    def _metrics(self, request: _Handler) -> _Answer:
        if self._guard is not None:
            refusal = _refusal(
                self._guard, request.headers.get("Authorization"), request.client_address[0]
            )
            if refusal is not None:
                return refusal
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        body = encoder(self._registry)
        headers = {"Content-Type": content_type}
        if gzip_accepted(request.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body, compresslevel=_GZIP_LEVEL)
            headers["Content-Encoding"] = "gzip"
        return HTTPStatus.OK, headers, body


_WWW_AUTHENTICATE = {
    "no token": 'Bearer realm="megamon"',
    "bad token": 'Bearer realm="megamon", error="invalid_token"',
}
"""RFC 6750 §3: a 401 names the scheme; ``invalid_token`` only when a bearer token was sent."""


def _refusal(guard: Guard, authorization: str | None, client: str) -> _Answer | None:
    """None when ``guard`` allows the request, else the 401, 403 or 503 to answer with."""
    verdict = guard.check(authorization, client)
    if verdict.outcome is Outcome.ALLOWED:
        return None
    if verdict.outcome is Outcome.UNAUTHENTICATED:
        status, headers, body = _plain(HTTPStatus.UNAUTHORIZED, f"unauthorized: {verdict.reason}")
        which = "no token" if bearer_token(authorization) is None else "bad token"
        headers["WWW-Authenticate"] = _WWW_AUTHENTICATE[which]
        return status, headers, body
    if verdict.outcome is Outcome.FORBIDDEN:
        return _plain(HTTPStatus.FORBIDDEN, f"forbidden: {verdict.reason}")
    status, headers, body = _plain(HTTPStatus.SERVICE_UNAVAILABLE, f"unavailable: {verdict.reason}")
    headers["Retry-After"] = "5"
    return status, headers, body


class ProbeServer(_Background):
    """``/healthz`` (liveness) and ``/readyz`` (readiness): 200 "ok", or 503 and the reason."""

    def __init__(
        self, addr: str, healthy: Check, ready: Check, *, limits: Limits = PROBE_LIMITS
    ) -> None:
        super().__init__(
            addr,
            {
                HEALTHZ_PATH: lambda _request: self._probe("healthy", healthy),
                READYZ_PATH: lambda _request: self._probe("ready", ready),
            },
            limits=limits,
        )

    @staticmethod
    def _probe(name: str, check: Check) -> _Answer:
        failure = _failure(name, check, f"not {name}")
        if failure is None:
            return _plain(HTTPStatus.OK, "ok")
        return _plain(HTTPStatus.SERVICE_UNAVAILABLE, failure)
