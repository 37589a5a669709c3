"""A node pool GKE deletes is never an outage: the down of a pool whose nodes vanish waits
for GKE's word on why (docs/history.md, "Node pools that GKE deletes").

Why: nodes come from a watch, in real time; GKE's node pools from ``ListNodePools``, every
``PollingIntervalSeconds``. When GKE deletes a pool its nodes may vanish from the watch
before the next poll shows the pool ``STOPPING`` — or the pool may leave the list without
ever showing ``STOPPING``. Taken at face value, that is a pool GKE still calls ``RUNNING``
losing its nodes: an interruption, recorded for good in an append-only history.

So a pool that was up, GKE last called neither stopping nor failed, and has fewer nodes
than it expects is *held*: its last confirmed observation is shown and nothing is recorded
until a ``ListNodePools`` requested after the nodes went missing answers (a failed poll
answers nothing). Then

- still listed and not stopping (``RUNNING``, ``ERROR``, …): the down is recorded as what it
  is, stamped when the nodes went missing, so its timing is not lost;
- ``STOPPING`` or ``DELETING``: recorded expected down, from that same moment;
- no longer listed: recorded expected down (deleted) from that moment, and retired the cycle
  after;
- the nodes came back first: the down and the recovery are both recorded (a short
  interruption is an interruption), without waiting for GKE.

A hold lasts at most ``confirm_within_ns`` (five minutes, or three polling intervals if that
is longer): if GKE cannot be asked for that long, the down is
recorded as an interruption from when the nodes went missing; GKE's later word cannot make
it expected any more. A pool GKE stops listing while megamon watches it ends the same way,
with an expected-down event before it is retired. All of it is decided here, purely, from
the previous cycle's ledger.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from megamon.domain.observations import Observation
from megamon.sources.gke.views import STATUS_DELETED

CONFIRM_WITHIN_NS = 300 * 1_000_000_000
"""Five minutes: dozens of polls at any usual ``PollingIntervalSeconds``; past it, GKE is
unreachable and nodes missing that long are an outage whatever GKE would say."""
POLLS_TO_CONFIRM = 3
"""A hold outlives this many polls at least, however long the polling interval."""


def confirm_within_ns(polling_interval_s: float) -> int:
    """How long a hold may last: five minutes, or three polls when they are further apart."""
    return max(CONFIRM_WITHIN_NS, int(POLLS_TO_CONFIRM * polling_interval_s * 1_000_000_000))


@dataclass(frozen=True)
class Held:
    """A pool whose down waits for GKE: since when, what is shown meanwhile, and why it is
    down (the reason the down event gets if the nodes come back before GKE answers)."""

    since: int
    shown: Observation
    reason: str
    detail: str


@dataclass(frozen=True)
class PoolLedger:
    """What the node pool observer concluded last cycle: the observation it gave each listed
    pool, and the pools it holds."""

    shown: Mapping[str, Observation] = field(default_factory=dict)
    held: Mapping[str, Held] = field(default_factory=dict)
    announced: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Per pool, the maintenance its nodes announce and when megamon first saw it, both in
    Unix seconds (``megamon.observing.nodepools``)."""


def _held(
    name: str,
    observation: Observation,
    ledger: PoolLedger,
    *,
    polled_ns: int,
    now: int,
    within_ns: int,
) -> Held | None:
    """The hold of a down pool short of nodes, or None when GKE has answered since (or
    has not for ``within_ns``)."""
    hold = ledger.held.get(name)
    if hold is None:
        previous = ledger.shown.get(name)
        if previous is None or not previous.up:
            return None  # no up to keep: nothing would be recorded until it comes up anyway
        hold = Held(now, previous, observation.reason, observation.reason_detail)
    if polled_ns >= hold.since or now - hold.since >= within_ns:
        return None
    return hold


def _closing(previous: Observation, hold: Held | None) -> Observation:
    """The last observation of a pool GKE no longer lists: deleted, so expected down (from
    when its nodes went missing, if they had); a pool already down stays as it was."""
    if not previous.up and hold is None:
        return previous
    closing = Observation.build(
        expected=previous.expected,
        ready=0,
        status=STATUS_DELETED,
        expected_down=True,
        attrs=previous.attrs,
    )
    return closing.model_copy(update={"down_since": hold.since}) if hold else closing


def _confirmed(observation: Observation, hold: Held | None) -> Observation:
    """This cycle's observation, carrying when its down began if one was held."""
    if hold is None:
        return observation
    update: dict[str, object] = {"down_since": hold.since}
    if observation.up:  # back before GKE answered: that was an interruption
        update |= {"reason": hold.reason, "reason_detail": hold.detail}
    return observation.model_copy(update=update)


def confirm(
    observed: Mapping[str, Observation],
    *,
    short: Collection[str],
    listed: Collection[str],
    polled_ns: int,
    now: int,
    ledger: PoolLedger,
    within_ns: int = CONFIRM_WITHIN_NS,
) -> tuple[dict[str, Observation], PoolLedger]:
    """The observations to record this cycle and the next ledger.

    ``observed``: this cycle's observations of listed pools; ``short``: those GKE calls
    neither stopping nor failed with fewer nodes than expected; ``listed``: every pool name
    of the listing; ``polled_ns``: when that listing was requested; ``within_ns``: how
    long a hold may last.
    """
    result: dict[str, Observation] = {}
    held: dict[str, Held] = {}
    for name, observation in observed.items():
        hold = None
        if not observation.up and name in short:
            hold = _held(
                name, observation, ledger, polled_ns=polled_ns, now=now, within_ns=within_ns
            )
        if hold is not None:
            held[name] = hold
            result[name] = hold.shown
        else:
            result[name] = _confirmed(observation, ledger.held.get(name))
    shown = dict(result)
    for name, previous in ledger.shown.items():
        if name not in listed:
            result[name] = _closing(previous, ledger.held.get(name))
    return result, PoolLedger(shown=shown, held=held, announced=ledger.announced)
