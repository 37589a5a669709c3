"""Reading one kind's history: the snapshot (the Go-format event file) and the log after it.

The snapshot mark (``log/snapshots/<event file>``) names the last segment the snapshot holds;
the segments after it are folded on top. With no mark — a file the Go megamon wrote, or a
history from before the log — the file is the starting snapshot and every segment is folded
(idempotent: events already in the file are not added twice).

The mark also holds the digest of the file it covers, and of the file before it (the mark is
written first, so a process stopped between the two writes leaves a file the mark still
vouches for). A file that is neither — deleted, restored from an older copy, replaced by hand
or by the Go megamon while megamon was stopped — is not trusted to hold what the mark says:
the history is rebuilt from the log, when folding its segments up to the mark gives exactly
the file the mark describes, and the file's own events are kept beside it. When the log no
longer holds that history (its early segments expired, or it began from a Go-format file),
the kind is refused with ``HistoryRefused``: the service stays not ready and writes nothing,
so the old coverage is never overwritten, and the commands exit with one line.

Loaded at ``now`` (an input: the caller's clock), events dated after ``now`` plus the clock
skew allowance are refused (``replay.future_lines``): left out, logged by object and key, and
returned for the caller to count. The proof that a log rebuilds a snapshot reads the log as it
was written; what is beyond the allowance is left out of the history it gives all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from megamon.codec import history as codec
from megamon.codec.log import MarkedFile, SnapshotMark, decode_mark
from megamon.domain import timestamps
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind, event_file
from megamon.errors import EventFileError, StoreError
from megamon.recording.replay import (
    Folded,
    Refused,
    fold,
    future_events,
    future_lines,
    latest_allowed,
    spans_until,
    union_records,
)
from megamon.stores.base import EventStore, Snapshot
from megamon.stores.segments import SegmentName

log = logging.getLogger(__name__)


class HistoryRefused(StoreError):
    """A kind's snapshot is not the one its mark covers and the log cannot rebuild it:
    nothing of the kind is read or written until an operator restores the file (or moves
    the mark aside, to start from the file as it is)."""


@dataclass
class LoadedKind:
    """A kind's history, where its snapshot is, and the last segment folded into it."""

    history: Folded
    file_generation: int | None
    covers: SegmentName | None
    segments_read: int = 0
    file: MarkedFile | None = None
    """The event file in the store as a mark vouches for it (its digest and the segment it
    holds); ``None`` when there is none, or it is not trusted (the history was rebuilt)."""
    rebuilt: bool = False
    """Whether the history was rebuilt from the log because the file did not match its mark."""
    refused: list[Refused] = field(default_factory=list)
    """Events and lines dated beyond ``now`` plus the clock skew allowance, not folded."""


def read_mark(store: EventStore, kind: Kind) -> SnapshotMark | None:
    """The kind's snapshot mark; ``None`` (with a warning) when unreadable."""
    data = store.log.read_mark(kind)
    if data is None:
        return None
    try:
        return decode_mark(data, store.log.backend.describe(store.log.mark_name(kind)))
    except EventFileError as err:
        log.warning("%s; folding every segment instead", err)
        return None


def load_kind(store: EventStore, kind: Kind, now: int | None = None) -> LoadedKind:
    """The history of ``kind``: snapshot, then every segment after the one it covers;
    given ``now``, without what is dated beyond ``now`` plus the clock skew allowance."""
    limit = latest_allowed(now) if now is not None else None
    loaded = _load(store, kind, limit, now)
    if limit is not None:
        records, refused = future_events(loaded.history.records, limit, event_file(kind))
        loaded.history.records = records
        loaded.history.observed = spans_until(loaded.history.observed, limit)
        loaded.refused = refused + loaded.refused
    _warn_refused(kind, loaded.refused)
    return loaded


