"""The persisted summary state: each resource's folds, so that a start-up reads them instead
of folding every history again (docs/history.md, "Summary state").

One file per kind (``log/summaries/<event file>``, which the Go megamon never reads), written
after each snapshot: per live resource, the three folds (``SummaryFold``, ``PeriodFold`` with
the histograms' contribution, ``AvailabilityFold``), the number of events they folded and a
digest of those events. It is never trusted blindly: the file names the snapshot digest it
was written beside and carries a checksum of its body, and each resource's folds are used only
when the digest of the first ``count`` events of the history as loaded is the one recorded
(the history extends what was folded). Anything else is folded from the history again.

Pure: bytes in, bytes out.
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass, field
from typing import Any

import orjson

from megamon.domain.distributions import Histogram, Shape
from megamon.domain.events import EventRecord
from megamon.summary.availability import BandState
from megamon.summary.chiptally import AvailabilityFold, Span
from megamon.summary.distributions import Contribution, Period, PeriodFold
from megamon.summary.summarizing import SummaryFold

STATE_VERSION = 2
"""The layout below; a file of another version is rebuilt from the history. Version 2: the
histograms' sums and the chip time down are integer nanoseconds (version 1 held float
seconds), and so are the provisioning periods of the folds."""
_JSON_INT = range(-(2**63), 2**63)
"""The integers JSON carries as numbers here; a larger sum (chip-nanoseconds of a big slice
over years) is written as a decimal string."""
_SUMMARY_FIELDS = len(SummaryFold().fields())
_BUCKETS = len(Histogram().counts)


class StateError(ValueError):
    """A summary state file that cannot be used (unreadable, another version, altered)."""


def prefix_digest(record: EventRecord, count: int) -> str:
    """A digest of the first ``count`` events of ``record`` (timestamps and flags)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(array("q", record.timestamps[:count]).tobytes())
    digest.update(record.flags[:count])
    return digest.hexdigest()


@dataclass(slots=True)
class Periods:
    """The histograms' part of a resource: its fold, and what it counted under which shape."""

    fold: PeriodFold
    shape: Shape
    chips: int
    contribution: Contribution


@dataclass(slots=True)
class ResourceState:
    """One resource's folds, all of its first ``count`` events (``digest``)."""

    count: int
    digest: str
    summary: SummaryFold | None = None
    periods: Periods | None = None
    availability: AvailabilityFold | None = None


@dataclass(slots=True)
class KindState:
    """One kind's summary state, as written beside the snapshot whose digest is
    ``snapshot``; ``gaps``: the unobserved gaps the availability folds were made under."""

    kind: str
    snapshot: str
    gaps: tuple[Span, ...] = ()
    resources: dict[str, ResourceState] = field(default_factory=dict)


# -- encoding ---------------------------------------------------------------------------------


def _periods(part: Periods) -> dict[str, Any]:
    fold = part.fold
    return {
        "fold": [
            fold.count,
            fold.first,
            fold.failed,
            fold.up_seen,
            _period(fold.provisioning) if fold.provisioning is not None else None,
            fold.up_since,
            list(fold.down) if fold.down is not None else None,
            fold.was_up,
        ],
        "shape": [part.shape.accelerator, part.shape.topology, part.shape.spot],
        "chips": part.chips,
        "contribution": [
            [measure, label, _sparse(h.counts), _wide(h.total_ns), h.count, _wide(lost[0])]
            for (measure, label), (h, lost) in part.contribution.items()
        ],
    }


def _period(period: Period) -> list[Any]:
    """A provisioning period: its nanoseconds too may pass 64 bits (a history from Go's zero
    time)."""
    measure, label, ns = period
    return [measure, label, _wide(ns)]


def _wide(value: int) -> int | str:
    """An integer sum as JSON holds it exactly: a number, or beyond 64 bits a string."""
    return value if value in _JSON_INT else str(value)


def _sparse(counts: list[int]) -> list[int]:
    """The non-zero buckets as index, count pairs, flattened (a resource fills few)."""
    return [x for i, count in enumerate(counts) if count for x in (i, count)]


def _dense(pairs: list[int]) -> list[int]:
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


def encode_state(state: KindState) -> bytes:
    """The file: a header naming the version, kind, snapshot and checksum, then the body."""
    resources = {
        key: {
            "count": r.count,
            "digest": r.digest,
            "summary": r.summary.fields() if r.summary is not None else None,
            "periods": _periods(r.periods) if r.periods is not None else None,
            "availability": _availability(r.availability) if r.availability else None,
        }
        for key, r in state.resources.items()
    }
    body = orjson.dumps({"gaps": [list(g) for g in state.gaps], "resources": resources})
    header = {
        "version": STATE_VERSION,
        "kind": state.kind,
        "snapshot": state.snapshot,
        "checksum": hashlib.sha256(body).hexdigest(),
    }
    return orjson.dumps(header) + b"\n" + body


