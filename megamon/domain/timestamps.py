"""RFC 3339 timestamps as integer nanoseconds since the Unix epoch.

Python's ``datetime`` stops at microseconds, but the Go megamon writes nanoseconds and every
duration megamon reports must match it to the nanosecond. So timestamps live in memory as
``int`` nanoseconds and are only turned into text here, in the Go ``time.RFC3339Nano`` layout:
UTC, a trailing ``Z``, and a fraction of up to nine digits with trailing zeros removed
(``2026-05-04T18:30:00Z``, ``2026-05-04T18:23:24.1234Z``).

Only timestamps in [1970, 2100) are accepted (``MIN_NS``, ``MAX_NS``), and Go's zero time
(``GO_ZERO_NS``), which the Go megamon writes for a time it never set: one event stamped in
year 9999 would otherwise become the floor of every later event of its key (events are never
stamped before the last one) and push durations past what Go's ``time.Duration`` and a JSON
integer hold. Within that horizon no single duration comes near 2⁶³ ns (292 years); sums of
many are saturated at ``MAX_DURATION_NS`` by ``add``, never overflowing.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

NANOS_PER_SECOND = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_ORDINAL = _EPOCH.toordinal()
_SECONDS_PER_DAY = 86_400

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


MIN_NS = 0
"""1970-01-01T00:00:00Z: nothing megamon observes happened earlier."""
MAX_NS = 4_102_444_800 * NANOS_PER_SECOND
"""2100-01-01T00:00:00Z, the horizon: later is a typo or an attack, not an observation."""
MAX_CLOCK_SKEW_NS = 3600 * NANOS_PER_SECOND
"""One hour: far more than replicas' clocks disagree, far less than a bad timestamp is off.
An event may be stamped up to this far ahead of another replica's clock (the append rule),
and a history loaded at ``now`` holds nothing dated after ``now`` plus this (docs/history.md)."""
MAX_DURATION_NS = 2**63 - 1
"""The longest duration (Go's ``time.Duration``, a signed 64-bit integer of nanoseconds)."""


class TimestampError(ValueError):
    """Text that is not an RFC 3339 timestamp with at most nine fractional digits, or one
    outside [1970, 2100)."""


GO_ZERO_NS = -62_135_596_800 * NANOS_PER_SECOND
"""``0001-01-01T00:00:00Z``, Go's zero ``time.Time``: what the Go megamon writes for a time
it never set. Accepted as the one exception to the horizon, so a history or a ``--now`` that
carries it summarizes as the Go megamon summarizes it (durations saturate), rather than
being refused."""


def check(ns: int, text: object = None) -> int:
    """``ns`` when it is within the horizon (or Go's zero time), else a ``TimestampError``
    naming it."""
    if MIN_NS <= ns < MAX_NS or ns == GO_ZERO_NS:
        return ns
    shown = text if text is not None else ns
    if ns < MIN_NS:
        raise TimestampError(f"{shown!r} is before 1970-01-01T00:00:00Z")
    raise TimestampError(f"{shown!r} is beyond the horizon 2100-01-01T00:00:00Z")


def saturated(ns: int) -> int:
    """A duration clipped to [0, ``MAX_DURATION_NS``]."""
    return 0 if ns < 0 else min(ns, MAX_DURATION_NS)


def add(a: int, b: int) -> int:
    """``a + b`` of two durations, saturating at ``MAX_DURATION_NS`` instead of overflowing
    (two arguments, no ``min``: the summarizer calls it per period)."""
    total = a + b
    return total if total <= MAX_DURATION_NS else MAX_DURATION_NS


def elapsed(start: int, end: int) -> int:
    """``end - start``, zero when negative (skewed clocks), saturated when huge."""
    length = end - start
    if length < 0:
        return 0
    return length if length <= MAX_DURATION_NS else MAX_DURATION_NS


_FRACTION_SCALE = (0, 10**8, 10**7, 10**6, 10**5, 10**4, 10**3, 10**2, 10, 1)
_ONE_SECOND = timedelta(seconds=1)
_NAIVE_EPOCH = datetime(1970, 1, 1)


@lru_cache(maxsize=1 << 16)
def _utc_seconds(head: str) -> int | None:
    """Epoch seconds of ``YYYY-MM-DDTHH:MM:SS``; cached, as histories share their seconds."""
    if not head.isascii():
        return None
    try:
        moment = datetime.fromisoformat(head)
    except ValueError:
        return None
    if moment.isoformat() != head:  # fromisoformat is laxer than RFC 3339
        return None
    return (moment - _NAIVE_EPOCH) // _ONE_SECOND


def _fast_utc(text: str) -> int | None:
    """The common case, ``YYYY-MM-DDTHH:MM:SS[.fraction]Z``, without a regex; else ``None``."""
    n = len(text)
    if n < 20 or text[-1] != "Z" or text[10] != "T" or text[4] != "-" or text[13] != ":":
        return None
    if n > 20 and (text[19] != "." or n > 30):
        return None
    fraction = text[20:-1]
    if n > 20 and not (fraction.isascii() and fraction.isdigit()):
        return None
    seconds = _utc_seconds(text[:19])
    if seconds is None:
        return None
    nanos = int(fraction) * _FRACTION_SCALE[len(fraction)] if fraction else 0
    return seconds * NANOS_PER_SECOND + nanos


def parse(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp (any offset, 0–9 fraction
    digits) within [1970, 2100); anything else is a ``TimestampError``."""
    return check(_parse(text), text)


def _parse(text: str) -> int:
    fast = _fast_utc(text)
    if fast is not None:
        return fast
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise TimestampError(f"not an RFC 3339 timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    if hour > 23 or minute > 59 or second > 59:
        raise TimestampError(f"time of day out of range: {text!r}")
    try:
        days = datetime(year, month, day).toordinal() - _EPOCH_ORDINAL
    except ValueError as err:
        raise TimestampError(f"invalid date in {text!r}: {err}") from None
    seconds = days * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
    if m.group(9) is not None:
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    fraction = m.group(7)
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    return seconds * NANOS_PER_SECOND + nanos


_MIN_TEXT_NS = GO_ZERO_NS
"""0001-01-01T00:00:00Z, the first instant RFC 3339 can write."""


@lru_cache(maxsize=1 << 16)
def _utc_text(seconds: int) -> str:
    return (_NAIVE_EPOCH + timedelta(seconds=seconds)).isoformat()


_MAX_TEXT_NS = 253_402_300_799 * NANOS_PER_SECOND + NANOS_PER_SECOND - 1
"""9999-12-31T23:59:59.999999999Z, the last instant RFC 3339 can write."""


def format_ns(ns: int) -> str:
    """The Go ``RFC3339Nano`` text of a timestamp, always in UTC with a trailing ``Z``.

    Never raises: an instant RFC 3339 cannot write (before year 1 or after 9999, which only
    arithmetic on a timestamp could make) is written as the nearest one it can."""
    ns = min(max(ns, _MIN_TEXT_NS), _MAX_TEXT_NS)
    seconds, nanos = divmod(ns, NANOS_PER_SECOND)
    text = _utc_text(seconds)
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


def from_datetime(moment: datetime) -> int:
    """Nanoseconds of an aware ``datetime`` (microsecond precision, as datetimes have)."""
    if moment.tzinfo is None:
        raise TimestampError(f"naive datetime {moment!r}: a time zone is required")
    delta = moment - _EPOCH
    return (delta.days * _SECONDS_PER_DAY + delta.seconds) * NANOS_PER_SECOND + (
        delta.microseconds * 1000
    )


def seconds(ns: int) -> float:
    """A duration in nanoseconds as float seconds, the unit of Prometheus."""
    return ns / NANOS_PER_SECOND
