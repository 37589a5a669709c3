"""Unobserved time: the gaps in megamon's own coverage are a band of their own, out of
availability (the Go-named summaries keep counting a gap as the last state)."""

from __future__ import annotations

from megamon.domain.events import FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.summary.availability import (
    BandState,
    Resource,
    Window,
    resource_availability,
    unobserved_gaps,
)
from megamon.summary.summarizing import summarize

T = 1_780_272_000 * 10**9
H = 3600 * 10**9


def test_gaps_lie_between_observed_spans_and_after_the_last_when_megamon_stopped() -> None:
    spans = [(T, T + H), (T + 2 * H, T + 3 * H)]
    assert unobserved_gaps(spans, T + 3 * H, slack=60 * 10**9) == ((T + H, T + 2 * H),)
    assert unobserved_gaps(spans, T + 5 * H, slack=60 * 10**9) == (
        (T + H, T + 2 * H),
        (T + 3 * H, T + 5 * H),
    )
    assert unobserved_gaps([], T + 5 * H, slack=0) == ()  # a Go history: no record either way


def test_an_unobserved_hour_is_its_own_band_and_not_counted_as_up_or_down() -> None:
    record = EventRecord.trusted((T, T, T + 4 * H), bytes((0, FLAG_UP, 0)))
    resource = Resource(Kind.NODEPOOL, "np", record, unobserved=((T + H, T + 2 * H),))
    figures = resource_availability(resource, Window(now=T + 6 * H))
    assert figures is not None
    assert [(b.start, b.end, b.state) for b in figures.bands] == [
        (T, T + H, BandState.UP),
        (T + H, T + 2 * H, BandState.UNOBSERVED),
        (T + 2 * H, T + 4 * H, BandState.UP),
        (T + 4 * H, T + 6 * H, BandState.DOWN),
    ]
    assert figures.times.up == 3 * H and figures.times.down == 2 * H
    assert figures.times.unobserved == H
    assert figures.availability == 60.0
    # The Go-named summary keeps the Go rule: the gap counts as the last state (up).
    assert summarize(record, T + 6 * H).up_time == 4 * H