def _load(store: EventStore, kind: Kind, limit: int | None, now: int | None) -> LoadedKind:
    snapshot = store.read(kind)
    mark = read_mark(store, kind)
    generation = int(snapshot.version) if snapshot.version is not None else None
    if mark is None:
        vouched = MarkedFile("", snapshot.digest) if snapshot.digest is not None else None
        base = _base(snapshot.records)
        return _fold_after(
            store, kind, base, None, generation=generation, vouched=vouched, limit=limit, now=now
        )
    trusted = _trusted(mark, snapshot)
    if trusted is not None:
        base = _base(snapshot.records, mark)
        after = SegmentName.from_text(trusted.covers)
        return _fold_after(
            store, kind, base, after, generation=generation, vouched=trusted, limit=limit, now=now
        )
    if mark.digest is None and snapshot.digest is not None:
        # A mark from before v0.2.0 cannot tell: the file is used as it is, as it was then.
        after = SegmentName.from_text(mark.covers)
        base = _base(snapshot.records, mark)
        return _fold_after(
            store, kind, base, after, generation=generation, vouched=None, limit=limit, now=now
        )
    return _rebuilt(store, kind, mark, snapshot, generation, limit=limit, now=now)


def _trusted(mark: SnapshotMark, snapshot: Snapshot) -> MarkedFile | None:
    """Which of the files the mark vouches for the stored one is, if any."""
    if snapshot.digest is None or mark.digest is None:
        return None
    if snapshot.digest == mark.digest:
        return MarkedFile(mark.covers, mark.digest)
    if mark.previous is not None and snapshot.digest == mark.previous.digest:
        return mark.previous
    return None


def _base(records: Mapping[str, EventRecord], mark: SnapshotMark | None = None) -> Folded:
    return Folded(
        records=dict(records),
        attrs=dict(mark.attrs) if mark is not None else {},
        observed=list(mark.observed) if mark is not None else [],
    )


def _fold_after(
    store: EventStore,
    kind: Kind,
    history: Folded,
    after: SegmentName | None,
    *,
    generation: int | None,
    vouched: MarkedFile | None,
    rebuilt: bool = False,
    limit: int | None = None,
    now: int | None = None,
) -> LoadedKind:
    last = after
    refused: list[Refused] = []
    names = store.log.segments(kind, after, now)
    for name in names:
        lines = store.log.read(kind, name).lines
        if limit is not None:
            lines, more = future_lines(lines, limit, store.log.describe(name.relative(kind)))
            refused += more
        fold(history, lines)
        last = name
    return LoadedKind(history, generation, last, len(names), vouched, rebuilt, refused)


def _rebuilt(
    store: EventStore,
    kind: Kind,
    mark: SnapshotMark,
    snapshot: Snapshot,
    generation: int | None,
    *,
    limit: int | None = None,
    now: int | None = None,
) -> LoadedKind:
    """The history from the log alone, when the log proves to hold the marked snapshot."""
    covers = SegmentName.from_text(mark.covers)
    history = Folded(records={})
    folded = 0
    for name in store.log.segments(kind):
        if covers is None or name > covers:
            break
        fold(history, store.log.read(kind, name).lines)
        folded += 1
    what = "missing" if snapshot.digest is None else "not the one its mark covers"
    if mark.digest is None or codec.file_digest(codec.encode_event_file(history.records)) != (
        mark.digest
    ):
        raise HistoryRefused(
            f"{kind}: {event_file(kind)} in {store.describe()} is {what} and the log no longer "
            f"holds what its mark {store.log.name_relative(store.log.mark_name(kind))} covers "
            f"(up to segment {mark.covers}): nothing of it is written until the file is "
            "restored, or the mark moved aside to start from the file as it is"
        )
    log.warning(
        "%s: snapshot %s in %s is %s; rebuilt from the log (%d segments up to %s)",
        kind,
        event_file(kind),
        store.describe(),
        what,
        folded,
        mark.covers,
    )
    history.records = union_records(history.records, snapshot.records)
    history.attrs = dict(mark.attrs)
    history.observed = list(mark.observed)
    loaded = _fold_after(
        store,
        kind,
        history,
        covers,
        generation=generation,
        vouched=None,
        rebuilt=True,
        limit=limit,
        now=now,
    )
    loaded.segments_read += folded
    return loaded


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
