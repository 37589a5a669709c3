"""HTTP/1.1 framing helpers for :mod:`internal.faultproxy`.

The proxy streams bodies instead of buffering them (uploads can be large and a reset
must happen *mid*-body), so it has to understand request framing itself:
``Content-Length`` and ``Transfer-Encoding: chunked``.  These helpers also hold the
hop-by-hop header rules, Google's JSON error shape, and the socket trick that turns
a close into a TCP reset.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import struct
from collections.abc import Iterable, Iterator
from email.message import Message
from http import HTTPStatus
from typing import Protocol

BUFSIZE = 64 * 1024

# RFC 9110 section 7.6.1 connection-specific headers, plus the old Proxy-Connection.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)

_REASONS = {429: "rateLimitExceeded", 500: "internalError", 503: "backendError"}


class Reader(Protocol):
    """The part of a buffered binary stream the body readers need."""

    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


class FramingError(ValueError):
    """The client sent a body the proxy cannot delimit."""


def end_to_end(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop hop-by-hop headers (and any named in ``Connection``), keep the rest in order."""
    items = list(headers)
    named = {
        token.strip().lower()
        for name, value in items
        if name.lower() == "connection"
        for token in value.split(",")
    }
    return [(n, v) for n, v in items if n.lower() not in HOP_BY_HOP and n.lower() not in named]


def request_framing(headers: Message) -> tuple[int | None, bool]:
    """Return ``(content_length, chunked)`` for a request; ``(None, False)`` means no body."""
    encodings = ",".join(headers.get_all("Transfer-Encoding") or [])
    if encodings:
        if encodings.replace(" ", "").lower().split(",")[-1] != "chunked":
            raise FramingError(f"unsupported Transfer-Encoding {encodings!r}")
        return None, True
    lengths = set(headers.get_all("Content-Length") or [])
    if not lengths:
        return None, False
    if len(lengths) > 1 or not next(iter(lengths)).strip().isdigit():
        raise FramingError(f"bad Content-Length {sorted(lengths)!r}")
    return int(next(iter(lengths))), False


def iter_fixed(stream: Reader, length: int) -> Iterator[bytes]:
    """Yield exactly ``length`` bytes from ``stream`` in pieces."""
    left = length
    while left > 0:
        piece = stream.read(min(BUFSIZE, left))
        if not piece:
            raise ConnectionError(f"client closed the connection {left} bytes before the end")
        left -= len(piece)
        yield piece


def iter_chunked(stream: Reader) -> Iterator[bytes]:
    """Decode a chunked body from ``stream``, yielding data and consuming the trailers."""
    while True:
        line = stream.readline(1024)
        if not line.endswith(b"\n"):
            raise ConnectionError("client closed the connection inside a chunk header")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError as exc:
            raise FramingError(f"bad chunk size line {line!r}") from exc
        if size == 0:
            break
        yield from iter_fixed(stream, size)
        if stream.readline(1024).strip():
            raise FramingError("missing CRLF after chunk data")
    while stream.readline(8192).strip():
        pass  # trailer fields: consumed, not forwarded


def iter_body(stream: Reader, length: int | None, chunked: bool) -> Iterator[bytes]:
    """Yield the request body as framed by ``request_framing``."""
    if chunked:
        return iter_chunked(stream)
    return iter_fixed(stream, length or 0)


def send_unless_answered(sock: socket.socket, data: bytes) -> bool:
    """Send ``data`` to an upstream; ``False`` as soon as it answers (or closes) early.

    Servers may reply before reading a whole request body (a 404 for a missing bucket)
    and then stop reading; blindly pushing the rest would end in a reset that loses
    their answer.
    """
    view = memoryview(data)
    while view:
        readable, writable, _ = select.select([sock], [sock], [], sock.gettimeout())
        if readable:
            return False
        if not writable:
            raise TimeoutError("upstream stopped reading the request body")
        view = view[sock.send(view) :]
    return True


def chunk(data: bytes) -> bytes:
    """Encode ``data`` as one HTTP/1.1 chunk (``b""`` gives the last-chunk marker)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b"0\r\n\r\n"


def google_error(status: int, message: str | None = None) -> bytes:
    """A JSON error body in the shape Cloud Storage uses."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    text = message or f"{phrase} (injected by faultproxy)"
    reason = _REASONS.get(status, "injectedFault")
    body = {
        "error": {
            "code": status,
            "message": text,
            "errors": [{"message": text, "domain": "global", "reason": reason}],
        }
    }
    return json.dumps(body).encode()


def abort(sock: socket.socket | None) -> None:
    """Close ``sock`` with a TCP RST instead of an orderly FIN."""
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def no_delay(sock: socket.socket) -> None:
    """Disable Nagle's algorithm: headers and body go out as separate writes, and
    Nagle plus the peer's delayed ACK would add ~40 ms to every request."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
