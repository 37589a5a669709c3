"""The scrape guard without a network: bearer-token parsing, the review bodies it sends, the
verdicts it draws, its cache (TTLs, bound, token digests) and how API failures become 503s
that name no token. The same guard against the emulator over real TLS is in
``test/serving/secure``."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from megamon.serving.auth import KubeGuard, Outcome, Verdict, bearer_token
from megamon.serving.http import MetricsServer

TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-token-value.sig"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeReviews:
    """Stands for both review APIs: answers from ``users`` and ``allowed``, records bodies."""

    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    allowed: set[str] = field(default_factory=set)
    token_reviews: list[Any] = field(default_factory=list)
    access_reviews: list[Any] = field(default_factory=list)
    timeouts: list[Any] = field(default_factory=list)
    fail_with: Exception | None = None

    def create_token_review(self, body: Any, _request_timeout: Any = None) -> Any:
        self.timeouts.append(_request_timeout)
        if self.fail_with is not None:
            raise self.fail_with
        self.token_reviews.append(body)
        user = self.users.get(body.spec.token)
        if user is None:
            return SimpleNamespace(status=SimpleNamespace(authenticated=False, user=None))
        return SimpleNamespace(
            status=SimpleNamespace(authenticated=True, user=SimpleNamespace(**user))
        )

    def create_subject_access_review(self, body: Any, _request_timeout: Any = None) -> Any:
        self.access_reviews.append(body)
        return SimpleNamespace(status=SimpleNamespace(allowed=body.spec.user in self.allowed))


def alice(**extra: Any) -> dict[str, Any]:
    return {"username": "alice", "groups": ["viewers"], "uid": "u-1", "extra": None, **extra}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def reviews() -> FakeReviews:
    return FakeReviews()


def make_guard(reviews: FakeReviews, clock: Clock, **kw: Any) -> KubeGuard:
    guard = KubeGuard(None, clock=clock, **kw)
    guard._authn = cast(Any, reviews)
    guard._authz = cast(Any, reviews)
    return guard


@pytest.fixture
def guard(reviews: FakeReviews, clock: Clock) -> KubeGuard:
    return make_guard(reviews, clock)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer   ", None),
        ("Basic dXNlcjpwYXNz", None),
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER   abc  ", "abc"),
        ("Bearer a b", None),
        ("Bearer a\tb", None),
        ("Bearer tök", None),
        ("Bearer " + "x" * 20_000, None),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_no_token_is_401_without_asking_the_api(guard: KubeGuard, reviews: FakeReviews) -> None:
    assert guard.check(None).outcome is Outcome.UNAUTHENTICATED
    assert guard.check("Basic dXNlcjpwYXNz").outcome is Outcome.UNAUTHENTICATED
    assert reviews.token_reviews == [] and guard.cached_tokens() == 0


def test_an_authorised_token_is_allowed_after_both_reviews(
    guard: KubeGuard, reviews: FakeReviews
) -> None:
    reviews.users[TOKEN] = alice(extra={"scopes": ["a"]})
    reviews.allowed.add("alice")
    verdict = guard.check(f"Bearer {TOKEN}")
    assert verdict == Verdict(Outcome.ALLOWED, user="alice")
    [token_review] = reviews.token_reviews
    assert token_review.spec.token == TOKEN
    assert token_review.kind == "TokenReview"
    [access] = reviews.access_reviews
    spec = access.spec
    assert (spec.user, spec.groups, spec.uid, spec.extra) == (
        "alice",
        ["viewers"],
        "u-1",
        {"scopes": ["a"]},
    )
    attrs = spec.non_resource_attributes
    assert (attrs.path, attrs.verb) == ("/metrics", "get")
    assert spec.resource_attributes is None
    assert reviews.timeouts == [5.0]


def test_a_bad_token_is_401_and_no_access_review(guard: KubeGuard, reviews: FakeReviews) -> None:
    verdict = guard.check("Bearer nope")
    assert verdict.outcome is Outcome.UNAUTHENTICATED
    assert reviews.access_reviews == []


def test_an_unauthorised_user_is_403_naming_the_user(
    guard: KubeGuard, reviews: FakeReviews
) -> None:
    reviews.users[TOKEN] = alice()
    verdict = guard.check(f"Bearer {TOKEN}")
    assert verdict.outcome is Outcome.FORBIDDEN
    assert "'alice'" in verdict.reason and "/metrics" in verdict.reason
    assert TOKEN not in verdict.reason


def test_allowed_answers_are_cached_for_30_seconds(
    guard: KubeGuard, reviews: FakeReviews, clock: Clock
) -> None:
    reviews.users[TOKEN] = alice()
    reviews.allowed.add("alice")
    for _ in range(3):
        assert guard.check(f"Bearer {TOKEN}").allowed
    assert len(reviews.token_reviews) == len(reviews.access_reviews) == 1
    clock.now += 29.9
    reviews.allowed.clear()  # a revoked role still works until the entry expires
    assert guard.check(f"Bearer {TOKEN}").allowed
    clock.now += 0.1
    assert guard.check(f"Bearer {TOKEN}").outcome is Outcome.FORBIDDEN
    assert len(reviews.token_reviews) == 2


def test_refusals_are_cached_for_5_seconds(
    guard: KubeGuard, reviews: FakeReviews, clock: Clock
) -> None:
    assert guard.check("Bearer nope").outcome is Outcome.UNAUTHENTICATED
    reviews.users["nope"] = alice()
    reviews.allowed.add("alice")
    clock.now += 4.9
    assert guard.check("Bearer nope").outcome is Outcome.UNAUTHENTICATED
    assert len(reviews.token_reviews) == 1
    clock.now += 0.1
    assert guard.check("Bearer nope").allowed  # a freshly granted role works soon


def test_the_cache_is_bounded_and_keyed_by_digest(reviews: FakeReviews, clock: Clock) -> None:
    guard = make_guard(reviews, clock, max_entries=2)
    for token in ("t1", "t2", "t1", "t3"):  # t1 used again: t2 is least recently used
        guard.check(f"Bearer {token}")
    assert guard.cached_tokens() == 2
    guard.check("Bearer t1")
    assert len(reviews.token_reviews) == 3
    guard.check("Bearer t2")
    assert len(reviews.token_reviews) == 4
    keys = list(guard._cache._entries)
    assert all(isinstance(key, bytes) and len(key) == 32 for key in keys)


def test_caching_can_be_turned_off(reviews: FakeReviews, clock: Clock) -> None:
    guard = make_guard(reviews, clock, allowed_ttl=0, denied_ttl=0)
    guard.check("Bearer x")
    guard.check("Bearer x")
    assert len(reviews.token_reviews) == 2 and guard.cached_tokens() == 0


@pytest.mark.parametrize(
    ("error", "logged"),
    [
        (ApiException(status=500, reason="Server Error"), "HTTP 500 Server Error"),
        (ApiException(status=401, reason="Unauthorized"), "HTTP 401 Unauthorized"),
        (ConnectionRefusedError(111, "Connection refused"), "ConnectionRefusedError"),
        (ValueError(f"cannot parse\nbody with {TOKEN}"), "ValueError: cannot parse"),
        (TimeoutError(f"timed out sending {TOKEN}"), "timed out sending <token>"),
    ],
)
def test_api_failures_are_503_logged_in_one_line_without_the_token(
    guard: KubeGuard,
    reviews: FakeReviews,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
    logged: str,
) -> None:
    reviews.fail_with = error
    with caplog.at_level(logging.DEBUG, logger="megamon.serving.auth"):
        verdict = guard.check(f"Bearer {TOKEN}")
    assert verdict.outcome is Outcome.UNAVAILABLE
    [record] = caplog.records
    message = record.getMessage()
    assert record.levelno == logging.WARNING
    assert logged in message and "503" in message
    assert "\n" not in message and TOKEN not in message
    assert record.exc_info is None


def test_failures_are_not_cached(guard: KubeGuard, reviews: FakeReviews) -> None:
    reviews.users[TOKEN] = alice()
    reviews.allowed.add("alice")
    reviews.fail_with = ApiException(status=503, reason="Service Unavailable")
    assert guard.check(f"Bearer {TOKEN}").outcome is Outcome.UNAVAILABLE
    reviews.fail_with = None
    assert guard.check(f"Bearer {TOKEN}").allowed


def test_tokens_are_never_logged(
    guard: KubeGuard, reviews: FakeReviews, caplog: pytest.LogCaptureFixture
) -> None:
    reviews.users[TOKEN] = alice()
    with caplog.at_level(logging.DEBUG):
        guard.check(f"Bearer {TOKEN}")
        guard.check("Bearer other-secret")
    assert caplog.records
    assert not any(
        TOKEN in r.getMessage() or "other-secret" in r.getMessage() for r in caplog.records
    )


def test_a_guard_without_tls_is_refused(guard: KubeGuard) -> None:
    with pytest.raises(ValueError, match="needs TLS"):
        MetricsServer("127.0.0.1:0", CollectorRegistry(), guard=guard)


def test_a_spray_of_distinct_tokens_is_held_to_the_review_rate(
    reviews: FakeReviews, clock: Clock
) -> None:
    reviews.users["good"] = alice()
    reviews.allowed.add("alice")
    guard = make_guard(reviews, clock, review_rate=5.0, review_burst=20)
    outcomes = [  # from 4451 addresses: each within its own budget, all within the server's
        guard.check(f"Bearer random-{n}", f"10.0.{n // 256}.{n % 256}").outcome for n in range(4451)
    ]
    assert outcomes[:20] == [Outcome.UNAUTHENTICATED] * 20
    assert set(outcomes[20:]) == {Outcome.UNAVAILABLE}  # 503, Retry-After, no API call
    assert len(reviews.token_reviews) == 20
    clock.now += 1.0  # a second later, five more new tokens may be asked about
    assert guard.check("Bearer good", "10.1.0.1").allowed
    assert len(reviews.token_reviews) == 21
    clock.now += 1.0
    for _ in range(100):  # Prometheus, with its one cached token, is never limited
        assert guard.check("Bearer good", "10.1.0.1").allowed
    assert len(reviews.token_reviews) == 21


def test_one_client_is_held_to_its_own_budget_first(reviews: FakeReviews, clock: Clock) -> None:
    guard = make_guard(reviews, clock, client_rate=1.0, client_burst=10)
    outcomes = [guard.check(f"Bearer random-{n}", "10.0.0.9").outcome for n in range(100)]
    assert outcomes[:10] == [Outcome.UNAUTHENTICATED] * 10
    assert set(outcomes[10:]) == {Outcome.UNAVAILABLE}
    reviews.users["good"] = alice()
    reviews.allowed.add("alice")
    assert guard.check("Bearer good", "10.0.0.2").allowed  # the server's budget is not spent


def test_a_known_good_token_is_renewed_outside_the_budgets_until_it_is_refused(
    reviews: FakeReviews, clock: Clock
) -> None:
    """Its cached verdict lapses while the budgets are spent by bogus tokens: it is reviewed
    all the same. Once a renewal is refused, it is a new token again, held to the budgets."""
    reviews.users["good"] = alice()
    reviews.allowed.add("alice")
    guard = make_guard(reviews, clock, review_rate=1.0, review_burst=1, client_burst=1)

    def spend_the_budgets() -> None:
        outcomes = {guard.check(f"Bearer bogus-{clock.now}-{n}", "10.0.0.9") for n in range(5)}
        assert Verdict(Outcome.UNAVAILABLE, "too many new tokens to check; try again") in outcomes

    assert guard.check("Bearer good", "10.0.0.2").allowed
    for _ in range(3):
        clock.now += 31.0  # the allowed verdict lapses; the budgets refill, and are spent
        spend_the_budgets()
        assert guard.check("Bearer good", "10.0.0.2").allowed
    reviews.allowed.discard("alice")  # the role binding is removed
    clock.now += 31.0
    spend_the_budgets()
    assert guard.check("Bearer good", "10.0.0.2").outcome is Outcome.FORBIDDEN
    clock.now += 6.0  # the refusal lapses
    spend_the_budgets()
    assert guard.check("Bearer good", "10.0.0.2").outcome is Outcome.UNAVAILABLE


def test_refusals_from_the_rate_limit_are_not_cached(reviews: FakeReviews, clock: Clock) -> None:
    reviews.users["late"] = alice()
    reviews.allowed.add("alice")
    guard = make_guard(reviews, clock, review_rate=1.0, review_burst=1)
    guard.check("Bearer first")
    assert guard.check("Bearer late").outcome is Outcome.UNAVAILABLE
    clock.now += 1.0
    assert guard.check("Bearer late").allowed


def test_concurrent_scrapes_with_one_token_share_one_review(
    reviews: FakeReviews, clock: Clock
) -> None:
    reviews.users["shared"] = alice()
    reviews.allowed.add("alice")
    release = threading.Event()
    answer = reviews.create_token_review

    def slow_review(body: Any, _request_timeout: Any = None) -> Any:
        release.wait(10)
        return answer(body, _request_timeout)

    reviews.create_token_review = slow_review  # type: ignore[method-assign]
    guard = make_guard(reviews, clock)
    verdicts: list[Verdict] = []
    threads = [
        threading.Thread(target=lambda: verdicts.append(guard.check("Bearer shared")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(10)
    assert [v.allowed for v in verdicts] == [True] * 8
    assert len(reviews.token_reviews) == 1
