"""Event files as the Go megamon's decoder reads them, over generated spellings.

internal/records/events.go: ``EventRecords``/``UpEvent`` go through ``encoding/json``, which
matches keys case-insensitively, leaves a field false for ``null`` or a missing key, and
ignores unknown keys. Any such spelling of a history megamon writes must decode to the same
record, and re-encode to the bytes megamon (and the Go megamon) writes.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from megamon.codec import history
from megamon.domain import timestamps

T0 = timestamps.parse("2026-05-04T18:00:00Z")


def _spellings(key: str) -> st.SearchStrategy[str]:
    """``key`` with every letter in either case."""
    return st.tuples(*(st.sampled_from(sorted({c.lower(), c.upper()})) for c in key)).map("".join)


@st.composite
def _event(draw: st.DrawFn, up: bool, expected_down: bool, ts: int) -> dict[str, Any]:
    event: dict[str, Any] = {}
    if up or draw(st.booleans()):  # a false "up" may be missing, or null
        event[draw(_spellings("up"))] = up if up else draw(st.sampled_from([False, None]))
    if expected_down:
        event[draw(_spellings("ed"))] = True
    elif draw(st.booleans()):
        event[draw(_spellings("ed"))] = draw(st.sampled_from([False, None]))
    if draw(st.booleans()):
        event["note"] = draw(st.integers(-100, 100))  # unknown keys are ignored
    event[draw(_spellings("ts"))] = timestamps.format_ns(ts)
    return event


@st.composite
def _history(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(a Go-spelled file, the canonical file) of one key's alternating history."""
    n = draw(st.integers(1, 8))
    canonical, spelled = [], []
    ts = T0
    for i in range(n):
        up = i % 2 == 1
        expected_down = not up and draw(st.booleans())
        ts += draw(st.integers(1, 10**12))
        canonical.append({"up": up, **({"ed": True} if expected_down else {}), "ts": ""})
        canonical[-1]["ts"] = timestamps.format_ns(ts)
        spelled.append(draw(_event(up, expected_down, ts)))
    key = draw(_spellings("upEvents"))
    return (
        orjson.dumps({"np": {key: spelled}}),
        orjson.dumps({"np": {"upEvents": canonical}}),
    )


@settings(max_examples=100, deadline=None)
@given(_history())
def test_any_go_spelling_reads_as_the_canonical_history(files: tuple[bytes, bytes]) -> None:
    spelled, canonical = files
    records = history.decode_event_file(spelled, "node-pools.json")
    assert records == history.decode_event_file(canonical, "node-pools.json")
    assert history.encode_event_file(records) == canonical
