"""Watch streams through `kubernetes.watch.Watch`: replay, live events, bookmarks, 410, drops."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from internal.fakekube import FakeKube
from internal.fakekube.objects import node, obj, pod

Event = dict[str, Any]


class Collector:
    """Runs `Watch.stream` on a thread and queues what it yields (or raises)."""

    def __init__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.watch = watch.Watch()
        self.events: queue.Queue[Event | BaseException | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, args=(func, args, kwargs), daemon=True)
        self._thread.start()

    def _run(self, func: Callable[..., Any], args: Any, kwargs: Any) -> None:
        try:
            for event in self.watch.stream(func, *args, **kwargs):
                self.events.put(event)
            self.events.put(None)
        except BaseException as exc:  # handed to the test thread
            self.events.put(exc)

    def next(self, types: tuple[str, ...] = ("ADDED", "MODIFIED", "DELETED")) -> Event:
        """The next event of one of `types` (others skipped); fails after 5 s."""
        deadline = time.monotonic() + 5
        while True:
            item = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            if item is None or isinstance(item, BaseException):
                raise AssertionError(f"stream ended: {item!r}")
            if item["type"] in types:
                return item

    def end(self) -> BaseException | None:
        """Wait for the stream to end; what it raised, if anything."""
        deadline = time.monotonic() + 5
        while True:
            item = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            if item is None or isinstance(item, BaseException):
                return item

    def stop(self) -> None:
        self.watch.stop()
        self._thread.join(5)


@pytest.fixture
def collectors() -> Iterator[list[Collector]]:
    made: list[Collector] = []
    yield made
    for collector in made:
        collector.stop()


def summary(event: Event) -> tuple[str, str, str]:
    meta = event["raw_object"]["metadata"]
    return event["type"], meta.get("name", ""), meta["resourceVersion"]


def test_watch_from_list_version_replays_in_order(
    core: client.CoreV1Api, fake_kube: FakeKube
) -> None:
    fake_kube.create(node("old"))
    version = core.list_node().metadata.resource_version
    fake_kube.create(node("n1"))
    fake_kube.patch_status("Node", "n1", {"phase": "Running"})
    fake_kube.delete("Node", "n1")
    seen = []
    stream = watch.Watch()
    for event in stream.stream(core.list_node, resource_version=version, timeout_seconds=5):
        seen.append(summary(event))
        if event["type"] == "DELETED":
            assert isinstance(event["object"], client.V1Node)
            stream.stop()
    v = int(version)
    assert seen == [
        ("ADDED", "n1", str(v + 1)),
        ("MODIFIED", "n1", str(v + 2)),
        ("DELETED", "n1", str(v + 3)),
    ]


def test_live_events_and_bookmarks(
    core: client.CoreV1Api, fake_kube: FakeKube, collectors: list[Collector]
) -> None:
    version = core.list_node().metadata.resource_version
    stream = Collector(core.list_node, resource_version=version, allow_watch_bookmarks=True)
    collectors.append(stream)
    fake_kube.create(node("n1"))
    assert summary(stream.next())[:2] == ("ADDED", "n1")
    fake_kube.patch("Node", "n1", {"metadata": {"labels": {"a": "b"}}})
    modified = stream.next()
    assert modified["object"].metadata.labels == {"a": "b"}
    bookmark = stream.next(("BOOKMARK",))
    assert bookmark["raw_object"] == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": fake_kube.resource_version},
    }
    assert stream.watch.resource_version == fake_kube.resource_version


def test_watch_without_version_starts_with_synthetic_adds(
    core: client.CoreV1Api, fake_kube: FakeKube, collectors: list[Collector]
) -> None:
    fake_kube.create(node("a"))
    fake_kube.create(node("b"))
    stream = Collector(core.list_node)
    collectors.append(stream)
    assert [summary(stream.next())[:2] for _ in range(2)] == [("ADDED", "a"), ("ADDED", "b")]
    fake_kube.delete("Node", "a")
    assert summary(stream.next())[:2] == ("DELETED", "a")


def test_send_initial_events_ends_with_annotated_bookmark(
    core: client.CoreV1Api, fake_kube: FakeKube
) -> None:
    fake_kube.create(node("a"))
    stream = watch.Watch()
    events = []
    for event in stream.stream(
        core.list_node,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout_seconds=5,
    ):
        events.append(event)
        if event["type"] == "BOOKMARK":
            stream.stop()
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    annotations = events[1]["raw_object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


def test_expired_version_raises_410_from_the_stream(
    core: client.CoreV1Api, fake_kube: FakeKube
) -> None:
    fake_kube.create(node("a"))
    version = core.list_node().metadata.resource_version
    fake_kube.create(node("b"))
    fake_kube.compact()
    with pytest.raises(ApiException) as info:
        list(watch.Watch().stream(core.list_node, resource_version=version, timeout_seconds=5))
    assert info.value.status == 410
    assert "Expired: too old resource version" in info.value.reason
    fake_kube.reset_counters()
    with pytest.raises(ApiException) as info:
        list(watch.Watch().stream(core.list_node, resource_version=version))
    assert info.value.status == 410
    assert fake_kube.request_count("watch", "nodes") == 2, "without a timeout it retries once"


def test_overflowing_history_expires_old_versions(tmp_path: Path) -> None:
    with FakeKube(history_size=3) as kube:
        kube.create_many(node(f"n{i}") for i in range(5))
        path = kube.write_kubeconfig(tmp_path / "kubeconfig")
        with config.new_client_from_config(config_file=str(path)) as api:
            core = client.CoreV1Api(api)
            replay = watch.Watch()
            names = []
            for event in replay.stream(core.list_node, resource_version="2", timeout_seconds=5):
                names.append(event["raw_object"]["metadata"]["name"])
                if len(names) == 3:
                    replay.stop()
            assert names == ["n2", "n3", "n4"]
            with pytest.raises(ApiException) as info:
                list(watch.Watch().stream(core.list_node, resource_version="1", timeout_seconds=1))
            assert info.value.status == 410


def test_selector_transitions_become_added_and_deleted(
    core: client.CoreV1Api, fake_kube: FakeKube, collectors: list[Collector]
) -> None:
    fake_kube.create(node("n1", labels={"pool": "a"}))
    version = fake_kube.resource_version
    stream = Collector(core.list_node, label_selector="pool=a", resource_version=version)
    collectors.append(stream)
    fake_kube.create(node("other", labels={"pool": "b"}))
    fake_kube.patch("Node", "n1", {"metadata": {"labels": {"pool": "b"}}})
    left = stream.next()
    assert summary(left)[:2] == ("DELETED", "n1")
    assert left["raw_object"]["metadata"]["labels"] == {"pool": "a"}, "the last matching state"
    fake_kube.patch("Node", "n1", {"metadata": {"labels": {"pool": "a"}}})
    assert summary(stream.next())[:2] == ("ADDED", "n1")


def test_namespaced_and_custom_object_watches(
    core: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    fake_kube: FakeKube,
    collectors: list[Collector],
) -> None:
    fake_kube.create(node("seed"))  # version "0" would mean "start with synthetic ADDs"
    version = fake_kube.resource_version
    pods = Collector(core.list_namespaced_pod, "ml", resource_version=version)
    jobsets = Collector(
        custom.list_namespaced_custom_object,
        "jobset.x-k8s.io",
        "v1alpha2",
        "ml",
        "jobsets",
        resource_version=version,
    )
    collectors.extend([pods, jobsets])
    fake_kube.create(pod("elsewhere", "web"))
    fake_kube.create(pod("p", "ml"))
    fake_kube.create(obj("JobSet", "js", "ml", spec={"replicatedJobs": []}))
    fake_kube.patch_status("JobSet", "js", {"conditions": [{"type": "Completed"}]}, "ml")
    assert summary(pods.next())[:2] == ("ADDED", "p")
    assert jobsets.next()["type"] == "ADDED"
    changed = jobsets.next()
    assert changed["type"] == "MODIFIED"
    assert changed["object"]["status"] == {"conditions": [{"type": "Completed"}]}


def test_dropped_watch_ends_the_stream(
    core: client.CoreV1Api, fake_kube: FakeKube, collectors: list[Collector]
) -> None:
    stream = Collector(core.list_node, resource_version="0", timeout_seconds=30)
    collectors.append(stream)
    deadline = time.monotonic() + 5
    while fake_kube.watches.count == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_kube.drop_watches() == 1
    assert stream.end() is None, "a clean end of stream"


def test_abruptly_dropped_watch_breaks_the_connection(
    core: client.CoreV1Api, fake_kube: FakeKube, collectors: list[Collector]
) -> None:
    stream = Collector(core.list_node, resource_version="0", timeout_seconds=30)
    collectors.append(stream)
    deadline = time.monotonic() + 5
    while fake_kube.watches.count == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    fake_kube.drop_watches(abrupt=True)
    assert isinstance(stream.end(), urllib3.exceptions.ProtocolError)


def test_watch_ends_at_timeout_seconds(core: client.CoreV1Api) -> None:
    started = time.monotonic()
    assert list(watch.Watch().stream(core.list_node, resource_version="0", timeout_seconds=1)) == []
    assert 0.9 < time.monotonic() - started < 3


def test_compaction_spares_live_watchers_but_not_reconnects(
    core: client.CoreV1Api, fake_kube: FakeKube, collectors: list[Collector]
) -> None:
    fake_kube.create(node("seed"))
    version = fake_kube.resource_version
    stream = Collector(core.list_node, resource_version=version, timeout_seconds=30)
    collectors.append(stream)
    fake_kube.create(node("n1"))
    assert stream.next()["type"] == "ADDED"
    fake_kube.compact()
    fake_kube.create(node("n2"))
    assert summary(stream.next())[:2] == ("ADDED", "n2"), "a live watch survives compaction"
    with pytest.raises(ApiException) as info:
        list(watch.Watch().stream(core.list_node, resource_version=version, timeout_seconds=5))
    assert info.value.status == 410
