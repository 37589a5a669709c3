"""The summarizer: an event record and ``now`` in, a ``Summary`` out (docs/rules.md).

Pure and clock-free. Integer nanoseconds throughout; means truncate like Go's
``time.Duration`` division. The events are read as alternating periods::

    up:            _______         ____
    down:   ______|       |_______|    |____
    event:  0     1       2       3    4     now
            └ provisioning┘       └ TTR┘
                   └ TBI ─┘            (trailing: only up/down time)

Consecutive events of the same state form one period; the later ones only annotate it (a
down period that turned failed, or stopped failing). A down period is expected (a planned
end, not an interruption) when its *first* event says so. Periods shorter than zero — a
history written across replicas with skewed clocks — count as zero.

Events later than ``now`` have not happened yet: the summary at ``now`` is that of the events
up to ``now`` (cut at the first later one), as the availability report reads them, so the two
agree on every count and duration. A history loaded at ``now`` holds nothing later than the
clock skew allowance (docs/history.md); what is within it waits for ``now`` to catch up.

Every duration saturates at Go's largest ``time.Duration`` (2⁶³−1 ns, 292 years), as Go's
``Time.Sub`` does: a history or a ``now`` at Go's zero time (``0001-01-01T00:00:00Z``) gives
the longest duration, never an integer that no JSON reader or Prometheus series can hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord
from megamon.domain.summaries import EMPTY_SUMMARY, ProvisioningState, Summary
from megamon.domain.timestamps import add, elapsed, saturated


@dataclass(slots=True)
class _Totals:
    down_time: int = 0
    up_time: int = 0
    interruptions: int = 0
    recoveries: int = 0
    total_down: int = 0
    total_up: int = 0
    latest_down: int = 0
    latest_up: int = 0


def _period_starts(flags: bytes) -> list[int]:
    """Indexes of the events that start a period (the up bit differs from the previous one)."""
    starts = [0]
    previous = flags[0] & FLAG_UP
    for i in range(1, len(flags)):
        state = flags[i] & FLAG_UP
        if state != previous:
            starts.append(i)
            previous = state
    return starts


def _closed_periods(ts: tuple[int, ...], flags: bytes, starts: list[int], t: _Totals) -> None:
    """Account every period after the first that was ended by the next period's start."""
    for n in range(2, len(starts)):
        begin, end = starts[n - 1], starts[n]
        length = elapsed(ts[begin], ts[end])
        if flags[end] & FLAG_UP:  # a down period ended: time to recover
            t.down_time = add(t.down_time, length)
            t.total_down = add(t.total_down, length)
            t.latest_down = length
            if not flags[begin] & FLAG_EXPECTED_DOWN:
                t.recoveries += 1
        else:  # an up period ended: time between interruptions
            t.up_time = add(t.up_time, length)
            t.total_up = add(t.total_up, length)
            t.latest_up = length
            if not flags[end] & FLAG_EXPECTED_DOWN:
                t.interruptions += 1


