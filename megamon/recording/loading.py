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
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from megamon.codec import history as codec
from megamon.codec.log import MarkedFile, SnapshotMark, decode_mark
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind, event_file
from megamon.errors import EventFileError, StoreError
from megamon.recording.replay import Folded, fold, union_records
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


def load_kind(store: EventStore, kind: Kind) -> LoadedKind:
    """The history of ``kind``: snapshot, then every segment after the one it covers."""
    snapshot = store.read(kind)
    mark = read_mark(store, kind)
    generation = int(snapshot.version) if snapshot.version is not None else None
    if mark is None:
        vouched = MarkedFile("", snapshot.digest) if snapshot.digest is not None else None
        base = _base(snapshot.records)
        return _fold_after(store, kind, base, None, generation=generation, vouched=vouched)
    trusted = _trusted(mark, snapshot)
    if trusted is not None:
        base = _base(snapshot.records, mark)
        after = SegmentName.from_text(trusted.covers)
        return _fold_after(store, kind, base, after, generation=generation, vouched=trusted)
    if mark.digest is None and snapshot.digest is not None:
        # A mark from before v0.2.0 cannot tell: the file is used as it is, as it was then.
        after = SegmentName.from_text(mark.covers)
        base = _base(snapshot.records, mark)
        return _fold_after(store, kind, base, after, generation=generation, vouched=None)
    return _rebuilt(store, kind, mark, snapshot, generation)


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
) -> LoadedKind:
    last = after
    names = store.log.segments(kind, after)
    for name in names:
        fold(history, store.log.read(kind, name).lines)
        last = name
    return LoadedKind(history, generation, last, len(names), vouched, rebuilt)


def _rebuilt(
    store: EventStore, kind: Kind, mark: SnapshotMark, snapshot: Snapshot, generation: int | None
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
        store, kind, history, covers, generation=generation, vouched=None, rebuilt=True
    )
    loaded.segments_read += folded
    return loaded
