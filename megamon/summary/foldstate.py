"""The persisted summary state: each resource's folds, so that a start-up reads them instead
of folding every history again (docs/history.md, "Summary state").

One file per kind (``log/summaries/<event file>``, which the Go megamon never reads), written
after each snapshot: per live resource, the three folds (``SummaryFold``, ``PeriodFold`` with
the histograms' contribution, ``AvailabilityFold``), the number of events they folded and the
first and last of those events. It is never trusted blindly:

- the file names the digest of the snapshot it was written beside, and is used only beside
  that very file (the event log vouches for the file's bytes by that digest), and it carries a
  checksum of its body;
- only folds of a prefix of the snapshot's record are written (``ReportAssembly``);
- a resource's folds are used only when the history as loaded still has the first and the
  last folded event where they were. The first ``count`` events of a vouched snapshot's
  record are the ones folded; what can change them after it — a later lifetime of the key,
  an older event put in order by a program writing beside megamon — moves the first or the
  ``count``-th event. So the check is two comparisons per resource, not a pass over its
  history: a start-up costs what the resources are, not what their histories are.

Anything else is folded from the history again. Integers are exact whatever their size
(msgspec writes and reads JSON integers of any width: a chip time down over years passes 64
bits, and Go's zero time lies below them).

Pure: bytes in, bytes out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from megamon.domain.distributions import Histogram, Shape
from megamon.domain.events import EventRecord
from megamon.summary.availability import BandState
from megamon.summary.chiptally import AvailabilityFold, Span
from megamon.summary.distributions import Contribution, PeriodFold
from megamon.summary.summarizing import SummaryFold

STATE_VERSION = 2
"""The layout below; a file of another version is rebuilt from the history. Version 2: the
histograms' sums and the chip time down are integer nanoseconds (version 1 held float
seconds), and so are the provisioning periods of the folds; each resource names its first
and last folded event instead of a digest of them; rows are arrays."""
_SUMMARY_FIELDS = len(SummaryFold().fields())
_BUCKETS = len(Histogram().counts)


class StateError(ValueError):
    """A summary state file that cannot be used (unreadable, another version, altered)."""


Bounds = tuple[int, int, int]
"""The first folded event's timestamp, the last folded event's timestamp and flags."""


def bounds(record: EventRecord, count: int) -> Bounds | None:
    """The bounds of the first ``count`` events of ``record`` (``None`` for none)."""
    if count <= 0:
        return None
    return record.timestamps[0], record.timestamps[count - 1], record.flags[count - 1]


@dataclass(slots=True)
class Periods:
    """The histograms' part of a resource: its fold, and what it counted under which shape."""

    fold: PeriodFold
    shape: Shape
    chips: int
    contribution: Contribution


@dataclass(slots=True)
class ResourceState:
    """One resource's folds, all of its first ``count`` events (whose ``bounds`` they are)."""

    count: int
    bounds: Bounds | None
    summary: SummaryFold | None = None
    periods: Periods | None = None
    availability: AvailabilityFold | None = None

    def folded(self, record: EventRecord) -> bool:
        """Whether ``record`` (of a history loaded beside the vouched snapshot) begins with
        the events these folds took in."""
        return len(record) >= self.count and bounds(record, self.count) == self.bounds


@dataclass(slots=True)
class KindState:
    """One kind's summary state, as written beside the snapshot whose digest is
    ``snapshot``; ``gaps``: the unobserved gaps the availability folds were made under."""

    kind: str
    snapshot: str
    gaps: tuple[Span, ...] = ()
    resources: dict[str, ResourceState] = field(default_factory=dict)


# -- the layout -----------------------------------------------------------------------------
# Rows are JSON arrays, decoded by msgspec into these types: each field's type is checked while
# parsing, in C, and a row of another shape is refused whole.

_PeriodFoldRow = tuple[
    int, int, bool, bool, tuple[str, str, int] | None, int, tuple[int, str] | None, bool
]
"""``PeriodFold``: count, first, failed, up_seen, provisioning, up_since, down, was_up."""
_ContributionRow = tuple[str, str, list[int], int, int, int]
"""Measure, label, the histogram's non-zero buckets as index/count pairs, its sum (ns) and
count, and the chip-nanoseconds down."""
_AvailabilityRow = tuple[
    int, int, int | None, bool, bool, BandState, BandState | None, int, int, int
]
"""``AvailabilityFold``: count, latest, first_up_at, was_up, expected, state, merged, piece,
up, down."""


class _PeriodsRow(msgspec.Struct, array_like=True, gc=False):
    fold: _PeriodFoldRow
    shape: tuple[str, str, bool]
    chips: int
    contribution: list[_ContributionRow]


class _ResourceRow(msgspec.Struct, array_like=True, gc=False):
    count: int
    bounds: tuple[int, int, int] | None
    summary: list[int] | None
    periods: _PeriodsRow | None
    availability: _AvailabilityRow | None


class _Body(msgspec.Struct, gc=False):
    gaps: list[tuple[int, int]]
    resources: dict[str, _ResourceRow]


class _Header(msgspec.Struct):
    version: int
    kind: str
    snapshot: str
    checksum: str


