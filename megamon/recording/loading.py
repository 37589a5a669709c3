"""Reading one kind's history: the snapshot (the Go-format event file) and the log after it.

The snapshot mark (``log/snapshots/<event file>``) names the last segment the snapshot holds;
the segments after it are folded on top. With no mark — a file the Go megamon wrote, or a
history from before the log — the file is the starting snapshot and every segment is folded
(idempotent: events already in the file are not added twice). With a mark whose generation is
not the file's (megamon stopped between the two writes, or the Go megamon wrote the file
since) the segments after the mark are folded all the same, for the same reason.

Loaded at ``now`` (an input: the caller's clock), events dated after ``now`` plus the clock
skew allowance are refused (``replay.future_lines``): left out, logged by object and key, and
returned for the caller to count.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from megamon.codec.log import SnapshotMark, decode_mark
from megamon.domain import timestamps
from megamon.domain.kinds import Kind, event_file
from megamon.errors import EventFileError
from megamon.recording.replay import (
    Folded,
    Refused,
    fold,
    future_events,
    future_lines,
    latest_allowed,
    spans_until,
)
from megamon.stores.base import EventStore
from megamon.stores.segments import SegmentName

log = logging.getLogger(__name__)


@dataclass
class LoadedKind:
    """A kind's history, where its snapshot is, and the last segment folded into it."""

    history: Folded
    file_generation: int | None
    covers: SegmentName | None
    segments_read: int = 0
    refused: list[Refused] = field(default_factory=list)
    """Events and lines dated beyond ``now`` plus the clock skew allowance, not folded."""


def read_mark(store: EventStore, kind: Kind) -> SnapshotMark | None:
    """The kind's snapshot mark; ``None`` (with a warning) when unreadable."""
    data = store.log.read_mark(kind)
    if data is None:
        return None
    try:
        return decode_mark(data, store.log.describe(store.log.mark_name(kind)))
    except EventFileError as err:
        log.warning("%s; folding every segment instead", err)
        return None


def load_kind(store: EventStore, kind: Kind, now: int | None = None) -> LoadedKind:
    """The history of ``kind``: snapshot, then every segment after the one it covers;
    given ``now``, without what is dated beyond ``now`` plus the clock skew allowance."""
    snapshot = store.read(kind)
    mark = read_mark(store, kind)
    after = SegmentName.from_text(mark.covers) if mark is not None else None
    limit = latest_allowed(now) if now is not None else None
    records = dict(snapshot.records)
    refused: list[Refused] = []
    if limit is not None:
        records, refused = future_events(records, limit, event_file(kind))
    history = Folded(
        records=records,
        attrs=dict(mark.attrs) if mark is not None else {},
        observed=list(mark.observed) if mark is not None else [],
    )
    if limit is not None:
        history.observed = spans_until(history.observed, limit)
    last = after
    names = store.log.segments(kind, after, now)
    for name in names:
        lines = store.log.read(kind, name).lines
        if limit is not None:
            lines, more = future_lines(lines, limit, store.log.describe(name.relative(kind)))
            refused += more
        fold(history, lines)
        last = name
    _warn_refused(kind, refused)
    generation = int(snapshot.version) if snapshot.version is not None else None
    return LoadedKind(history, generation, last, len(names), refused)


_NAMED_REFUSALS = 10
"""How many refused events a load names one by one; the rest are counted in one line."""


def _warn_refused(kind: Kind, refused: list[Refused]) -> None:
    for item in refused[:_NAMED_REFUSALS]:
        log.warning(
            "%s %s: key %r, event at %s is beyond now plus the clock skew allowance; "
            "refused (the object is kept as it is)",
            kind,
            item.source,
            item.key,
            timestamps.format_ns(item.ts),
        )
    if len(refused) > _NAMED_REFUSALS:
        log.warning(
            "%s: %d more events beyond now plus the clock skew allowance refused",
            kind,
            len(refused) - _NAMED_REFUSALS,
        )