@dataclass(frozen=True, slots=True)
class Settled:
    """What a record's summary owes to its events alone; ``at(now)`` adds the running time.

    Only the open period after the last event (and the duration of a provisioning still
    going on) grows with ``now``; everything else is settled once the record is. A record is
    immutable, so its ``Settled`` can be kept for as long as the record is: a report of
    65,000 resources then re-reads only the histories that changed.
    """

    base: Summary
    """The summary without the open period's time."""
    open_up: bool = False
    """Whether the open period is up (its time goes to ``up_time``) or down."""
    open_before_last: int = 0
    """Time of the open period up to the last event (consecutive events of one state)."""
    last: int | None = None
    """The last event's timestamp; ``None``: nothing grows (no valid history)."""
    provisioning_since: int | None = None
    """The first event's timestamp while the resource is still provisioning."""
    latest: int | None = None
    """The latest timestamp of the record: ``at(now)`` holds for any ``now`` from it on;
    before it, ``summary_at`` summarizes the events up to ``now`` instead."""

    def at(self, now: int) -> Summary:
        """The summary at ``now``."""
        if self.last is None:
            return self.base
        up_time, down_time, provisioning_duration = self.running(now)
        base = self.base
        return Summary(
            down_time_initial=base.down_time_initial,
            interruption_count=base.interruption_count,
            recovery_count=base.recovery_count,
            down_time=down_time,
            up_time=up_time,
            total_down_time_between_recovery=base.total_down_time_between_recovery,
            total_up_time_between_interruption=base.total_up_time_between_interruption,
            latest_down_time_between_recovery=base.latest_down_time_between_recovery,
            latest_up_time_between_interruption=base.latest_up_time_between_interruption,
            mean_down_time_between_recovery=base.mean_down_time_between_recovery,
            mean_up_time_between_interruption=base.mean_up_time_between_interruption,
            provisioning_duration=provisioning_duration,
            provisioning_state=base.provisioning_state,
        )

    def running(self, now: int) -> tuple[int, int, int]:
        """(up time, down time, provisioning duration) of ``at(now)``: the only figures that
        grow with ``now``; every other one is ``base``'s."""
        base, last = self.base, self.last
        if last is None:
            return base.up_time, base.down_time, base.provisioning_duration
        running = add(self.open_before_last, elapsed(last, now))
        since = self.provisioning_since
        provisioning = base.provisioning_duration if since is None else elapsed(since, now)
        if self.open_up:
            return add(base.up_time, running), base.down_time, provisioning
        return base.up_time, add(base.down_time, running), provisioning

    def holds_at(self, now: int) -> bool:
        """Whether ``at(now)`` is the record's summary at ``now`` (``summary_at``): no event
        of the record is later than ``now``."""
        return self.latest is None or self.latest <= now


_NOTHING_SETTLED = Settled(EMPTY_SUMMARY)


def _never_up(ts: tuple[int, ...], flags: bytes) -> Settled:
    """A resource that has not come up yet: still provisioning, or failed to.

    ``downTimeProvisioned`` is the time to the *first up*, so it stays 0 for a resource that
    never came up, failed or not (the Go megamon's ``DownTimeInitial`` is only set by an up);
    the time spent trying is ``downTime`` and ``provisioningDuration``.
    """
    so_far = elapsed(ts[0], ts[-1])
    if flags[-1] & FLAG_FAILED:
        base = Summary(
            provisioning_duration=so_far,
            provisioning_state=ProvisioningState.FAILED,
        )
        return Settled(base, open_before_last=so_far, last=ts[-1])
    base = Summary(provisioning_state=ProvisioningState.PROVISIONING)
    return Settled(base, open_before_last=so_far, last=ts[-1], provisioning_since=ts[0])


def settle(record: EventRecord) -> Settled:
    """Everything of ``record``'s summary that does not depend on ``now``."""
    settled = _settle(record)
    ts = record.timestamps
    return replace(settled, latest=max(ts)) if ts else settled


def _settled_base(provisioned: int, t: _Totals) -> Summary:
    """The Go summary of a resource that came up, from its closed periods' totals: one
    definition for the batch summarizer and its fold."""
    total_down, total_up = saturated(t.total_down), saturated(t.total_up)
    return Summary(
        down_time_initial=provisioned,
        interruption_count=t.interruptions,
        recovery_count=t.recoveries,
        down_time=saturated(t.down_time),
        up_time=saturated(t.up_time),
        total_down_time_between_recovery=total_down,
        total_up_time_between_interruption=total_up if t.interruptions else 0,
        latest_down_time_between_recovery=saturated(t.latest_down),
        latest_up_time_between_interruption=saturated(t.latest_up),
        mean_down_time_between_recovery=total_down // t.recoveries if t.recoveries else 0,
        mean_up_time_between_interruption=total_up // t.interruptions if t.interruptions else 0,
        provisioning_duration=provisioned,
        provisioning_state=ProvisioningState.SUCCESS,
    )


def _settle(record: EventRecord) -> Settled:
    ts, flags = record.timestamps, record.flags
    if not ts or flags[0] & FLAG_UP:
        return _NOTHING_SETTLED
    starts = _period_starts(flags)
    if len(starts) == 1:
        return _never_up(ts, flags)

    provisioned = elapsed(ts[0], ts[starts[1]])
    t = _Totals(down_time=provisioned)
    _closed_periods(ts, flags, starts, t)
    open_begin = starts[-1]
    base = _settled_base(provisioned, t)
    return Settled(
        base,
        open_up=bool(flags[open_begin] & FLAG_UP),
        open_before_last=elapsed(ts[open_begin], ts[-1]),
        last=ts[-1],
    )


