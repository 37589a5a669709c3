"""TokenReview and SubjectAccessReview answers as configured by the test."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from internal.fakekube import AccessRequest, FakeKube


def token_review(api: client.AuthenticationV1Api, token: str) -> client.V1TokenReviewStatus:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    body["spec"] = {"token": token, "audiences": ["megamon"]}  # type: ignore[assignment]
    return api.create_token_review(body).status


def access(
    api: client.AuthorizationV1Api, user: str, **spec: Any
) -> client.V1SubjectAccessReviewStatus:
    body = {"spec": {"user": user, "groups": spec.pop("groups", []), **spec}}
    return api.create_subject_access_review(body).status


def test_token_reviews(kube_api_client: Any, fake_kube: FakeKube) -> None:
    api = client.AuthenticationV1Api(kube_api_client)
    fake_kube.token_reviews.set("good", "alice", ["viewers"], uid="u-1")
    fake_kube.token_reviews.set("revoked", "bob", authenticated=False)
    status = token_review(api, "good")
    assert status.authenticated is True
    assert (status.user.username, status.user.groups, status.user.uid) == (
        "alice",
        ["viewers"],
        "u-1",
    )
    assert status.audiences == ["megamon"]
    assert token_review(api, "revoked").authenticated is False
    unknown = token_review(api, "nope")
    assert unknown.authenticated is False and unknown.error
    assert [r["spec"]["token"] for r in fake_kube.token_reviews.received] == [
        "good",
        "revoked",
        "nope",
    ]


def test_access_review_rules(kube_api_client: Any, fake_kube: FakeKube) -> None:
    api = client.AuthorizationV1Api(kube_api_client)
    reviews = fake_kube.access_reviews
    reviews.allow("alice", "get", "/metrics")
    reviews.allow("group:admins", "*", "*")
    reviews.allow("carol", "list", "nodes")
    reviews.deny("mallory", "*", "*")
    reviews.allow("mallory", "get", "/metrics")

    def non_resource(user: str, path: str, **kw: Any) -> bool:
        attrs = {"path": path, "verb": "get"}
        return bool(access(api, user, non_resource_attributes=attrs, **kw).allowed)

    assert non_resource("alice", "/metrics")
    assert not non_resource("alice", "/report")
    assert non_resource("dave", "/report", groups=["admins"])
    denied = access(api, "mallory", non_resource_attributes={"path": "/metrics", "verb": "get"})
    assert (denied.allowed, denied.denied) == (False, True)
    nodes = {"verb": "list", "resource": "nodes", "group": "", "version": "v1"}
    assert access(api, "carol", resource_attributes=nodes).allowed
    assert not access(api, "carol", resource_attributes={**nodes, "verb": "delete"}).allowed
    assert reviews.received[0] == AccessRequest("alice", (), "get", "/metrics")


def test_access_review_function(kube_api_client: Any, fake_kube: FakeKube) -> None:
    api = client.AuthorizationV1Api(kube_api_client)
    fake_kube.access_reviews.decide = lambda r: (r.user.endswith("@corp"), "corp users only")
    allowed = access(api, "eve@corp", non_resource_attributes={"path": "/", "verb": "get"})
    assert allowed.allowed and allowed.reason == "corp users only"
    assert not access(api, "eve", non_resource_attributes={"path": "/", "verb": "get"}).allowed
