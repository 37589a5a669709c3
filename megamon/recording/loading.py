"""Reading one kind's history: the snapshot (the Go-format event file) and the log after it.

The snapshot mark (``log/snapshots/<event file>``) names the last segment the snapshot holds;
the segments after it are folded on top. With no mark — a file the Go megamon wrote, or a
history from before the log — the file is the starting snapshot and every segment is folded
(idempotent: events already in the file are not added twice). With a mark whose generation is
not the file's (megamon stopped between the two writes, or the Go megamon wrote the file
since) the segments after the mark are folded all the same, for the same reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from megamon.codec.log import SnapshotMark, decode_mark
from megamon.domain.kinds import Kind
from megamon.errors import EventFileError
from megamon.recording.replay import Folded, fold
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


def load_kind(store: EventStore, kind: Kind) -> LoadedKind:
    """The history of ``kind``: snapshot, then every segment after the one it covers."""
    snapshot = store.read(kind)
    mark = read_mark(store, kind)
    after = SegmentName.from_text(mark.covers) if mark is not None else None
    history = Folded(
        records=dict(snapshot.records),
        attrs=dict(mark.attrs) if mark is not None else {},
        observed=list(mark.observed) if mark is not None else [],
    )
    last = after
    names = store.log.segments(kind, after)
    for name in names:
        fold(history, store.log.read(kind, name).lines)
        last = name
    generation = int(snapshot.version) if snapshot.version is not None else None
    return LoadedKind(history, generation, last, len(names))
