"""Who may scrape ``/metrics`` when ``SecureMetrics`` is on: the Kubernetes API decides.

megamon keeps no credentials of its own. Like controller-runtime's
``WithAuthenticationAndAuthorization`` filter (Go operators' secure metrics) and
kube-rbac-proxy, it asks the API server about each scraper's bearer token: a TokenReview
says whose token it is, then a SubjectAccessReview says whether that user may ``get`` the
non-resource URL ``/metrics``, which the usual Prometheus ClusterRole grants
(``nonResourceURLs: ["/metrics"], verbs: ["get"]``). megamon's service account needs
``create`` on ``tokenreviews`` and ``subjectaccessreviews``, which is exactly what
``deploy/components/secure-metrics`` grants.

Asking on every scrape would add two API calls to each one, so answers are cached by the
SHA-256 of the token — the token itself is never kept, logged or shown — for a short while:
an allowed token for ``allowed_ttl`` (30 s), a refused one for ``denied_ttl`` (5 s, so a
freshly granted role works almost at once). A revoked token or role therefore keeps working
for at most ``allowed_ttl``. When the API cannot answer, the scrape gets 503, not 500 and
never a guess, and the failure is not cached, so the next scrape asks again.

The cache alone does not protect the API server from a caller who sprays distinct tokens
(each one a miss): reviews of new tokens are therefore rate-limited by token buckets, one per
client address (``client_rate`` per second, bursts of ``client_burst``) inside one for the
whole server (``review_rate``, ``review_burst``); a scrape that would exceed either gets 503
with ``Retry-After`` without asking. A sprayer thus spends its own budget, and leaves most of
the server's to other clients. Concurrent scrapes with the same token share one review.

A token the API allowed is remembered as known good (its digest, the ``known_good`` most
recently allowed): when its cached verdict lapses, it is reviewed again at once, outside the
buckets, so a flood of bogus tokens can never lock the authorised scraper out. That costs the
API at most one review per known-good token per ``allowed_ttl``; a renewal that is refused
forgets the token.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

ALLOWED_TTL_SECONDS = 30.0
DENIED_TTL_SECONDS = 5.0
MAX_CACHED_TOKENS = 1024
"""Enough for every scraper of a fleet; bounds memory if someone sprays random tokens."""
REVIEW_RATE_PER_SECOND = 5.0
REVIEW_BURST = 20
"""New tokens reviewed at most 5 a second after a burst of 20: ample for every scraper of a
fleet, and two API calls each, never thousands."""
CLIENT_REVIEW_RATE_PER_SECOND = 1.0
CLIENT_REVIEW_BURST = 10
"""One client address gets at most half the burst, then one new token a second."""
MAX_CLIENTS = 1024
"""Client addresses whose budget is tracked; the least recent is forgotten (a full budget)."""
MAX_KNOWN_GOOD = 64
"""Allowed tokens renewed outside the rate limit: every scraper of a fleet, twice over."""
REVIEW_TIMEOUT_SECONDS = 5.0
"""Per review request: two of them fit in Prometheus's default 10 s scrape timeout."""
_MAX_TOKEN_LENGTH = 16 * 1024
"""Service-account JWTs are about 1 KiB; anything far longer is refused without asking."""
_MAX_DETAIL = 200
"""A logged failure stays one short line."""


class Outcome(enum.IntEnum):
    """The answer to a scrape, valued as the HTTP status it is served with."""

    ALLOWED = 200
    UNAUTHENTICATED = 401
    FORBIDDEN = 403
    UNAVAILABLE = 503


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether to serve, and why not in words safe to show the caller (never the token)."""

    outcome: Outcome
    reason: str = ""
    user: str = ""

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.ALLOWED


class Guard(Protocol):
    """Decides a request from its ``Authorization`` header (``None`` when absent) and the
    address of the client that sent it."""

    def check(self, authorization: str | None, client: str = "") -> Verdict: ...


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (scheme case-insensitive), else None.

    A token with spaces or control characters cannot be a Kubernetes token and is treated as
    no token, so garbage never reaches the API server.
    """
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > _MAX_TOKEN_LENGTH:
        return None
    if not token.isascii() or not token.isprintable() or " " in token:
        return None
    return token


