"""Watching a resource type, in three small functions, each with one concern:

- ``run_forever``: reconnect forever, with exponential backoff, until stopped;
- ``list_then_watch``: list (paginated), then watch from the list's resourceVersion with
  bookmarks; a 410 Gone ends it so that the caller lists again;
- ``stream_events``: own one HTTP stream and turn its lines into events.

Objects are read as raw JSON with orjson (the client is called with
``_preload_content=False``), never as the client's model classes: a 65,000-node list would
otherwise cost gigabytes. A list reaches the ``Sink`` page by page, as it is read, so that
only one page of raw objects (~500 nodes) is ever held, and the cyclic garbage collector is
paused while a page is parsed and taken in: a page is ~150,000 acyclic containers, freed by
reference counting as soon as the next one is read, which the collector would otherwise
promote and re-scan over and over. What happens to the objects is the ``Sink``'s business.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException

from megamon.sources.kube.slim import ItemDecoder, decode_page

log = logging.getLogger(__name__)

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
NOT_FOUND = 404


class Expired(Exception):
    """The resourceVersion we watch from is too old: list again."""


class Sink(Protocol):
    """Where listed and watched objects go."""

    def replace(self, objects: Iterable[Any]) -> None:
        """Every object of a fresh list, arriving page by page while it is iterated; keep
        what is needed of each one as it comes, and take the new set only once iteration
        has finished (a list that fails half-way raises from the iteration)."""
        ...

    def apply(self, event_type: str, obj: Any) -> None:
        """One watched object, as the API server sent it: not necessarily a JSON object."""
        ...

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
    pause: Callable[[], AbstractContextManager[None]] = nullcontext
    """Entered while a page of a list is parsed and taken in: ``megamon run`` pauses the
    garbage collector there (``megamon/gcpolicy.py``); by default nothing is paused."""


def _read_body(response: Any) -> bytes:
    try:
        data: bytes = response.data
    finally:
        response.release_conn()
    return data


def _parse_list(data: bytes) -> Json:
    document = orjson.loads(data)
    if not isinstance(document, dict):
        raise ValueError("the API server answered a list with something other than an object")  # noqa: TRY004
    return document


class Listing:
    """Every object of a paginated list, read one page at a time as it is iterated.

    ``resource_version`` is the list's once it has been read to the end. Iterate it once.
    """

    def __init__(
        self, lister: RawLister, settings: WatchSettings, decode_item: ItemDecoder | None = None
    ) -> None:
        self._lister = lister
        self._settings = settings
        self._decode_item = decode_item
        """Decodes only the fields a projection keeps (``slim.py``); ``None``: every field."""
        self.resource_version = ""

    def _fetch(self, token: str | None) -> bytes:
        kwargs: dict[str, Any] = {"limit": self._settings.page_size}
        if token:
            kwargs["_continue"] = token
        response = self._lister(
            _preload_content=False,
            _request_timeout=(self._settings.connect_timeout, self._settings.inactivity_timeout),
            **kwargs,
        )
        return _read_body(response)

    def _parse(self, data: bytes) -> tuple[Any, Iterable[Any]]:
        """A page's metadata and items."""
        if self._decode_item is not None:
            return decode_page(data, self._decode_item)
        page = _parse_list(data)
        items = page.get("items") or []
        return page.get("metadata"), items if isinstance(items, list) else ()

    def __iter__(self) -> Iterator[Any]:
        token: str | None = None
        while True:
            data = self._fetch(token)
            with self._settings.pause():  # while the page is parsed and the sink takes it in
                found, items = self._parse(data)
                del data
                meta = found if isinstance(found, dict) else {}
                self.resource_version = str(meta.get("resourceVersion", ""))
                token = meta.get("continue") or None
                # Every item, objects or not: the sink skips and counts what is not one.
                yield from items
                del items, meta
            if token is None:
                return


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
    lister: RawLister,
    sink: Sink,
    settings: WatchSettings,
    stop: threading.Event,
    decode_item: ItemDecoder | None = None,
) -> None:
    """List, then watch until stopped; raises ``Expired`` when the watch must start over."""
    listing = Listing(lister, settings, decode_item)
    sink.replace(listing)
    version = listing.resource_version
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
            if not isinstance(event, dict):
                log.warning("watch event that is not an object skipped: %.100r", event)
                continue
            kind, obj = event.get("type"), event.get("object")
            if kind == EVENT_ERROR:
                status = obj if isinstance(obj, dict) else {}
                if status.get("code") == GONE:
                    raise Expired(str(status.get("message", "resourceVersion too old")))
                raise ApiException(status=status.get("code", 0), reason=str(status.get("message")))
            if isinstance(obj, dict):
                version = _resource_version(obj) or version
            if kind == EVENT_BOOKMARK:
                sink.touch()
            elif kind in (EVENT_ADDED, EVENT_MODIFIED, EVENT_DELETED):
                sink.apply(kind, obj)  # any object: the sink skips and counts a bad one
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
    name: str,
    lister: RawLister,
    sink: Sink,
    settings: WatchSettings,
    stop: threading.Event,
    *,
    decode_item: ItemDecoder | None = None,
) -> None:
    """Keep ``sink`` in sync with the API server until ``stop`` is set; ``decode_item``
    decodes each listed object (only what its projection reads, ``slim.py``)."""
    delay = settings.backoff_initial
    unserved = False
    while not stop.is_set():
        started = time.monotonic()
        try:
            list_then_watch(lister, sink, settings, stop, decode_item)
        except Expired as err:
            log.info("watch of %s expired (%s); listing again", name, err)
            stop.wait(settings.backoff_initial)
            continue
        except _RETRYABLE as err:
            if stop.is_set():
                return  # the stream was cut to stop us
            if _not_served(err):
                if not unserved:
                    log.warning(NOT_SERVED, name, _describe(err))
                unserved = True
            else:
                unserved = False
                log.warning(
                    "watch of %s failed: %s; retrying in %.1fs", name, _describe(err), delay
                )
        except Exception:  # the thread's boundary: a bug must not end the watch for good
            if stop.is_set():
                return
            log.exception("watch of %s failed unexpectedly; retrying in %.1fs", name, delay)
        if time.monotonic() - started > settings.backoff_max:
            delay = settings.backoff_initial  # it ran fine for a while: start backoff afresh
        stop.wait(delay * random.uniform(0.8, 1.2))
        delay = min(delay * 2, settings.backoff_max)


NOT_SERVED = "the cluster does not serve %s (%s): is its CRD installed? Retrying quietly"
"""Logged once per watch: a described kind's CRD may be installed after megamon starts."""


def _not_served(err: BaseException) -> bool:
    return isinstance(err, ApiException) and err.status == NOT_FOUND


def _describe(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"HTTP {err.status} {err.reason}".strip()
    return f"{type(err).__name__}: {err}"