def events_until(record: EventRecord, now: int) -> EventRecord:
    """The events of ``record`` before the first one later than ``now`` (the availability
    report's reading: a later event has not happened yet)."""
    ts = record.timestamps
    for i, t in enumerate(ts):
        if t > now:
            return EventRecord.trusted(ts[:i], record.flags[:i])
    return record


def summary_at(record: EventRecord, settled: Settled, now: int) -> Summary:
    """The summary of ``record`` at ``now`` from its ``settled`` part (``settle(record)``);
    a ``now`` before the record's latest event summarizes the events up to ``now``."""
    if settled.holds_at(now):
        return settled.at(now)
    return settle(events_until(record, now)).at(now)


def summarize(record: EventRecord, now: int) -> Summary:
    """The summary of ``record`` at ``now``; all zero for an empty or invalid history."""
    return summary_at(record, settle(record), now)


def summarize_all(records: Mapping[str, EventRecord], now: int) -> dict[str, Summary]:
    """Summaries of every record of a kind at one ``now``."""
    return {key: summarize(record, now) for key, record in records.items()}


def anomalies(record: EventRecord) -> list[str]:
    """What is wrong with a history, for the caller to log; empty when nothing is.

    The summarizer tolerates these (an invalid history summarizes to zero, a step back in
    time counts as zero), so they never fail a cycle, but an operator should hear of them.
    """
    found: list[str] = []
    ts, flags = record.timestamps, record.flags
    if ts and flags[0] & FLAG_UP:
        found.append("first event is up: history is invalid and summarizes to zero")
    for i in range(1, len(ts)):
        if ts[i] < ts[i - 1]:
            found.append(f"event {i} is earlier than event {i - 1}: that period counts as zero")
    return found


