"""``SegmentLog``: the append-only log of one history, as immutable objects (docs/history.md).

Layout under the history's path::

    log/kind=<kind>/date=YYYY-MM-DD/<sequence, 16 digits>.ndjson   segments (create-only)
    log/snapshots/<event file>                                     snapshot marks
    log/summaries/<event file>                                     summary state beside them
    log/quarantine/kind=<kind>/date=…/<sequence>.ndjson.corrupt    unreadable segments, copied
    log/writer-lease.json                                          the writer lease

Segment names sort in append order: the sequence only grows, and the writer never stamps a
date before its previous segment's (so a clock stepping back cannot reorder names). A segment
is created with a "does not exist" precondition; when that fails, the object is read back: the
same bytes mean our own retried upload landed (nothing to do), other bytes mean another writer.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from megamon.codec.log import LogLine, SegmentError, decode_segment
from megamon.domain import timestamps
from megamon.domain.kinds import Kind, event_file
from megamon.domain.timestamps import MAX_CLOCK_SKEW_NS
from megamon.errors import Conflict, EventFileError, StoreError
from megamon.stores.base import Moved, ObjectBackend
from megamon.telemetry import Instruments

log = logging.getLogger(__name__)

LOG_DIR = "log"
SNAPSHOTS_DIR = "snapshots"
SUMMARIES_DIR = "summaries"
"""``log/summaries/<event file>``: the summary state written beside each snapshot
(``summary.foldstate``); the Go megamon never reads under ``log/``."""
QUARANTINE_DIR = "quarantine"
LEASE_NAME = "writer-lease.json"
SEGMENT_SUFFIX = ".ndjson"
_SEQUENCE_DIGITS = 16
_READ_ATTEMPTS = 3


@dataclass(frozen=True, order=True)
class SegmentName:
    """Where one segment lives; ordered by sequence, the append order."""

    sequence: int
    date: str

    def relative(self, kind: Kind) -> str:
        return (
            f"kind={kind.value}/date={self.date}/{self.sequence:0{_SEQUENCE_DIGITS}d}"
            + SEGMENT_SUFFIX
        )

    @classmethod
    def parse(cls, relative: str) -> SegmentName | None:
        """The name of ``kind=…/date=…/<seq>.ndjson``; ``None`` for anything else."""
        parts = relative.split("/")
        if (
            len(parts) != 3
            or not parts[1].startswith("date=")
            or not parts[2].endswith(SEGMENT_SUFFIX)
        ):
            return None
        digits = parts[2].removesuffix(SEGMENT_SUFFIX)
        if not digits.isdigit():
            return None
        return cls(int(digits), parts[1].removeprefix("date="))

    def text(self) -> str:
        """The form kept in a snapshot mark: ``date=…/<seq>``."""
        return f"{self.date}/{self.sequence:0{_SEQUENCE_DIGITS}d}"

    @classmethod
    def from_text(cls, text: str) -> SegmentName | None:
        date, _, digits = text.partition("/")
        return cls(int(digits), date) if digits.isdigit() and date else None


def date_of(ns: int) -> str:
    return timestamps.format_ns(ns)[:10]


def plausible_date(date: str, now: int) -> bool:
    """Whether a segment dated ``date`` can have been written by now: not after the day of
    ``now`` plus the clock skew allowance."""
    return date <= date_of(now + MAX_CLOCK_SKEW_NS)


def segment_date(now: int, previous: SegmentName | None) -> str:
    """The ``date=`` partition of a segment written at ``now``: the writer's day, never
    before the previous segment's (so a clock stepping back cannot reorder names) — unless
    that one is dated beyond any clock skew: a segment once dated 2099 must not file every
    later one under 2099 (``segments`` lists past it)."""
    today = date_of(now)
    if previous is None or not plausible_date(previous.date, now):
        return today
    return max(today, previous.date)


@dataclass(frozen=True)
class Segment:
    name: SegmentName
    lines: list[LogLine]


class SegmentLog:
    """The segments, snapshot marks and lease object of the history at ``path``."""

    def __init__(
        self, backend: ObjectBackend, path: str, *, instruments: Instruments | None = None
    ) -> None:
        self.backend = backend
        self._path = path.strip("/")
        self._instruments = instruments or Instruments.unregistered()

    def name(self, *parts: str) -> str:
        return "/".join(p for p in (self._path, LOG_DIR, *parts) if p)

    def describe(self, *parts: str) -> str:
        return self.backend.describe(self.name(*parts))

    def kind_prefix(self, kind: Kind) -> str:
        return self.name(f"kind={kind.value}") + "/"

    def segments(
        self, kind: Kind, after: SegmentName | None = None, now: int | None = None
    ) -> list[SegmentName]:
        """The kind's segment names after ``after`` (all when ``None``), in append order.

        Listed from ``after``'s name, as names sort in append order — unless ``after`` is
        dated beyond ``now`` plus the clock skew allowance (written by a clock that was
        off): the writer's next segments are filed under its own day, which sorts before
        it, so the whole kind is listed and filtered by sequence."""
        prefix = self.kind_prefix(kind)
        start = self.name(after.relative(kind)) if after is not None else ""
        if after is not None and now is not None and not plausible_date(after.date, now):
            start = ""
        names = []
        for name in self.backend.list(prefix, start):
            parsed = SegmentName.parse(self.name_relative(name))
            if parsed is not None and (after is None or parsed > after):
                names.append(parsed)
        return sorted(names)

    def name_relative(self, name: str) -> str:
        return name.removeprefix(self.name() + "/")

    def create(self, kind: Kind, segment: SegmentName, data: bytes) -> None:
        """Create the segment; ``Conflict`` if another writer holds that name."""
        name = self.name(segment.relative(kind))
        try:
            self.backend.upload(name, data, 0)
        except Conflict:
            if self._content(name) == data:
                return  # our own upload, retried after it landed
            raise

    def _content(self, name: str) -> bytes | None:
        for _ in range(_READ_ATTEMPTS):
            generation = self.backend.generation(name)
            if generation is None:
                return None
            try:
                return self.backend.download(name, generation)
            except Moved:
                continue
        raise StoreError(f"{self.backend.describe(name)} kept changing while being read")

    def read(self, kind: Kind, segment: SegmentName) -> Segment:
        """The lines of one segment. An unreadable one is copied to ``quarantine/`` (never
        overwritten), counted and logged; its whole lines before the damage are kept."""
        name = self.name(segment.relative(kind))
        data = self._content(name)
        if data is None:
            return Segment(segment, [])
        try:
            return Segment(segment, decode_segment(data, self.backend.describe(name)))
        except SegmentError as err:
            if getattr(self.backend, "read_only", False):  # a read-only command: say so
                raise EventFileError(self.backend.describe(name), err.reason) from None
            self._quarantine(kind, segment, data, err)
            return Segment(segment, err.partial)

    def _quarantine(self, kind: Kind, segment: SegmentName, data: bytes, err: SegmentError) -> None:
        aside = self.name(QUARANTINE_DIR, segment.relative(kind) + ".corrupt")
        with contextlib.suppress(Conflict):  # quarantined before (read again at start-up)
            self.backend.upload(aside, data, 0)
        self._instruments.corrupt_objects.labels(kind=kind.value).inc()
        log.error(
            "segment %s cannot be read whole (%s); copied to %s, keeping its %d whole lines",
            self.backend.describe(self.name(segment.relative(kind))),
            err.reason,
            self.backend.describe(aside),
            len(err.partial),
        )

    # snapshot marks ----------------------------------------------------------------------

    def mark_name(self, kind: Kind) -> str:
        return self.name(SNAPSHOTS_DIR, event_file(kind))

    def read_mark(self, kind: Kind) -> bytes | None:
        return self._content(self.mark_name(kind))

    def write_mark(self, kind: Kind, data: bytes) -> None:
        """Replace the mark, whatever its generation: only the lease holder writes it."""
        self._replace(self.mark_name(kind), data)

    def summary_state_name(self, kind: Kind) -> str:
        return self.name(SUMMARIES_DIR, event_file(kind))

    def read_summary_state(self, kind: Kind) -> bytes | None:
        """The summary state beside ``kind``'s snapshot; ``None`` when there is none."""
        return self._content(self.summary_state_name(kind))

    def write_summary_state(self, kind: Kind, data: bytes) -> None:
        """Replace the summary state, whatever its generation (only the lease holder
        snapshots, and so writes it)."""
        self._replace(self.summary_state_name(kind), data)

    def _replace(self, name: str, data: bytes) -> None:
        for _ in range(_READ_ATTEMPTS):
            generation = self.backend.generation(name) or 0
            try:
                self.backend.upload(name, data, generation)
                return
            except Conflict:
                continue
        raise StoreError(f"{self.backend.describe(name)} kept changing while being written")
