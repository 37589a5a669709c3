"""The HTTP server lifecycle: bind, serve in a thread, and stop hard like a dying apiserver.

`ThreadingHTTPServer` alone cannot simulate an API server restart: `shutdown()` only stops the
accept loop, leaving keep-alive and watch connections (and their threads) alive. This server
tracks every accepted connection and its handler thread, so `stop()` resets them all, and a
new server can bind the same port at once (SO_REUSEADDR) with the state kept elsewhere.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class TrackingHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its open connections and handler threads."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: Any
    ) -> None:
        self.app = app
        self._open: dict[socket.socket, threading.Thread] = {}
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, conn: socket.socket) -> None:
        with self._open_lock:
            self._open[conn] = threading.current_thread()

    def untrack(self, conn: socket.socket) -> None:
        with self._open_lock:
            self._open.pop(conn, None)

    def reset_connections(self, join_timeout: float = 5.0) -> None:
        """Shut every open connection down and wait for its handler thread to finish."""
        with self._open_lock:
            open_now = list(self._open.items())
        for conn, _thread in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for _conn, thread in open_now:
            if thread is not threading.current_thread():
                thread.join(join_timeout)


class ServerRunner:
    """Runs one TrackingHTTPServer on a background thread."""

    def __init__(
        self, host: str, port: int, handler: type[BaseHTTPRequestHandler], app: Any
    ) -> None:
        self.httpd = TrackingHTTPServer((host, port), handler, app)
        self.port: int = self.httpd.server_address[1]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fakekube-{self.port}",
            daemon=True,
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, before_reset: Any = None) -> None:
        """Stop accepting, then reset open connections; `before_reset` runs in between."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if before_reset is not None:
            before_reset()
        self.httpd.reset_connections()
        self._thread.join(5.0)