# -- decoding ---------------------------------------------------------------------------------


def _int(value: object) -> int:
    if type(value) is not int:
        raise StateError(f"expected an integer, found {value!r}")
    return value


def _wide_int(value: object) -> int:
    """A sum written by ``_wide``."""
    if type(value) is str and value.lstrip("-").isdigit() and value.isascii():
        return int(value)
    return _int(value)


def _bool(value: object) -> bool:
    if type(value) is not bool:
        raise StateError(f"expected true or false, found {value!r}")
    return value


def _ints(values: Any) -> list[int]:
    if type(values) is not list or (values and set(map(type, values)) != {int}):
        raise StateError(f"expected integers, found {values!r}")
    return values


def _decode_summary(raw: Any) -> SummaryFold:
    values = _ints(raw)
    if len(values) != _SUMMARY_FIELDS:
        raise StateError("a summary fold of another layout")
    return SummaryFold.from_fields(values)


def _decode_periods(raw: Any) -> Periods:
    f = raw["fold"]
    provisioning = f[4]
    down = f[6]
    fold = PeriodFold(
        count=_int(f[0]),
        first=_int(f[1]),
        failed=_bool(f[2]),
        up_seen=_bool(f[3]),
        provisioning=(str(provisioning[0]), str(provisioning[1]), _wide_int(provisioning[2]))
        if provisioning is not None
        else None,
        up_since=_int(f[5]),
        down=(_int(down[0]), str(down[1])) if down is not None else None,
        was_up=_bool(f[7]),
    )
    accelerator, topology, spot = raw["shape"]
    contribution: Contribution = {}
    for measure, label, counts, total_ns, count, lost in raw["contribution"]:
        pairs = _ints(counts)
        if len(pairs) % 2 or any(not 0 <= i < _BUCKETS for i in pairs[::2]):
            raise StateError("a histogram of another bucket layout")
        histogram = Histogram(_dense(pairs), _wide_int(total_ns), _int(count))
        contribution[(str(measure), str(label))] = (histogram, [_wide_int(lost)])
    shape = Shape(str(accelerator), str(topology), _bool(spot))
    return Periods(fold, shape, _int(raw["chips"]), contribution)


def _decode_availability(raw: Any) -> AvailabilityFold:
    count, latest, first_up_at, was_up, expected, state, merged, piece, up, down = raw
    return AvailabilityFold(
        count=_int(count),
        latest=_int(latest),
        first_up_at=_int(first_up_at) if first_up_at is not None else None,
        was_up=_bool(was_up),
        expected=_bool(expected),
        state=BandState(state),
        merged=BandState(merged) if merged is not None else None,
        piece=_int(piece),
        up=_int(up),
        down=_int(down),
    )


def _header(line: bytes, body: bytes) -> dict[str, Any]:
    """The header, checked against this layout and the body's checksum."""
    header = orjson.loads(line)
    if not isinstance(header, dict):
        raise StateError("no header")
    if header.get("version") != STATE_VERSION:
        raise StateError(f"version {header.get('version')!r}, not {STATE_VERSION}")
    if header.get("checksum") != hashlib.sha256(body).hexdigest():
        raise StateError("its checksum does not match its content")
    return header


def _resource(r: Any) -> ResourceState:
    return ResourceState(
        count=_int(r["count"]),
        digest=str(r["digest"]),
        summary=_decode_summary(r["summary"]) if r["summary"] is not None else None,
        periods=_decode_periods(r["periods"]) if r["periods"] is not None else None,
        availability=_decode_availability(r["availability"])
        if r["availability"] is not None
        else None,
    )


def decode_state(data: bytes) -> KindState:
    """The state in ``data``; ``StateError`` saying what is wrong with it."""
    line, _, body = data.partition(b"\n")
    try:
        header = _header(line, body)
        raw = orjson.loads(body)
        gaps = tuple((_int(a), _int(b)) for a, b in raw["gaps"])
        resources = {str(key): _resource(r) for key, r in raw["resources"].items()}
        return KindState(str(header["kind"]), str(header["snapshot"]), gaps, resources)
    except StateError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as err:
        raise StateError(f"unreadable ({err})") from None
