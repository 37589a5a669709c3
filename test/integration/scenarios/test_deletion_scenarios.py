"""A node pool GKE deletes is never an outage, whatever the order in which its nodes leave the
watch and GKE reports it (docs/history.md, "Node pools that GKE deletes").

Each order is driven through the emulators with the real clients, one step at a time: the
test decides when megamon polls GKE and when it aggregates, on a clock it advances itself,
and waits for the watch to have delivered a change before the next step — so no outcome
depends on timing or thread order. The history megamon wrote (a local directory) and
``megamon report`` on it are what is checked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from megamon.cli.main import main
from megamon.domain import interruptions, timestamps
from megamon.domain.events import UpEvent
from megamon.domain.kinds import Kind
from megamon.recording.loading import load_kind
from megamon.stores.local import LocalEventStore
from test.integration.scenarios.world import CLUSTER, LOCATION, PROJECT, Megamon, World

S = 10**9


class Clock:
    """megamon's clock: it moves only when the test says."""

    def __init__(self) -> None:
        self.now = time.time_ns()

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float = 1.0) -> int:
        self.now += int(seconds * S)
        return self.now


class Steps:
    """megamon's loops as steps: poll GKE, aggregate (observe, record, report), persist."""

    def __init__(self, world: World, directory: Path) -> None:
        self.world = world
        self.clock = Clock()
        self.directory = directory
        self.store = LocalEventStore(directory)
        self.megamon = Megamon(world, store=self.store, clock=self.clock)

    def poll(self, *, succeeds: bool = True) -> None:
        self.clock.advance()
        assert self.megamon.aggregator.poll_once() is succeeds

    def aggregate(self) -> None:
        self.clock.advance()
        assert self.megamon.aggregator.aggregate_once() is not None
        assert self.megamon.aggregator.persist_once()

    def await_watch(self, check: Callable[[], bool]) -> None:
        """Wait until the watch caches show what the test changed (a condition, no timing)."""
        deadline = time.monotonic() + 10.0
        while not check():
            assert time.monotonic() < deadline, "the watch never delivered the change"
            time.sleep(0.01)

    def pool_nodes(self) -> int:
        nodes = self.megamon.cluster.snapshot().nodes.values()
        return sum(1 for node in nodes if node.nodepool == "np")

    def events(self) -> tuple[UpEvent, ...]:
        """The history megamon wrote for the pool: live, or archived."""
        loaded = load_kind(self.store, Kind.NODEPOOL).history.records
        if "np" in loaded:
            return loaded["np"].events
        [entry] = self.store.read_archive(Kind.NODEPOOL, "np")
        return entry.record.events

    def vanish(self) -> int:
        """Delete the pool's nodes, as GKE does when it deletes the pool; the time megamon
        first sees them gone."""
        for name in list(self.world.created_nodes):
            self.world.delete_node(name)
        self.await_watch(lambda: self.pool_nodes() == 0)
        self.aggregate()
        return self.clock.now

    def stop(self) -> None:
        self.megamon.stop()


@pytest.fixture
def steps(world: World, tmp_path: Path) -> Iterator[Steps]:
    world.pool("np", "RUNNING", topology="2x4", machine_type="ct5lp-hightpu-4t")
    world.node("np-0", "np", topology="2x4")
    world.node("np-1", "np", topology="2x4")
    running = Steps(world, tmp_path / "history")
    running.await_watch(lambda: running.pool_nodes() == 2)
    running.poll()
    running.aggregate()
    assert [event.up for event in running.events()] == [False, True]
    yield running
    running.stop()


def report(steps: Steps) -> dict[str, Any]:
    """``megamon report --format json``'s entry for the pool, at megamon's clock."""
    out = steps.directory.parent / "report.json"
    argv = ["report", "--events-dir", str(steps.directory), "--format", "json", "-o", str(out)]
    assert main([*argv, "--now", timestamps.format_ns(steps.clock.advance())]) == 0
    document = json.loads(out.read_text())
    [entry] = [r for r in document["resources"] if r["key"] == "np"]
    return dict(entry)


def deleted(steps: Steps, since: int) -> None:
    """The pool's history ends expected down from ``since``, with no interruption, archived;
    and ``megamon report`` agrees."""
    steps.world.gke.delete_node_pool(PROJECT, LOCATION, CLUSTER, "np")
    steps.poll()
    steps.aggregate()
    steps.aggregate()  # the cycle after its last observation retires it
    events = steps.events()
    assert steps.store.archived_keys(Kind.NODEPOOL) == ["np"]
    assert [(e.up, e.expected_down) for e in events] == [
        (False, False),
        (True, False),
        (False, True),
    ]
    assert events[-1].ts == since
    entry = report(steps)
    assert (entry["state"], entry["live"]) == ("expected-down", False), entry
    assert (entry["interruptionCount"], entry["downTime"]) == (0, 0), entry
    assert entry["availabilityPercent"] == 100.0, entry


def test_nodes_vanish_before_the_gke_poll_sees_stopping(steps: Steps) -> None:
    since = steps.vanish()
    assert steps.events()[-1].up  # held: GKE has not said why yet
    steps.world.pool_status("np", "STOPPING")
    steps.poll()
    steps.aggregate()
    assert steps.events()[-1] == UpEvent(up=False, expected_down=True, ts=since)
    deleted(steps, since)


def test_the_pool_leaves_list_node_pools_without_ever_showing_stopping(steps: Steps) -> None:
    since = steps.vanish()
    deleted(steps, since)


def test_a_gke_poll_fails_in_between(steps: Steps) -> None:
    since = steps.vanish()
    steps.world.gke.inject_fault(status=403, count=1)  # not retried: the poll fails
    steps.poll(succeeds=False)
    steps.aggregate()
    assert steps.events()[-1].up  # still held: a failed poll answers nothing
    steps.world.pool_status("np", "STOPPING")
    steps.poll()
    steps.aggregate()
    deleted(steps, since)


def test_nodes_vanishing_from_a_pool_gke_still_runs_are_an_interruption_then(
    steps: Steps,
) -> None:
    since = steps.vanish()
    steps.poll()  # GKE: RUNNING
    steps.aggregate()
    assert steps.events()[-1] == UpEvent(up=False, ts=since, reason=interruptions.NODE_LOST)
    entry = report(steps)
    assert (entry["state"], entry["interruptionCount"]) == ("down", 1), entry
