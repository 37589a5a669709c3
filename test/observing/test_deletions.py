"""A node pool GKE deletes is never an outage, whatever the order in which the nodes vanish
and GKE reports it (megamon.observing.deletions), and a pool whose nodes vanish while GKE
still runs it is an interruption from when they vanished.

Each case plays cycles as the aggregator does — GKE's listing (requested at ``polled``),
the nodes at ``now``, the observer with last cycle's ledger, the append rules — and reads
the history those produce. Times are minutes after T0; ``|`` marks a poll.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from megamon.app import observer_settings
from megamon.config import Config
from megamon.domain import interruptions, timestamps
from megamon.domain.events import EventRecord, UpEvent
from megamon.observing.common import Settings
from megamon.observing.deletions import CONFIRM_WITHIN_NS, PoolLedger
from megamon.observing.nodepools import observe_nodepools_confirmed
from megamon.recording.appending import reconcile
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.projections import NodeView, node_view
from megamon.summary.summarizing import summarize
from test.observing.test_observers import node

T0 = timestamps.parse("2026-06-01T00:00:00Z")
M = 60 * 10**9
DEFAULT = Settings()


def pool(status: str) -> NodePoolView:
    return NodePoolView("np", status, "ct5lp-hightpu-8t", "2x4", "tpu-v5-lite-podslice", False)


NODES = [node_view(node("np-0", topology="2x4", since=T0 - 60 * M))]


@dataclass
class Megamon:
    """The node pool observer and the append rules, cycle by cycle, on a history in memory."""

    records: dict[str, EventRecord] = field(default_factory=dict)
    retired: dict[str, EventRecord] = field(default_factory=dict)
    ledger: PoolLedger = field(default_factory=PoolLedger)

    def cycle(
        self,
        minute: float,
        pools: list[NodePoolView],
        nodes: list[NodeView],
        polled: float,
        settings: Settings = DEFAULT,
    ) -> None:
        now = T0 + int(minute * M)
        observed, self.ledger = observe_nodepools_confirmed(
            pools, nodes, now, settings, polled_ns=T0 + int(polled * M), ledger=self.ledger
        )
        result = reconcile(self.records, observed.observations, now)
        self.records = result.records
        self.retired.update(result.retired)

    def history(self) -> EventRecord:
        return self.records.get("np") or self.retired["np"]

    def interruptions(self, minute: float) -> int:
        return summarize(self.history(), T0 + int(minute * M)).interruption_count


def up_at_zero() -> Megamon:
    megamon = Megamon()
    megamon.cycle(0, [pool("RUNNING")], NODES, polled=0)
    assert megamon.history().events == (UpEvent(up=False, ts=T0), UpEvent(up=True, ts=T0))
    return megamon


def test_nodes_vanish_before_the_poll_sees_stopping() -> None:
    #   | RUNNING        nodes vanish (1)            | STOPPING (2)
    #   up ______________ held: still shown up ______ expected down from 1
    megamon = up_at_zero()
    megamon.cycle(1, [pool("RUNNING")], [], polled=0)
    assert megamon.records["np"].events[-1].up  # nothing recorded yet
    megamon.cycle(1.5, [pool("RUNNING")], [], polled=0)
    megamon.cycle(2, [pool("STOPPING")], [], polled=2)
    assert megamon.history().events[-1] == UpEvent(up=False, expected_down=True, ts=T0 + M)
    assert megamon.interruptions(3) == 0


def test_the_pool_leaves_the_list_without_ever_showing_stopping() -> None:
    #   | RUNNING        nodes vanish (1)            | not listed (2)       retired (3)
    megamon = up_at_zero()
    megamon.cycle(1, [pool("RUNNING")], [], polled=0)
    megamon.cycle(2, [], [], polled=2)
    assert megamon.records["np"].events[-1] == UpEvent(up=False, expected_down=True, ts=T0 + M)
    megamon.cycle(3, [], [], polled=2)
    assert "np" not in megamon.records
    assert megamon.retired["np"].events[-1].expected_down
    assert megamon.interruptions(3) == 0


def test_a_failed_poll_in_between_keeps_the_pool_held() -> None:
    #   | RUNNING   nodes vanish (1)   poll fails (2)   | STOPPING (3)
    megamon = up_at_zero()
    megamon.cycle(1, [pool("RUNNING")], [], polled=0)
    megamon.cycle(2, [pool("RUNNING")], [], polled=0)  # the listing of before: no answer
    assert megamon.records["np"].events[-1].up
    megamon.cycle(3, [pool("STOPPING")], [], polled=3)
    assert megamon.history().events[-1] == UpEvent(up=False, expected_down=True, ts=T0 + M)
    assert megamon.interruptions(4) == 0


def test_a_pool_gke_lists_without_its_nodes_leaving_ends_expected_down() -> None:
    #   | RUNNING (nodes still there)   | not listed (1)   retired (2)
    megamon = up_at_zero()
    megamon.cycle(1, [], NODES, polled=1)
    assert megamon.records["np"].events[-1] == UpEvent(up=False, expected_down=True, ts=T0 + M)
    megamon.cycle(2, [], NODES, polled=1)
    assert "np" not in megamon.records and megamon.interruptions(2) == 0


def test_a_pool_gke_still_runs_is_interrupted_from_when_its_nodes_vanished() -> None:
    #   | RUNNING   nodes vanish (1)   | RUNNING (2): down from 1, node-lost
    megamon = up_at_zero()
    megamon.cycle(1, [pool("RUNNING")], [], polled=0)
    megamon.cycle(2, [pool("RUNNING")], [], polled=2)
    assert megamon.history().events[-1] == UpEvent(
        up=False, ts=T0 + M, reason=interruptions.NODE_LOST
    )
    assert megamon.interruptions(3) == 1


def test_nodes_back_before_gke_answers_are_an_interruption_and_a_recovery() -> None:
    #   | RUNNING   nodes vanish (1)   nodes back (1.5), no poll yet
    megamon = up_at_zero()
    megamon.cycle(1, [pool("RUNNING")], [], polled=0)
    megamon.cycle(1.5, [pool("RUNNING")], NODES, polled=0)
    assert megamon.history().events[-2:] == (
        UpEvent(up=False, ts=T0 + M, reason=interruptions.NODE_LOST),
        UpEvent(up=True, ts=T0 + int(1.5 * M)),
    )
    summary = summarize(megamon.history(), T0 + 2 * M)
    assert (summary.interruption_count, summary.recovery_count) == (1, 1)


def test_gke_unreachable_for_too_long_makes_it_an_interruption() -> None:
    #   | RUNNING   nodes vanish (1)   ... no successful poll for CONFIRM_WITHIN ...
    megamon = up_at_zero()
    megamon.cycle(1, [pool("RUNNING")], [], polled=0)
    late = 1 + CONFIRM_WITHIN_NS / M
    megamon.cycle(late - 0.5, [pool("RUNNING")], [], polled=0)
    assert megamon.records["np"].events[-1].up
    megamon.cycle(late, [pool("RUNNING")], [], polled=0)
    assert megamon.history().events[-1] == UpEvent(
        up=False, ts=T0 + M, reason=interruptions.NODE_LOST
    )
    megamon.cycle(late + 1, [], [], polled=late + 1)  # deleted after all: too late to tell
    assert megamon.interruptions(late + 1) == 1


def test_a_pool_never_up_is_not_held() -> None:
    megamon = Megamon()
    megamon.cycle(0, [pool("PROVISIONING")], [], polled=0)
    assert megamon.history().events == (UpEvent(up=False, ts=T0, reason=interruptions.UNKNOWN),)


def test_a_hold_outlives_three_polls_however_far_apart() -> None:
    """Five minutes at the usual polling intervals; three polls when they are further apart,
    so a slow poll never turns a deletion into an interruption by itself."""
    assert observer_settings(Config()).confirm_within_ns == CONFIRM_WITHIN_NS
    slow = observer_settings(Config(PollingIntervalSeconds=600))
    assert slow.confirm_within_ns == 1800 * 10**9
    megamon = up_at_zero()
    nodes_gone = [pool("RUNNING")]
    for minute in (1, 10, 29):  # no poll since minute 0; 28 minutes held
        megamon.cycle(minute, nodes_gone, [], polled=0, settings=slow)
        assert megamon.records["np"].events[-1].up
    megamon.cycle(30, [pool("STOPPING")], [], polled=30, settings=slow)
    assert megamon.history().events[-1] == UpEvent(up=False, expected_down=True, ts=T0 + M)
