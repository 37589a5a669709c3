"""The append rules: which observations become events (docs/rules.md).

Pure: the caller passes ``now`` (one per cycle, shared by every kind) and gets new records
back; nothing is mutated, read from the clock or logged.

- first observation of a key: down@now (failed/expected-down as observed); if up, also up@now;
- afterwards: an event when ``up`` changes, or when ``failed`` changes while down;
- a down the observer held back (``down_since``: a node pool whose nodes vanished before
  GKE said why; a JobSet restart timed by the server or since the last look) is stamped when
  it began, after an up record (at least 1 ns after that up); if the resource is up again by
  then, that down and the up at ``now`` are both appended, so neither the interruption nor
  its timing is lost;
- an up the server timed (``up_since``: a JobSet's ``RestartingJobSet`` condition turning
  False) is stamped then, kept between the record's last event and ``now``;
- a key no longer observed is retired (its record leaves the live set, to be archived).

An event is never stamped earlier than the record's last event: with clock skew between
replicas, a ``now`` behind the history is raised to the last timestamp, so the history stays
ordered and no period comes out negative. Only within ``MAX_CLOCK_SKEW_NS``, though: a last
event further ahead of ``now`` than any clock skew is a bad timestamp, not a skew, and
following it would stamp every later event of the key at that time for good (one event in
year 9999 poisoning the key's whole future). The new event then gets ``now``; the summarizer
counts the impossible period as zero and ``anomalies`` names it.

An event that would repeat one of the same flags at the record's last instant (up, then down
again, before the clock moved) is stamped a nanosecond later: the log identifies an event by
key, timestamp and state, and would fold the repeat into the first one on reading it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    EventRecord,
    reason_bits,
)
from megamon.domain.observations import Observation
from megamon.domain.timestamps import MAX_CLOCK_SKEW_NS

__all__ = ["MAX_CLOCK_SKEW_NS", "Reconciled", "next_record", "reconcile", "stamp"]


def stamp(now: int, last: int) -> int:
    """When an event observed at ``now`` happened, given the record's ``last`` event."""
    if now < last <= now + MAX_CLOCK_SKEW_NS:
        return last
    return now


def _down_flags(observation: Observation) -> int:
    """A down event's flags: expected down, failed, and the observation's reason."""
    return (
        (FLAG_EXPECTED_DOWN if observation.expected_down else 0)
        | (FLAG_FAILED if observation.failed else 0)
        | reason_bits(observation.reason)
    )


def next_record(record: EventRecord | None, observation: Observation, now: int) -> EventRecord:
    """The record after ``observation`` at ``now``; the same object when nothing changed."""
    if record is None or not record.timestamps:
        flags = bytes((_down_flags(observation),))
        if observation.up:
            return EventRecord.trusted((now, now), flags + bytes((FLAG_UP,)))
        return EventRecord.trusted((now,), flags)

    last_ts = record.timestamps[-1]
    last_flags = record.flags[-1]
    was_up = bool(last_flags & FLAG_UP)
    if was_up and observation.down_since:
        return _held_down(record, observation, now)
    if observation.up == was_up and (
        was_up or observation.failed == bool(last_flags & FLAG_FAILED)
    ):
        return record
    new_flags = FLAG_UP if observation.up else _down_flags(observation)
    ts = stamp(now, last_ts)
    if observation.up and observation.up_since:
        ts = _up_stamp(observation, last_ts, now)
    if ts == last_ts and _repeats(record, new_flags):
        ts += 1  # the log tells events apart by timestamp and state: keep this one distinct
    return EventRecord.trusted((*record.timestamps, ts), record.flags + bytes((new_flags,)))


def _repeats(record: EventRecord, flags: int) -> bool:
    """Whether an event with ``flags`` is among those at the record's last timestamp: a
    second one at that instant would read back from the log as the first (replay.py)."""
    last = record.timestamps[-1]
    for ts, earlier in zip(reversed(record.timestamps), reversed(record.flags), strict=True):
        if ts != last:
            return False
        if earlier == flags:
            return True
    return False


def _up_stamp(observation: Observation, last: int, now: int) -> int:
    """When an up the server timed (``up_since``) is stamped: then, kept within
    ``[last, max(last, now)]`` so the history stays ordered."""
    return max(last, min(observation.up_since, now))


def _held_down(record: EventRecord, observation: Observation, now: int) -> EventRecord:
    """An up record after a down that began at ``observation.down_since``: the down event
    then (never before the last event), and the up at ``now`` (or ``up_since``) if the
    resource is up again."""
    last = record.timestamps[-1]
    # strictly after the up before it, and the up after it strictly later still: events of
    # one key at one instant have no order once the log is read back (replay.py)
    began = max(last + 1, stamp(observation.down_since, last))
    if not observation.up:
        flags = bytes((_down_flags(observation),))
        return EventRecord.trusted((*record.timestamps, began), record.flags + flags)
    flags = bytes((reason_bits(observation.reason), FLAG_UP))
    up = _up_stamp(observation, began, now) if observation.up_since else stamp(now, began)
    return EventRecord.trusted(
        (*record.timestamps, began, max(up, began + 1)), record.flags + flags
    )


@dataclass(frozen=True)
class Reconciled:
    """The outcome of one batch of observations for one kind."""

    records: dict[str, EventRecord]
    """The live records after the batch (observed keys only)."""
    changed: frozenset[str]
    """Keys that gained an event."""
    retired: dict[str, EventRecord] = field(default_factory=dict)
    """Keys that were no longer observed, with their final records."""

    @property
    def dirty(self) -> bool:
        """Whether the live set differs from the one the batch started from."""
        return bool(self.changed or self.retired)


def reconcile(
    records: Mapping[str, EventRecord],
    observations: Mapping[str, Observation],
    now: int,
    applied: Mapping[str, Observation] | None = None,
) -> Reconciled:
    """Apply one batch of observations of a kind to its live records.

    ``applied``: the batch whose reconciling made ``records``, if known. A key observed as
    the same object again gains nothing (its record already ends in the state the
    observation says), unless the observation holds a down back (``down_since``), which
    ``next_record`` reads against the record: most keys of a large fleet, every cycle."""
    live: dict[str, EventRecord] = {}
    changed: set[str] = set()
    again = (applied or {}).get
    for key, observation in observations.items():
        before = records.get(key)
        if before is not None and again(key) is observation and not observation.down_since:
            live[key] = before
            continue
        after = next_record(before, observation, now)
        if after is not before:
            changed.add(key)
        live[key] = after
    retired = {key: rec for key, rec in records.items() if key not in observations}
    return Reconciled(records=live, changed=frozenset(changed), retired=retired)
