"""Watching a resource type, in three small functions, each with one concern:

- ``run_forever``: reconnect forever, with exponential backoff, until stopped;
- ``list_then_watch``: list (paginated), then watch from the list's resourceVersion with
  bookmarks; a 410 Gone ends it so that the caller lists again;
- ``stream_events``: own one HTTP stream and turn its lines into events.

Objects are read as raw JSON with orjson (the client is called with
``_preload_content=False``), never as the client's model classes: a 65,000-node list would
otherwise cost gigabytes. What happens to the events is the ``Sink``'s business.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("megamon.kube")

Json = dict[str, Any]
RawLister = Callable[..., Any]
"""A list function of the kubernetes client bound to one resource type; called with
``_preload_content=False`` it returns the raw ``urllib3.HTTPResponse``."""

EVENT_ADDED = "ADDED"
EVENT_MODIFIED = "MODIFIED"
EVENT_DELETED = "DELETED"
EVENT_BOOKMARK = "BOOKMARK"
EVENT_ERROR = "ERROR"
GONE = 410


class Expired(Exception):
    """The resourceVersion we watch from is too old: list again."""


class Sink(Protocol):
    """Where listed and watched objects go."""

    def replace(self, objects: list[Json], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: Json) -> None: ...

    def touch(self) -> None:
        """The API server answered (a bookmark, an empty page): the data is fresh."""
        ...

    def streaming(self, response: Any | None) -> None:
        """The watch stream now open (``None``: closed), so that stopping can cut it."""
        ...


@dataclass(frozen=True)
class WatchSettings:
    page_size: int = 500
    watch_seconds: int = 300
    """Server-side timeout of one watch request; the watch is then simply renewed."""
    connect_timeout: float = 10.0
    inactivity_timeout: float = 90.0
    """No byte for this long on a watch stream (not even a bookmark) means it is dead."""
    backoff_initial: float = 0.5
    backoff_max: float = 30.0


def _read_json(response: Any) -> Json:
    try:
        data = response.data
    finally:
        response.release_conn()
    document = orjson.loads(data)
    if not isinstance(document, dict):
        raise ValueError("the API server answered a list with something other than an object")  # noqa: TRY004
    return document


def list_all(lister: RawLister, settings: WatchSettings) -> tuple[list[Json], str]:
    """Every object, page by page, and the resourceVersion of the list."""
    objects: list[Json] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": settings.page_size}
        if token:
            kwargs["_continue"] = token
        response = lister(
            _preload_content=False,
            _request_timeout=(settings.connect_timeout, settings.inactivity_timeout),
            **kwargs,
        )
        page = _read_json(response)
        items = page.get("items") or []
        objects.extend(item for item in items if isinstance(item, dict))
        meta = page.get("metadata") or {}
        token = meta.get("continue") or None
        if token is None:
            return objects, str(meta.get("resourceVersion", ""))


def stream_events(response: Any) -> Iterator[Json]:
    """The watch events of one HTTP stream, one JSON object per line."""
    buffer = b""
    try:
        for chunk in response.stream(64 * 1024, decode_content=True):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    yield orjson.loads(line)
        if buffer.strip():
            yield orjson.loads(buffer)
    finally:
        response.release_conn()


def _resource_version(obj: Json) -> str | None:
    meta = obj.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return str(version) if version else None


def list_then_watch(
    lister: RawLister, sink: Sink, settings: WatchSettings, stop: threading.Event
) -> None:
    """List, then watch until stopped; raises ``Expired`` when the watch must start over."""
    objects, version = list_all(lister, settings)
    sink.replace(objects, version)
    while not stop.is_set():
        response = lister(
            _preload_content=False,
            _request_timeout=(settings.connect_timeout, settings.inactivity_timeout),
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=version,
            timeout_seconds=settings.watch_seconds,
        )
        sink.touch()
        sink.streaming(response)
        for event in stream_events(response):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == EVENT_ERROR:
                if obj.get("code") == GONE:
                    raise Expired(str(obj.get("message", "resourceVersion too old")))
                raise ApiException(status=obj.get("code", 0), reason=str(obj.get("message")))
            version = _resource_version(obj) or version
            if kind == EVENT_BOOKMARK:
                sink.touch()
            elif kind in (EVENT_ADDED, EVENT_MODIFIED, EVENT_DELETED):
                sink.apply(kind, obj)
            if stop.is_set():
                return
        sink.streaming(None)


_RETRYABLE = (
    ApiException,
    urllib3.exceptions.HTTPError,
    OSError,
    ValueError,  # a garbled response body
)


def run_forever(
    name: str, lister: RawLister, sink: Sink, settings: WatchSettings, stop: threading.Event
) -> None:
    """Keep ``sink`` in sync with the API server until ``stop`` is set."""
    delay = settings.backoff_initial
    while not stop.is_set():
        started = time.monotonic()
        try:
            list_then_watch(lister, sink, settings, stop)
        except Expired as err:
            log.info("watch of %s expired (%s); listing again", name, err)
            stop.wait(settings.backoff_initial)
            continue
        except _RETRYABLE as err:
            if stop.is_set():
                return  # the stream was cut to stop us
            log.warning("watch of %s failed: %s; retrying in %.1fs", name, _describe(err), delay)
        if time.monotonic() - started > settings.backoff_max:
            delay = settings.backoff_initial  # it ran fine for a while: start backoff afresh
        stop.wait(delay * random.uniform(0.8, 1.2))
        delay = min(delay * 2, settings.backoff_max)


def _describe(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"HTTP {err.status} {err.reason}".strip()
    return f"{type(err).__name__}: {err}"