class _Cache:
    """Verdicts by token digest, each until its own expiry; least recently used goes first."""

    def __init__(self, max_entries: int, clock: Callable[[], float]) -> None:
        self._entries: OrderedDict[bytes, tuple[float, Verdict]] = OrderedDict()
        self._max = max_entries
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: bytes) -> Verdict | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, verdict = entry
            if self._clock() >= expires:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return verdict

    def put(self, key: bytes, verdict: Verdict, ttl: float) -> None:
        if ttl <= 0 or self._max <= 0:
            return
        with self._lock:
            self._entries[key] = (self._clock() + ttl, verdict)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


class _Bucket:
    """A token bucket: ``take`` succeeds at most ``rate`` times a second after ``burst``."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._last = clock()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
            self._last = now
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True


class _Budgets:
    """One ``_Bucket`` per client address, the least recently seen forgotten past ``size``."""

    def __init__(self, rate: float, burst: int, size: int, clock: Callable[[], float]) -> None:
        self._rate, self._burst, self._size, self._clock = rate, burst, size, clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, client: str) -> bool:
        with self._lock:
            bucket = self._buckets.get(client)
            if bucket is None:
                bucket = self._buckets[client] = _Bucket(self._rate, self._burst, self._clock)
            self._buckets.move_to_end(client)
            while len(self._buckets) > self._size:
                self._buckets.popitem(last=False)
        return bucket.take()


class _Recent:
    """A bounded set of token digests, the least recently added forgotten first."""

    def __init__(self, size: int) -> None:
        self._entries: OrderedDict[bytes, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def __contains__(self, key: bytes) -> bool:
        with self._lock:
            return key in self._entries

    def add(self, key: bytes) -> None:
        with self._lock:
            self._entries[key] = None
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def discard(self, key: bytes) -> None:
        with self._lock:
            self._entries.pop(key, None)


class _Unavailable(Exception):
    """The API did not answer a review; the message is one line, free of the token."""


class KubeGuard:
    """Delegates authentication and authorization of scrapers to the Kubernetes API.

    ``api_client`` is a ``kubernetes.client.ApiClient`` (megamon's own, shared with the
    watches: its connection pool is thread-safe). ``path`` and ``verb`` are the non-resource
    URL and verb the SubjectAccessReview asks about; ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        path: str = "/metrics",
        verb: str = "get",
        allowed_ttl: float = ALLOWED_TTL_SECONDS,
        denied_ttl: float = DENIED_TTL_SECONDS,
        max_entries: int = MAX_CACHED_TOKENS,
        timeout: float = REVIEW_TIMEOUT_SECONDS,
        review_rate: float = REVIEW_RATE_PER_SECOND,
        review_burst: int = REVIEW_BURST,
        client_rate: float = CLIENT_REVIEW_RATE_PER_SECOND,
        client_burst: int = CLIENT_REVIEW_BURST,
        known_good: int = MAX_KNOWN_GOOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._authn = k8s.AuthenticationV1Api(api_client)
        self._authz = k8s.AuthorizationV1Api(api_client)
        self._path = path
        self._verb = verb
        self._allowed_ttl = allowed_ttl
        self._denied_ttl = denied_ttl
        self._timeout = timeout
        self._cache = _Cache(max_entries, clock)
        self._bucket = _Bucket(review_rate, review_burst, clock)
        self._clients = _Budgets(client_rate, client_burst, MAX_CLIENTS, clock)
        self._known_good = _Recent(known_good)
        self._pending: dict[bytes, threading.Lock] = {}
        self._pending_lock = threading.Lock()
        self.reviews = 0
        """TokenReviews sent so far (for tests and debugging)."""

    def check(self, authorization: str | None, client: str = "") -> Verdict:
        """The verdict for this ``Authorization`` header from ``client`` (its address), from
        the cache or the API."""
        token = bearer_token(authorization)
        if token is None:
            return Verdict(Outcome.UNAUTHENTICATED, "a bearer token is required")
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with self._pending_lock:
            lock = self._pending.setdefault(key, threading.Lock())
        with lock:  # concurrent scrapes with one token: the first reviews, the others read
            try:
                cached = self._cache.get(key)
                return cached if cached is not None else self._decide(key, token, client)
            finally:
                with self._pending_lock:
                    self._pending.pop(key, None)

    def _decide(self, key: bytes, token: str, client: str) -> Verdict:
        """Review ``token`` if it is known good or the rates allow, and cache the verdict."""
        if key not in self._known_good and not self._within_rates(client):
            log.debug("metrics auth: review rate exceeded for %r; answering 503", client)
            return Verdict(Outcome.UNAVAILABLE, "too many new tokens to check; try again")
        try:
            verdict = self._review(token)
        except _Unavailable as err:
            log.warning("metrics auth: %s; answering 503", err)
            return Verdict(Outcome.UNAVAILABLE, "cannot check the token now; try again")
        if verdict.allowed:
            self._known_good.add(key)
        else:
            self._known_good.discard(key)
        ttl = self._allowed_ttl if verdict.allowed else self._denied_ttl
        self._cache.put(key, verdict, ttl)
        if not verdict.allowed:
            who = f" for {verdict.user}" if verdict.user else ""
            log.debug("metrics auth: %d%s: %s", verdict.outcome, who, verdict.reason)
        return verdict

    def _within_rates(self, client: str) -> bool:
        """The client's own budget first: a sprayer that spent it leaves the server's alone."""
        return self._clients.take(client) and self._bucket.take()

    def cached_tokens(self) -> int:
        """How many token digests the cache holds (for tests and debugging)."""
        return len(self._cache)

    def _review(self, token: str) -> Verdict:
        """A TokenReview, then (if the token is good) a SubjectAccessReview."""
        self.reviews += 1
        review = self._call(
            "TokenReview",
            token,
            self._authn.create_token_review,
            k8s.V1TokenReview(
                api_version="authentication.k8s.io/v1",
                kind="TokenReview",
                spec=k8s.V1TokenReviewSpec(token=token),
            ),
        )
        status = review.status
        if status is None or not status.authenticated or status.user is None:
            return Verdict(Outcome.UNAUTHENTICATED, "the token is not valid")
        user = status.user
        username = user.username or ""
        access = self._call(
            "SubjectAccessReview",
            token,
            self._authz.create_subject_access_review,
            k8s.V1SubjectAccessReview(
                api_version="authorization.k8s.io/v1",
                kind="SubjectAccessReview",
                spec=k8s.V1SubjectAccessReviewSpec(
                    user=username,
                    groups=user.groups,
                    uid=user.uid,
                    extra=user.extra,
                    non_resource_attributes=k8s.V1NonResourceAttributes(
                        path=self._path, verb=self._verb
                    ),
                ),
            ),
        )
        if access.status is not None and access.status.allowed:
            return Verdict(Outcome.ALLOWED, user=username)
        return Verdict(
            Outcome.FORBIDDEN,
            f"user {username!r} may not {self._verb} {self._path}",
            user=username,
        )

    def _call(self, kind: str, token: str, create: Callable[..., Any], body: Any) -> Any:
        """``create(body)`` with a timeout; any failure becomes ``_Unavailable``.

        Every failure, not only ``ApiException``: whatever goes wrong on the way to the API
        (refused connection, timeout, an answer that does not parse), the scrape must be
        refused as unavailable rather than crash into a 500. The message names the status,
        or the exception's type and first line with ``token`` masked, never a response body,
        which could echo the request.
        """
        try:
            return create(body, _request_timeout=self._timeout)
        except ApiException as err:
            raise _Unavailable(f"{kind} failed: HTTP {err.status} {err.reason}") from None
        except Exception as err:
            # urllib3's MaxRetryError wraps the error that matters (refused, timed out).
            cause = getattr(err, "reason", None)
            if isinstance(cause, Exception):
                err = cause
            lines = str(err).replace(token, "<token>").splitlines()
            detail = lines[0][:_MAX_DETAIL] if lines else ""
            raise _Unavailable(f"{kind} failed: {type(err).__name__}: {detail}") from None
