"""The lean reader of canonical event files agrees with the general decoder, and declines
(``None``) whatever it does not read exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from megamon.codec import history as codec
from megamon.codec.eventscan import scan_event_file
from megamon.domain import timestamps
from megamon.domain.events import EventRecord

T = 1_780_272_000 * 10**9

_TS = st.integers(timestamps.MIN_NS, timestamps.MAX_NS - 1)
"""Within the horizon: the decoder refuses anything else, and so does the scan."""
_records = st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.lists(
        st.tuples(st.integers(timestamps.MIN_NS, timestamps.MAX_NS - 1), st.integers(0, 7)),
        min_size=0,
        max_size=6,
    ).map(
        lambda events: EventRecord.trusted(tuple(t for t, _ in events), bytes(f for _, f in events))
    ),
    max_size=6,
)


@given(_records)
def test_it_reads_what_the_encoder_writes_exactly_as_the_decoder_does(
    records: dict[str, EventRecord],
) -> None:
    data = codec.encode_event_file(records)
    assert scan_event_file(data) == codec.decode_event_file(data, "x")


def test_other_spellings_of_an_event_read_as_the_decoder_reads_them() -> None:
    for data in (
        b'{"a":{"upEvents":[{"ts":"2026-06-01T00:00:00Z","up":true}]}}',  # field order
        b'{"a":{"upEvents":[{"up":true,"ed":false,"ts":"2026-06-01T01:00:00+01:00"}]}}',
    ):
        assert scan_event_file(data) == codec.decode_event_file(data, "x")


def test_anything_else_is_left_to_the_general_decoder() -> None:
    """Other whitespace, nulls, other spellings of a key (Go's decoder folds their case),
    keys neither megamon nor the Go megamon writes, wrong types, bad text, a damaged file."""
    for data in (
        b'{"a": {"upEvents": [{"up": true, "ts": "2026-06-01T00:00:00Z"}]}}',  # whitespace
        b'{"a":{"upEvents":null}}',
        b'{"a":{"upEvents":[{"up":true,"ed":null,"ts":"2026-06-01T00:00:00Z"}]}}',
        b'{"a":{"UpEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z"}]}}',  # Go's spelling
        b'{"a":{"upEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z","UP":false}]}}',  # Go's too
        b'{"a":{"upEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z","extra":1}]}}',
        b'{"a":{"upEvents":[{"up":1,"ts":"2026-06-01T00:00:00Z"}]}}',
        b'{"a":{"upEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z","f":"yes"}]}}',
        b'{"a":{"upEvents":[{"up":true,"ts":"not a time"}]}}',
        b'{"a":{"upEvents":[]}',  # cut short
        b'{"a":{"upEvents":[]},',
        b'{"a":{"upEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z"},]}}',
        b"null",
    ):
        assert scan_event_file(data) is None, data


def test_reasons_read_as_the_decoder_reads_them() -> None:
    for data in (
        b'{"a":{"upEvents":[{"up":false,"ts":"2026-06-01T00:00:00Z","reason":"maintenance"}]}}',
        b'{"a":{"upEvents":[{"up":false,"f":true,"ts":"2026-06-01T00:00:00Z","reason":"error"}]}}',
        b'{"a":{"upEvents":[{"up":false,"ts":"2026-06-01T00:00:00Z","reason":"a-new-one"}]}}',
        b'{"a":{"upEvents":[{"up":true,"ts":"2026-06-01T00:00:00Z","reason":"error"}]}}',
        b'{"a":{"upEvents":[{"up":false,"ts":"2026-06-01T00:00:00Z","\\u0065d":true}]}}',
        b'{"a":{"upEvents":[{"up":false,"ts":"2026-06-01T00:00:00Z","reason":"\\"f\\""}]}}',
    ):
        assert scan_event_file(data) == codec.decode_event_file(data, "x")