@dataclass(slots=True)
class SummaryFold:
    """``settle`` as a fold: the summarizer's scan over a record, kept where it stopped, so
    that a record that gained events costs its new events only (``fold``), not its history.

    ``settle`` stays the definition: ``SummaryFold().fold(record).settled()`` equals
    ``settle(record)`` to the nanosecond for every record, and folding a record piece by
    piece (each piece extending the last) gives the same as folding it whole
    (``test/summary/test_folds.py``). The state is a handful of integers, so it can be kept
    for every resource and persisted (``summary.foldstate``).
    """

    count: int = 0
    """Events folded so far."""
    first: int = 0
    """The first event's timestamp."""
    invalid: bool = False
    """The first event is up: the history summarizes to zero whatever follows."""
    transitions: int = 0
    """Period starts after the first (``len(_period_starts) - 1``)."""
    provisioned: int = 0
    begin: int = 0
    """The open period's first timestamp."""
    begin_flags: int = 0
    last: int = 0
    last_flags: int = 0
    latest: int = 0
    """The largest timestamp folded (``settle``'s ``latest``)."""
    totals: _Totals = field(default_factory=_Totals)

    def fields(self) -> list[int]:
        """Every field as an integer, in order (the persisted state's layout)."""
        t = self.totals
        return [
            *(self.count, self.first, int(self.invalid), self.transitions, self.provisioned),
            *(self.begin, self.begin_flags, self.last, self.last_flags, self.latest),
            *(t.down_time, t.up_time, t.interruptions, t.recoveries),
            *(t.total_down, t.total_up, t.latest_down, t.latest_up),
        ]

    @classmethod
    def from_fields(cls, values: list[int]) -> SummaryFold:
        """The fold ``fields`` gave."""
        v = values
        return cls(
            count=v[0],
            first=v[1],
            invalid=bool(v[2]),
            transitions=v[3],
            provisioned=v[4],
            begin=v[5],
            begin_flags=v[6],
            last=v[7],
            last_flags=v[8],
            latest=v[9],
            totals=_Totals(*v[10:18]),
        )

    def fold(self, record: EventRecord) -> SummaryFold:
        """Take in the events of ``record`` after the ``count`` already folded (``record``
        extends the one folded before; the caller checks)."""
        ts, flags = record.timestamps, record.flags
        start = self.count
        if start >= len(ts):
            return self
        if start == 0:
            self.first = self.begin = self.latest = ts[0]
            self.begin_flags = self.last_flags = flags[0]
            self.invalid = bool(flags[0] & FLAG_UP)
            start = 1
        if self.invalid:  # nothing but the latest timestamp matters any more
            self.latest = max(self.latest, max(ts[start:], default=self.latest))
            self.last, self.last_flags, self.count = ts[-1], flags[-1], len(ts)
            return self
        t = self.totals
        latest, begin, begin_flags = self.latest, self.begin, self.begin_flags
        previous = self.last_flags & FLAG_UP
        transitions = self.transitions
        for i in range(start, len(ts)):
            stamp = ts[i]
            latest = max(latest, stamp)
            state = flags[i] & FLAG_UP
            if state == previous:
                continue
            previous = state
            if transitions == 0:
                self.provisioned = elapsed(self.first, stamp)
                t.down_time = self.provisioned
            else:  # the period begun at ``begin`` ended (``_closed_periods``)
                length = elapsed(begin, stamp)
                if state:
                    t.down_time = add(t.down_time, length)
                    t.total_down = add(t.total_down, length)
                    t.latest_down = length
                    if not begin_flags & FLAG_EXPECTED_DOWN:
                        t.recoveries += 1
                else:
                    t.up_time = add(t.up_time, length)
                    t.total_up = add(t.total_up, length)
                    t.latest_up = length
                    if not flags[i] & FLAG_EXPECTED_DOWN:
                        t.interruptions += 1
            transitions += 1
            begin, begin_flags = stamp, flags[i]
        self.transitions = transitions
        self.latest, self.begin, self.begin_flags = latest, begin, begin_flags
        self.last, self.last_flags = ts[-1], flags[-1]
        self.count = len(ts)
        return self

    def settled(self) -> Settled:
        """``settle`` of the events folded so far."""
        if not self.count:
            return _NOTHING_SETTLED
        if self.invalid:
            return replace(_NOTHING_SETTLED, latest=self.latest)
        if not self.transitions:
            so_far = elapsed(self.first, self.last)
            if self.last_flags & FLAG_FAILED:
                base = Summary(
                    provisioning_duration=so_far, provisioning_state=ProvisioningState.FAILED
                )
                return Settled(base, open_before_last=so_far, last=self.last, latest=self.latest)
            base = Summary(provisioning_state=ProvisioningState.PROVISIONING)
            return Settled(
                base,
                open_before_last=so_far,
                last=self.last,
                provisioning_since=self.first,
                latest=self.latest,
            )
        base = _settled_base(self.provisioned, self.totals)
        return Settled(
            base,
            open_up=bool(self.begin_flags & FLAG_UP),
            open_before_last=elapsed(self.begin, self.last),
            last=self.last,
            latest=self.latest,
        )


Extends = Callable[[EventRecord, EventRecord], bool]
"""``extends``, or what answers as it does (``Extensions``)."""


class Extensions:
    """``extends`` for the folds of one report, each pair of records compared once: the
    summary, the histograms' periods and the chip figures each ask it of a record that
    gained events and the one they folded, mostly the same two records (at 1,000 events a
    comparison is a few microseconds, for every changed resource, three times)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int], tuple[EventRecord, EventRecord, bool]] = {}

    def __call__(self, record: EventRecord, before: EventRecord) -> bool:
        key = (id(record), id(before))
        found = self._seen.get(key)
        if found is not None and found[0] is record and found[1] is before:
            return found[2]
        result = extends(record, before)
        self._seen[key] = (record, before, result)
        return result


def extends(record: EventRecord, before: EventRecord) -> bool:
    """Whether ``record`` is ``before`` with events added at the end (what appending makes):
    a fold of ``before`` can then take in just the new ones. Two C-level comparisons."""
    n = len(before.timestamps)
    return (
        len(record.timestamps) >= n
        and record.flags[:n] == before.flags
        and record.timestamps[:n] == before.timestamps
    )
