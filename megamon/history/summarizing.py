"""The summarizer: an event record and ``now`` in, a ``Summary`` out (DESIGN §5).

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from megamon.records.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord
from megamon.records.summaries import EMPTY_SUMMARY, ProvisioningState, Summary


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
        length = max(0, ts[end] - ts[begin])
        if flags[end] & FLAG_UP:  # a down period ended: time to recover
            t.down_time += length
            t.total_down += length
            t.latest_down = length
            if not flags[begin] & FLAG_EXPECTED_DOWN:
                t.recoveries += 1
        else:  # an up period ended: time between interruptions
            t.up_time += length
            t.total_up += length
            t.latest_up = length
            if not flags[end] & FLAG_EXPECTED_DOWN:
                t.interruptions += 1


def _open_period(ts: tuple[int, ...], flags: bytes, begin: int, now: int, t: _Totals) -> None:
    """The period still running: its time so far goes to up or down time only."""
    length = max(0, ts[-1] - ts[begin]) + max(0, now - ts[-1])
    if flags[begin] & FLAG_UP:
        t.up_time += length
    else:
        t.down_time += length


def _never_up(ts: tuple[int, ...], flags: bytes, now: int) -> Summary:
    """A resource that has not come up yet: still provisioning, or failed to."""
    down_time = max(0, ts[-1] - ts[0]) + max(0, now - ts[-1])
    if flags[-1] & FLAG_FAILED:
        frozen = max(0, ts[-1] - ts[0])
        return Summary(
            down_time=down_time,
            down_time_initial=frozen,
            provisioning_duration=frozen,
            provisioning_state=ProvisioningState.FAILED,
        )
    return Summary(
        down_time=down_time,
        provisioning_duration=max(0, now - ts[0]),
        provisioning_state=ProvisioningState.PROVISIONING,
    )


def summarize(record: EventRecord, now: int) -> Summary:
    """The summary of ``record`` at ``now``; all zero for an empty or invalid history."""
    ts, flags = record.timestamps, record.flags
    if not ts or flags[0] & FLAG_UP:
        return EMPTY_SUMMARY
    starts = _period_starts(flags)
    if len(starts) == 1:
        return _never_up(ts, flags, now)

    provisioned = max(0, ts[starts[1]] - ts[0])
    t = _Totals(down_time=provisioned)
    _closed_periods(ts, flags, starts, t)
    _open_period(ts, flags, starts[-1], now, t)
    return Summary(
        down_time_initial=provisioned,
        interruption_count=t.interruptions,
        recovery_count=t.recoveries,
        down_time=t.down_time,
        up_time=t.up_time,
        total_down_time_between_recovery=t.total_down,
        total_up_time_between_interruption=t.total_up if t.interruptions else 0,
        latest_down_time_between_recovery=t.latest_down,
        latest_up_time_between_interruption=t.latest_up,
        mean_down_time_between_recovery=t.total_down // t.recoveries if t.recoveries else 0,
        mean_up_time_between_interruption=t.total_up // t.interruptions if t.interruptions else 0,
        provisioning_duration=provisioned,
        provisioning_state=ProvisioningState.SUCCESS,
    )


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
