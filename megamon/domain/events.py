"""Up/down events and the event record of one resource — the durable history.

A record is immutable; appending returns a new record. Events are stored column-wise (one
tuple of integer-nanosecond timestamps, one byte of flags per event) rather than as one model
object per event: files of millions of events must parse and summarize in seconds, and a
pydantic object per event costs microseconds and hundreds of bytes. ``UpEvent`` is the view
of one event for code that wants one.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, model_validator

from megamon.domain.interruptions import REASONS

# Bits of an event's flag byte.
FLAG_UP = 1
FLAG_EXPECTED_DOWN = 2
FLAG_FAILED = 4
REASON_SHIFT = 3
"""Bits 3-7 of a down event's flag byte: its reason, as 1 + the index in ``REASONS`` (0:
none, as in every event the Go megamon wrote). The flag tests above stay bitwise."""
_REASON_CODES = {reason: index + 1 for index, reason in enumerate(REASONS)}


def reason_bits(reason: str) -> int:
    """The flag bits of ``reason`` (0 for ``""`` or a reason not in the set)."""
    return _REASON_CODES.get(reason, 0) << REASON_SHIFT


def reason_of(flags: int) -> str:
    """The reason a flag byte carries, ``""`` when none."""
    code = flags >> REASON_SHIFT
    return REASONS[code - 1] if 0 < code <= len(REASONS) else ""


class UpEvent(BaseModel):
    """One transition: the resource became up, or down (expected or not, failed or not)."""

    model_config = ConfigDict(frozen=True)

    up: bool
    ts: int
    """Nanoseconds since the Unix epoch, UTC."""
    expected_down: bool = False
    failed: bool = False
    reason: str = ""
    """Why it went down (``megamon.domain.interruptions``); ``""`` on up events."""

    @property
    def flags(self) -> int:
        return (
            (FLAG_UP if self.up else 0)
            | (FLAG_EXPECTED_DOWN if self.expected_down else 0)
            | (FLAG_FAILED if self.failed else 0)
            | (0 if self.up else reason_bits(self.reason))
        )

    @classmethod
    def from_flags(cls, ts: int, flags: int) -> UpEvent:
        return cls(
            up=bool(flags & FLAG_UP),
            ts=ts,
            expected_down=bool(flags & FLAG_EXPECTED_DOWN),
            failed=bool(flags & FLAG_FAILED),
            reason=reason_of(flags),
        )


class EventRecord(BaseModel):
    """The whole up/down history of one resource, oldest event first."""

    model_config = ConfigDict(frozen=True)

    timestamps: tuple[int, ...] = ()
    flags: bytes = b""

    @model_validator(mode="after")
    def _same_length(self) -> EventRecord:
        if len(self.timestamps) != len(self.flags):
            raise ValueError("timestamps and flags must have the same length")
        return self

    @classmethod
    def of(cls, events: Iterable[UpEvent]) -> EventRecord:
        """A record holding ``events`` in the given order."""
        items = list(events)
        return cls.trusted(tuple(e.ts for e in items), bytes(e.flags for e in items))

    @classmethod
    def trusted(cls, timestamps: tuple[int, ...], flags: bytes) -> EventRecord:
        """A record built from columns already checked by the caller (the codec, the appender).

        Skips validation, which costs more than the decoding itself on large files.
        """
        return cls.model_construct(timestamps=timestamps, flags=flags)

    @property
    def events(self) -> tuple[UpEvent, ...]:
        return tuple(
            UpEvent.from_flags(t, f) for t, f in zip(self.timestamps, self.flags, strict=True)
        )

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def last(self) -> UpEvent | None:
        if not self.timestamps:
            return None
        return UpEvent.from_flags(self.timestamps[-1], self.flags[-1])

    def appended(self, event: UpEvent) -> EventRecord:
        """A new record with ``event`` at the end."""
        return EventRecord.trusted((*self.timestamps, event.ts), self.flags + bytes((event.flags,)))


EMPTY_RECORD = EventRecord()


class ArchiveEntry(BaseModel):
    """The history of a resource that is no longer observed, kept forever.

    Written to ``archive/<kind>/<key>.json`` when the key leaves the live file, with the
    attributes it last had and the moment it was retired.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    key: str
    retired_at: int
    attrs: dict[str, object] = {}
    record: EventRecord = EMPTY_RECORD
