"""The watch cache with the real kubernetes client against the Kubernetes emulator: paginated
initial list, watch from its resourceVersion, relist on 410 Gone, reconnect after dropped
watches, 500s and an API server restart — and only projections kept."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from internal.fakekube.fakekube import FakeKube
from megamon.domain import labels
from megamon.domain.descriptions import KindDescription, shipped
from megamon.domain.rejections import REASON_INVALID, REASON_MALFORMED, REASON_UNEXPECTED, Rejection
from megamon.errors import ObservationError
from megamon.sources.kube.cache import WatchCache
from megamon.sources.kube.cluster import KubeCluster
from megamon.sources.kube.projections import NodeView, node_view
from megamon.sources.kube.resources import node_lister
from megamon.sources.kube.watching import WatchSettings

FAST = WatchSettings(
    page_size=50, watch_seconds=5, inactivity_timeout=5.0, backoff_initial=0.05, backoff_max=0.5
)


def tpu_node(name: str, ready: str = "True", pool: str = "np") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {labels.NODEPOOL: pool, labels.TPU_TOPOLOGY: "16x16"},
        },
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture
def cache(kube_api_client: Any) -> Iterator[WatchCache[NodeView]]:
    changes = threading.Event()
    nodes = WatchCache(
        "nodes", node_lister(kube_api_client), node_view, settings=FAST, on_change=changes.set
    )
    nodes.changes = changes  # type: ignore[attr-defined]
    yield nodes
    nodes.stop()


def test_initial_list_is_paginated_and_projected(
    fake_kube: FakeKube, cache: WatchCache[NodeView]
) -> None:
    fake_kube.create_many(tpu_node(f"n{i:03d}") for i in range(260))
    cache.start()
    assert cache.synced.wait(10)
    snapshot = cache.snapshot()
    assert len(snapshot) == 260
    assert snapshot["n007"] == node_view(tpu_node("n007"))
    assert fake_kube.request_count("list", "nodes") >= 6  # 260 nodes in pages of 50


def test_watch_applies_changes_in_order_and_signals_them(
    fake_kube: FakeKube, cache: WatchCache[NodeView]
) -> None:
    fake_kube.create(tpu_node("a"))
    cache.start()
    assert cache.synced.wait(10)
    cache.changes.clear()  # type: ignore[attr-defined]
    fake_kube.create(tpu_node("b", ready="False"))
    fake_kube.apply(tpu_node("b", ready="True"))
    fake_kube.delete("nodes", "a")
    eventually(
        lambda: set(cache.snapshot()) == {"b"} and cache.snapshot()["b"].ready_status == "True"
    )
    assert cache.changes.is_set()  # type: ignore[attr-defined]


def test_a_snapshot_is_stable_until_something_changes(
    fake_kube: FakeKube, cache: WatchCache[NodeView]
) -> None:
    fake_kube.create(tpu_node("a"))
    cache.start()
    assert cache.synced.wait(10)
    first = cache.snapshot()
    assert cache.snapshot() is first
    fake_kube.create(tpu_node("b"))
    eventually(lambda: "b" in cache.snapshot())
    assert "b" not in first


def test_an_expired_resource_version_relists(
    fake_kube: FakeKube, cache: WatchCache[NodeView]
) -> None:
    fake_kube.create(tpu_node("a"))
    cache.start()
    assert cache.synced.wait(10)
    lists = fake_kube.request_count("list", "nodes")
    fake_kube.compact(drop_watches=True)
    fake_kube.delete("nodes", "a")
    fake_kube.create(tpu_node("c"))
    eventually(lambda: set(cache.snapshot()) == {"c"})
    assert fake_kube.request_count("list", "nodes") > lists


def test_dropped_watches_and_errors_reconnect_without_losing_changes(
    fake_kube: FakeKube, cache: WatchCache[NodeView]
) -> None:
    cache.start()
    assert cache.synced.wait(10)
    fake_kube.fail_next(3, status=500)
    fake_kube.drop_watches(abrupt=True)
    fake_kube.create(tpu_node("during-outage"))
    eventually(lambda: "during-outage" in cache.snapshot())


def test_an_api_server_restart_keeps_the_cache_current(
    fake_kube: FakeKube, cache: WatchCache[NodeView]
) -> None:
    fake_kube.create(tpu_node("a"))
    cache.start()
    assert cache.synced.wait(10)
    fake_kube.restart()
    fake_kube.create(tpu_node("after-restart"))
    eventually(lambda: set(cache.snapshot()) == {"a", "after-restart"})


def test_objects_that_cannot_be_projected_are_skipped_and_reported_once(
    fake_kube: FakeKube, kube_api_client: Any
) -> None:
    problems: list[Rejection] = []
    bad = tpu_node("bad")
    bad["status"]["conditions"][0]["lastTransitionTime"] = "yesterday"
    fake_kube.create(bad)
    fake_kube.create(tpu_node("good"))
    nodes = WatchCache(
        "nodes",
        node_lister(kube_api_client),
        node_view,
        settings=FAST,
        on_problem=problems.append,
        kind="node",
    ).start()
    try:
        assert nodes.synced.wait(10)
        assert set(nodes.snapshot()) == {"good"}
        assert problems == [
            Rejection(
                "node",
                "bad",
                REASON_INVALID,
                "node bad: Ready lastTransitionTime: not an RFC 3339 timestamp: 'yesterday'",
            )
        ]
    finally:
        nodes.stop()


def test_the_cluster_watches_every_enabled_type(fake_kube: FakeKube, kube_api_client: Any) -> None:
    fake_kube.create(tpu_node("n"))
    cluster = KubeCluster(kube_api_client, leaderworkersets=True, slices=True, settings=FAST)
    cluster.start()
    try:
        assert cluster.wait_synced(10)
        snapshot = cluster.snapshot()
        assert set(snapshot.nodes) == {"n"}
        assert snapshot.jobsets == {} and snapshot.slices == {}
        assert cluster.last_contact_ns() is not None
    finally:
        cluster.stop()


def test_whatever_a_projection_raises_costs_only_that_object() -> None:
    problems: list[Rejection] = []

    def project(obj: dict[str, Any]) -> str:
        if obj["metadata"]["name"] == "boom":
            raise KeyError("a bug in a projection")
        return str(obj["metadata"]["name"])

    cache = WatchCache("things", lambda **_: None, project, on_problem=problems.append)
    cache.replace([{"metadata": {"name": "a"}}, 5, {"metadata": {"name": "boom"}}])
    cache.apply("ADDED", ["not", "an", "object"])
    cache.apply("MODIFIED", {"metadata": {"name": "b"}})
    assert dict(cache.snapshot()) == {"a": "a", "b": "b"}
    assert [(p.subject, p.reason) for p in problems] == [
        ("?", REASON_MALFORMED),
        ("boom", REASON_UNEXPECTED),
    ]  # the second non-object is the same unnamed subject: reported once


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_watch_thread_that_died_says_so(fake_kube: FakeKube, kube_api_client: Any) -> None:
    fake_kube.create(tpu_node("n"))

    def fatal(obj: dict[str, Any]) -> NodeView:
        raise SystemExit("nothing catches this")

    nodes = WatchCache("nodes", node_lister(kube_api_client), fatal, settings=FAST).start()
    assert nodes._thread is not None
    nodes._thread.join(10)
    assert not nodes.alive()
    nodes.stop()
    assert nodes.alive()  # a stopped watch is not a dead one


def test_described_kinds_get_a_projected_cache_and_an_unserved_one_waits_for_nobody(
    fake_kube: FakeKube, kube_api_client: Any
) -> None:
    trainjob = shipped("trainjob")
    unserved = KindDescription.model_validate(
        {**trainjob.model_dump(), "Noun": "rayjob", "Group": "ray.io", "Resource": "rayjobs"}
        | {"EventFile": "rayjobs.json"}
    )
    created = fake_kube.create(
        {
            "apiVersion": f"{trainjob.Group}/{trainjob.Version[0]}",
            "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"runtimeRef": {"name": "r"}, "trainer": {"image": "x" * 4096}},
        }
    )
    cluster = KubeCluster(kube_api_client, described=[unserved, trainjob], settings=FAST)
    cluster.start()
    try:
        assert cluster.wait_synced(10), "readiness does not wait for an unserved kind"
        eventually(lambda: trainjob.kind in cluster.snapshot().described)
        snapshot = cluster.snapshot()
        assert unserved.kind not in snapshot.described
        (view,) = snapshot.described[trainjob.kind].values()
        uid = created["metadata"]["uid"]
        assert (view.uid, view.expected, view.ready) == (uid, 1, 0), "only what it reads"
        contact = cluster.last_contact_ns()
        described_contact = cluster.described[trainjob.kind].last_contact_ns
        assert contact is not None and described_contact is not None
        assert contact <= described_contact, "a listed described kind counts for freshness"
    finally:
        cluster.stop()


def test_a_described_kinds_skipped_object_is_counted_under_its_noun(
    fake_kube: FakeKube, kube_api_client: Any
) -> None:
    trainjob = shipped("trainjob")
    typo = KindDescription.model_validate(
        {**trainjob.model_dump(), "Noun": "tj", "Expected": {"Path": "spec.numNodez"}}
        | {"EventFile": "tj.json"}
    )
    fake_kube.create(
        {
            "apiVersion": f"{trainjob.Group}/{trainjob.Version[0]}",
            "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"runtimeRef": {"name": "r"}},
        }
    )
    problems: list[Rejection] = []
    cluster = KubeCluster(
        kube_api_client, described=[typo], settings=FAST, on_problem=problems.append
    )
    cluster.start()
    try:
        eventually(lambda: typo.kind in cluster.snapshot().described)
        assert cluster.snapshot().described[typo.kind] == {}
        assert [(p.kind, p.subject, p.reason) for p in problems] == [
            ("tj", "ml/t", REASON_INVALID)
        ]  # the noun, as its series are named, not "trainjobs.trainer.kubeflow.org"
        assert "expected: nothing matches spec.numNodez" in problems[0].message
    finally:
        cluster.stop()


def test_an_object_that_turns_unreadable_keeps_its_last_projection_until_deleted() -> None:
    problems: list[Rejection] = []

    def project(obj: dict[str, Any]) -> int:
        ready = obj["status"]["ready"]
        if type(ready) is not int:
            raise ObservationError(f"ready is {ready!r}")
        return ready

    def jobset(ready: object) -> dict[str, Any]:
        return {"metadata": {"name": "train", "namespace": "ml"}, "status": {"ready": ready}}

    cache = WatchCache("jobsets", lambda **_: None, project, on_problem=problems.append)
    cache.replace([jobset(2)])
    cache.apply("MODIFIED", jobset(5.5))
    cache.apply("MODIFIED", jobset("x"))
    assert dict(cache.snapshot()) == {"ml/train": 2}  # unreadable: stale, not gone
    cache.replace([jobset([])])  # a relist (410 Gone) while it is still unreadable
    assert dict(cache.snapshot()) == {"ml/train": 2}
    assert [(p.subject, p.reason) for p in problems] == [("ml/train", REASON_INVALID)]
    cache.apply("MODIFIED", jobset(1))
    assert dict(cache.snapshot()) == {"ml/train": 1}
    cache.apply("MODIFIED", jobset(None))
    cache.apply("DELETED", jobset(None))
    assert dict(cache.snapshot()) == {}
    assert len(problems) == 2  # unreadable again after being read: reported again