_ENCODE = msgspec.json.Encoder().encode
_DECODE_BODY = msgspec.json.Decoder(_Body).decode
_DECODE_HEADER = msgspec.json.Decoder(_Header).decode


# -- encoding ---------------------------------------------------------------------------------


def _periods(part: Periods) -> list[Any]:
    fold = part.fold
    return [
        [
            fold.count,
            fold.first,
            fold.failed,
            fold.up_seen,
            fold.provisioning,
            fold.up_since,
            fold.down,
            fold.was_up,
        ],
        [part.shape.accelerator, part.shape.topology, part.shape.spot],
        part.chips,
        [
            [measure, label, _sparse(h.counts), h.total_ns, h.count, lost[0]]
            for (measure, label), (h, lost) in part.contribution.items()
        ],
    ]


def _sparse(counts: list[int]) -> list[int]:
    """The non-zero buckets as index, count pairs, flattened (a resource fills few)."""
    return [x for i, count in enumerate(counts) if count for x in (i, count)]


def _dense(pairs: list[int]) -> list[int]:
    if len(pairs) % 2 or any(not 0 <= i < _BUCKETS for i in pairs[::2]):
        raise StateError("a histogram of another bucket layout")
    counts = [0] * _BUCKETS
    for i in range(0, len(pairs) - 1, 2):
        counts[pairs[i]] = pairs[i + 1]
    return counts


def _availability(fold: AvailabilityFold) -> list[Any]:
    return [
        fold.count,
        fold.latest,
        fold.first_up_at,
        fold.was_up,
        fold.expected,
        fold.state.value,
        fold.merged.value if fold.merged is not None else None,
        fold.piece,
        fold.up,
        fold.down,
    ]


def _row(r: ResourceState) -> list[Any]:
    return [
        r.count,
        r.bounds,
        r.summary.fields() if r.summary is not None else None,
        _periods(r.periods) if r.periods is not None else None,
        _availability(r.availability) if r.availability is not None else None,
    ]


def encode_state(state: KindState) -> bytes:
    """The file: a header naming the version, kind, snapshot and checksum, then the body."""
    resources = {key: _row(r) for key, r in state.resources.items()}
    body = _ENCODE({"gaps": state.gaps, "resources": resources})
    header = {
        "version": STATE_VERSION,
        "kind": state.kind,
        "snapshot": state.snapshot,
        "checksum": hashlib.sha256(body).hexdigest(),
    }
    return _ENCODE(header) + b"\n" + body


# -- decoding ---------------------------------------------------------------------------------


def _decode_summary(values: list[int]) -> SummaryFold:
    if len(values) != _SUMMARY_FIELDS:
        raise StateError("a summary fold of another layout")
    return SummaryFold.from_fields(values)


def _decode_periods(row: _PeriodsRow) -> Periods:
    count, first, failed, up_seen, provisioning, up_since, down, was_up = row.fold
    fold = PeriodFold(
        count=count,
        first=first,
        failed=failed,
        up_seen=up_seen,
        provisioning=provisioning,
        up_since=up_since,
        down=down,
        was_up=was_up,
    )
    contribution: Contribution = {
        (measure, label): (Histogram(_dense(pairs), total_ns, times), [lost])
        for measure, label, pairs, total_ns, times, lost in row.contribution
    }
    return Periods(fold, Shape(*row.shape), row.chips, contribution)


def _decode_availability(row: _AvailabilityRow) -> AvailabilityFold:
    count, latest, first_up_at, was_up, expected, state, merged, piece, up, down = row
    return AvailabilityFold(
        count=count,
        latest=latest,
        first_up_at=first_up_at,
        was_up=was_up,
        expected=expected,
        state=state,
        merged=merged,
        piece=piece,
        up=up,
        down=down,
    )


def _header(line: bytes, body: bytes) -> _Header:
    """The header, checked against this layout and the body's checksum."""
    try:
        version = msgspec.json.decode(line, type=dict[str, Any]).get("version")
    except msgspec.DecodeError as err:
        raise StateError(f"no header ({err})") from None
    if version != STATE_VERSION:
        raise StateError(f"version {version!r}, not {STATE_VERSION}")
    header = _DECODE_HEADER(line)
    if header.checksum != hashlib.sha256(body).hexdigest():
        raise StateError("its checksum does not match its content")
    return header


def _resource(r: _ResourceRow) -> ResourceState:
    return ResourceState(
        r.count,
        r.bounds,
        _decode_summary(r.summary) if r.summary is not None else None,
        _decode_periods(r.periods) if r.periods is not None else None,
        _decode_availability(r.availability) if r.availability is not None else None,
    )


def decode_state(data: bytes) -> KindState:
    """The state in ``data``; ``StateError`` saying what is wrong with it."""
    line, _, body = data.partition(b"\n")
    try:
        header = _header(line, body)
        raw = _DECODE_BODY(body)
        resources = {key: _resource(r) for key, r in raw.resources.items()}
        return KindState(header.kind, header.snapshot, tuple(raw.gaps), resources)
    except msgspec.DecodeError as err:  # msgspec.ValidationError included
        raise StateError(f"unreadable ({err})") from None
