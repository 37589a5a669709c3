"""A fault-injecting HTTP/1.1 reverse proxy, standard library only.

megamon must survive what Cloud Storage does in production: bursts of 503/429,
slow responses, and connections that die half-way through an upload.  The emulator
never does any of that, so tests put this proxy between the real
``google-cloud-storage`` client and the emulator and arm faults from the test:

    with FaultProxy(emulator.endpoint) as proxy:
        proxy.fail_next(3, status=503, method="POST")
        proxy.stall_next(1, seconds=2.0)
        proxy.reset_next_upload()

Requests that match no armed rule are forwarded untouched: bodies are streamed in
both directions (``Content-Length`` and chunked), client connections are kept
alive, and status codes and end-to-end headers (``x-goog-*``, ``Content-Range``,
``Location``...) pass through unchanged.  The one deliberate edit: absolute links to
the upstream (``Location`` of resumable sessions, ``mediaLink``/``selfLink`` in JSON
metadata) are rewritten to point at the proxy, otherwise a client would follow them
straight to the emulator and bypass the faults.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import re
import socket
import socketserver
import threading
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

from internal.faultproxy import httpio
from internal.faultproxy.rules import Action, RequestRecord, Rule, RuleBook, compile_pattern

_log = logging.getLogger(__name__)

_REWRITE_LIMIT = 8 * 1024 * 1024
_CHUNKED_RESET_DEFAULT = 32 * 1024
_UPLOAD_PATH = r"^/upload/"


class _Server(ThreadingHTTPServer):
    """Threaded server that remembers live sockets so ``stop`` can unblock every thread."""

    daemon_threads = True
    block_on_close = True

    def __init__(self, address: tuple[str, int], proxy: FaultProxy) -> None:
        self.proxy = proxy
        self.stopping = threading.Event()
        self.accepted = 0
        self._live: set[socket.socket] = set()
        self._live_lock = threading.Lock()
        self._closing = False
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn); skip it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def track(self, sock: socket.socket, *, client: bool = False) -> int:
        """Remember ``sock``; returns the number of client connections accepted so far."""
        with self._live_lock:
            self._live.add(sock)
            self.accepted += client
            if self._closing:  # accepted or connected while stop() was running
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            return self.accepted

    def untrack(self, sock: socket.socket) -> None:
        with self._live_lock:
            self._live.discard(sock)

    def shutdown_live(self) -> None:
        """Shut down every open client and upstream socket (wakes blocked reads)."""
        with self._live_lock:
            self._closing = True
            live = list(self._live)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """Handles one client connection: applies at most one rule per request."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        httpio.no_delay(self.connection)
        self.connection_number = self.server.track(self.connection, client=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: object) -> None:
        _log.debug("%s %s", self.address_string(), format % args)

    def _dispatch(self) -> None:
        try:
            length, chunked = httpio.request_framing(self.headers)
        except httpio.FramingError as exc:
            self._send_error(400, str(exc), close=True)
            return
        has_body = chunked or bool(length)
        rule = self.server.proxy.rules.take(
            self.command, self.path, has_body, self.connection_number
        )
        try:
            self._apply(rule, length, chunked)
        except (OSError, httpio.FramingError, http.client.HTTPException) as exc:
            _log.debug("%s %s aborted: %r", self.command, self.path, exc)
            self.close_connection = True

    # BaseHTTPRequestHandler looks handlers up by name: do_<METHOD>.
    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch  # noqa: N815

    def _apply(self, rule: Rule | None, length: int | None, chunked: bool) -> None:
        if rule is not None and rule.action is Action.FAIL:
            self._fail(rule, length, chunked)
            return
        if rule is not None and rule.action is Action.STALL and self._stall(rule.seconds):
            self._reset_client()  # interrupted by stop(): drop the request
            return
        self._forward(rule, length, chunked)

    def _stall(self, seconds: float) -> bool:
        """Wait ``seconds``; ``True`` if the proxy is stopping meanwhile."""
        return self.server.stopping.wait(seconds)

    @staticmethod
    def _reset_point(rule: Rule | None, length: int | None) -> int | None:
        """How many body bytes to forward before a reset (``None``: no reset)."""
        if rule is None or rule.action is not Action.RESET:
            return None
        if length is None:
            return rule.after_bytes if rule.after_bytes is not None else _CHUNKED_RESET_DEFAULT
        wanted = rule.after_bytes if rule.after_bytes is not None else length // 2
        return max(0, min(wanted, length - 1))

    def _fail(self, rule: Rule, length: int | None, chunked: bool) -> None:
        for _ in httpio.iter_body(self.rfile, length, chunked):
            pass  # drain the body so the connection stays usable
        body = httpio.google_error(rule.status, rule.message or None)
        self._send_head(rule.status, _json_headers(len(body)) + list(rule.headers))
        self._write_body(body)

    def _send_error(self, status: int, message: str, close: bool = False) -> None:
        self.close_connection = self.close_connection or close
        body = httpio.google_error(status, message)
        self._send_head(status, _json_headers(len(body)))
        self._write_body(body)

    def _write_body(self, body: bytes) -> None:
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_head(self, status: int, headers: list[tuple[str, str]], reason: str = "") -> None:
        self.send_response_only(status, reason or None)
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def _reset_client(self) -> None:
        self.close_connection = True
        httpio.abort(self.connection)
        self.rfile.close()  # drops the last reference, so the RST really goes out

    def _forward(self, rule: Rule | None, length: int | None, chunked: bool) -> None:
        upstream = self.server.proxy.open_upstream()
        try:
            upstream.connect()
        except OSError as exc:
            for _ in httpio.iter_body(self.rfile, length, chunked):
                pass
            self._send_error(502, f"faultproxy: upstream unreachable: {exc}")
            return
        assert upstream.sock is not None
        upstream_sock: socket.socket = upstream.sock
        httpio.no_delay(upstream_sock)
        self.server.track(upstream_sock)
        try:
            if not self._send_upstream(upstream, length, chunked, self._reset_point(rule, length)):
                httpio.abort(upstream_sock)
                self._reset_client()
                return
            response = upstream.getresponse()
            if rule is not None and rule.action is Action.DROP:
                response.read()  # the upstream completed the request; the client never knows
                self._reset_client()
                return
            self._relay(response)
        finally:
            self.server.untrack(upstream_sock)
            upstream.close()

    def _send_upstream(
        self,
        upstream: http.client.HTTPConnection,
        length: int | None,
        chunked: bool,
        reset_after: int | None,
    ) -> bool:
        """Send the request upstream; ``False`` if it was cut at ``reset_after`` bytes."""
        sock = self._send_upstream_head(upstream, chunked)
        body = httpio.iter_body(self.rfile, length, chunked)
        sent = 0
        for piece in body:
            if reset_after is not None and sent + len(piece) >= reset_after:
                head = piece[: reset_after - sent]
                httpio.send_unless_answered(sock, httpio.chunk(head) if chunked and head else head)
                return False
            if not httpio.send_unless_answered(sock, httpio.chunk(piece) if chunked else piece):
                for _ in body:
                    pass  # upstream answered early: drain the client, then relay the answer
                return True
            sent += len(piece)
        if reset_after is not None:
            return False  # chunked body shorter than the cut: withhold the last chunk
        if chunked:
            httpio.send_unless_answered(sock, httpio.chunk(b""))
        return True

    def _send_upstream_head(
        self, upstream: http.client.HTTPConnection, chunked: bool
    ) -> socket.socket:
        """Send request line and headers (Host rewritten, hop-by-hop dropped)."""
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        upstream.putheader("Host", self.server.proxy.upstream_netloc)
        for name, value in httpio.end_to_end(self.headers.items()):
            if name.lower() not in ("host", "expect"):
                upstream.putheader(name, value)
        if chunked:
            upstream.putheader("Transfer-Encoding", "chunked")
        upstream.endheaders()
        assert upstream.sock is not None
        sock: socket.socket = upstream.sock
        return sock

    def _relay(self, response: http.client.HTTPResponse) -> None:
        proxy = self.server.proxy
        headers = [(n, proxy.rewrite_location(n, v)) for n, v in response.getheaders()]
        headers = httpio.end_to_end(headers)
        if self.command == "HEAD" or response.status in (204, 304) or response.status < 200:
            self._send_head(response.status, headers, response.reason)
        elif self._rewritable(response):
            body = proxy.rewrite_body(response.read())
            headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
            self._send_head(response.status, headers, response.reason)
            self.wfile.write(body)
        elif response.length is not None:
            self._send_head(response.status, headers, response.reason)
            self._copy(response, chunked=False)
        else:
            self._relay_unsized(response, headers)

    def _relay_unsized(
        self, response: http.client.HTTPResponse, headers: list[tuple[str, str]]
    ) -> None:
        """Relay a body without Content-Length: re-chunk it, or close-delimit for HTTP/1.0."""
        chunked = self.request_version != "HTTP/1.0"
        if chunked:
            headers = [*headers, ("Transfer-Encoding", "chunked")]
        else:
            self.close_connection = True
        self._send_head(response.status, headers, response.reason)
        self._copy(response, chunked=chunked)

    def _copy(self, response: http.client.HTTPResponse, *, chunked: bool) -> None:
        while piece := response.read1(httpio.BUFSIZE):
            self.wfile.write(httpio.chunk(piece) if chunked else piece)
        if response.length:  # upstream closed before Content-Length bytes arrived
            raise http.client.IncompleteRead(b"", response.length)
        if chunked:
            self.wfile.write(httpio.chunk(b""))

    def _rewritable(self, response: http.client.HTTPResponse) -> bool:
        if not self.server.proxy.rewrite_links or response.getheader("Content-Encoding"):
            return False
        if not (response.getheader("Content-Type") or "").startswith("application/json"):
            return False
        if self.path.startswith("/download/") or "alt=media" in self.path:
            return False  # object data: never touch it
        return response.length is None or response.length <= _REWRITE_LIMIT


def _json_headers(length: int) -> list[tuple[str, str]]:
    return [("Content-Type", "application/json; charset=UTF-8"), ("Content-Length", str(length))]


class FaultProxy:
    """Reverse proxy from ``endpoint`` to ``upstream`` with armable faults.

    All methods are thread-safe.  Every rule takes optional ``method`` and ``path``
    filters (``path`` is a regular expression searched in the request target, query
    string included); rules fire in the order they were armed, one per request.
    """

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        upstream_timeout: float = 60.0,
        rewrite_links: bool = True,
    ) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != "http" or not parsed.hostname or parsed.port is None:
            raise ValueError(f"upstream must look like http://host:port, got {upstream!r}")
        self.upstream = f"http://{parsed.netloc}"
        self.upstream_netloc = parsed.netloc
        self._upstream_addr = (parsed.hostname, parsed.port)
        self.upstream_timeout = upstream_timeout
        self.rewrite_links = rewrite_links
        self.rules = RuleBook()
        self._address = (host, port)
        self._server: _Server | None = None
        self._last_server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._endpoint: str | None = None

    @property
    def endpoint(self) -> str:
        """Base URL clients should use, e.g. ``http://127.0.0.1:54321``."""
        if self._endpoint is None:
            raise RuntimeError("proxy is not running")
        return self._endpoint

    def start(self) -> Self:
        """Bind the listening socket and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError("proxy already started")
        self._server = _Server(self._address, self)
        self._endpoint = f"http://{self._server.server_name}:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"faultproxy-{self._server.server_port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, interrupt stalls, close every connection and join the threads."""
        server, self._server = self._server, None
        if server is None:
            return
        self._last_server = server
        server.stopping.set()
        server.shutdown()
        server.shutdown_live()
        server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._endpoint = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def fail_next(
        self,
        n: int = 1,
        status: int = 503,
        *,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        message: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Rule:
        """Answer the next ``n`` matching requests with ``status`` and a Google JSON error."""
        pattern = compile_pattern(path)
        extra = tuple((headers or {}).items())
        rule = Rule(Action.FAIL, n, method, pattern, status, message or "", extra)
        return self.rules.add(rule)

    def stall_next(
        self,
        n: int,
        seconds: float,
        *,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
    ) -> Rule:
        """Hold the next ``n`` matching requests ``seconds`` before forwarding them.

        The request is still forwarded after the stall even if the client gave up,
        like a slow network would.  :meth:`stop` interrupts a stall and drops it.
        """
        return self.rules.add(Rule(Action.STALL, n, method, compile_pattern(path), seconds=seconds))

    def drop_next_response(
        self,
        n: int = 1,
        *,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
    ) -> Rule:
        """Forward the next ``n`` matching requests, then reset the client instead of answering.

        The upstream fully processes the request (an upload is committed) but the
        client sees a dropped connection, so its retry meets the already-written state.
        """
        return self.rules.add(Rule(Action.DROP, n, method, compile_pattern(path)))

    def reset_next_upload(
        self,
        n: int = 1,
        *,
        after_bytes: int | None = None,
        method: str | None = None,
        path: str | re.Pattern[str] | None = _UPLOAD_PATH,
    ) -> Rule:
        """Cut the next ``n`` matching requests that carry a body, then reset both sides.

        The upstream receives the headers and ``after_bytes`` of the body (default:
        half of ``Content-Length``, never all of it), then both connections are closed
        with a TCP RST.  ``path`` defaults to the upload endpoints; pass ``None`` to
        match any request with a body.
        """
        pattern = compile_pattern(path)
        rule = Rule(Action.RESET, n, method, pattern, after_bytes=after_bytes, needs_body=True)
        return self.rules.add(rule)

    def clear_rules(self) -> None:
        """Disarm all rules (requests already being stalled keep stalling)."""
        self.rules.clear_rules()

    def reset(self) -> None:
        """Disarm all rules and forget the request log."""
        self.rules.reset()

    @property
    def records(self) -> list[RequestRecord]:
        """Every request seen so far, oldest first."""
        return self.rules.records()

    def count(
        self,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        action: Action | None = None,
    ) -> int:
        """Number of requests seen matching the filters."""
        return self.rules.count(method, path, action)

    def counts(self) -> Counter[tuple[str, str]]:
        """Requests seen, keyed by ``(METHOD, path without query)``."""
        return self.rules.counts()

    @property
    def connections_accepted(self) -> int:
        """Client connections accepted so far (shows whether clients keep connections alive)."""
        server = self._server or self._last_server
        return 0 if server is None else server.accepted

    def open_upstream(self) -> http.client.HTTPConnection:
        """A new (unconnected) connection to the upstream."""
        host, port = self._upstream_addr
        return http.client.HTTPConnection(host, port, timeout=self.upstream_timeout)

    def rewrite_location(self, name: str, value: str) -> str:
        """Point an upstream ``Location`` header at the proxy."""
        if self.rewrite_links and name.lower() == "location" and value.startswith(self.upstream):
            return self.endpoint + value[len(self.upstream) :]
        return value

    def rewrite_body(self, body: bytes) -> bytes:
        """Point upstream links inside a JSON body at the proxy."""
        return body.replace(self.upstream.encode(), self.endpoint.encode())
