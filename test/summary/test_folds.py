"""The summaries as folds equal the batch summaries, to the nanosecond.

Each fold (``SummaryFold``, ``PeriodFold``, ``AvailabilityFold``) is checked against its
definition, the batch function it folds (``settle``, ``record_periods``,
``resource_availability``), on random histories split at random points and folded piece by
piece. The histories go through megamon's own encoder (the Go-format event file with its
reasons, as snapshots are written, and the archive entry) and back, so they are what megamon
reads; so are histories megamon's recorder wrote (``test/fleet/written.py``: snapshots,
segments, archives, unobserved time between runs), read back as ``megamon report`` reads
them; the Go megamon's own cases (``test_summarizing.CASES``) are folded too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from megamon.cli.report import read_resources
from megamon.codec.history import (
    decode_archive_entry,
    decode_event_file,
    encode_archive_entry,
    encode_event_file,
)
from megamon.domain.events import (
    FLAG_EXPECTED_DOWN,
    FLAG_FAILED,
    FLAG_UP,
    ArchiveEntry,
    EventRecord,
    reason_bits,
)
from megamon.domain.interruptions import REASONS
from megamon.domain.kinds import Kind
from megamon.domain.timestamps import parse
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import Resource
from megamon.summary.chiptally import AvailabilityFold
from megamon.summary.distributions import PeriodFold, record_periods
from megamon.summary.summarizing import Extensions, SummaryFold, extends, settle, summary_at
from test.fleet.test_written_histories import KINDS as WRITTEN_KINDS
from test.fleet.test_written_histories import RESOURCES as WRITTEN_RESOURCES
from test.fleet.test_written_histories import runs as written_runs
from test.fleet.written import Run, write_runs
from test.summary.foldcheck import (
    EVERY_SPLIT_UP_TO,
    SAMPLED_SPLITS,
    fold_problems,
    prefix,
    settled_figures,
    split_points,
)
from test.summary.test_summarizing import CASES

T0 = 1_700_000_000 * 10**9
S = 10**9
H = 3600 * S
GO_ZERO = parse("0001-01-01T00:00:00Z")


@st.composite
def events(draw: st.DrawFn) -> tuple[int, int]:
    """One event: a step from the previous (sometimes none, sometimes back: skewed clocks)
    and its flags, a down one with a reason."""
    step = draw(st.one_of(st.integers(0, 4 * 3600), st.integers(-600, -1), st.just(0)))
    up = draw(st.booleans())
    if up:
        return step, FLAG_UP
    flags = draw(st.sampled_from([0, FLAG_EXPECTED_DOWN, FLAG_FAILED]))
    return step, flags | reason_bits(draw(st.sampled_from(["", *REASONS])))


@st.composite
def records(draw: st.DrawFn) -> EventRecord:
    """A history as megamon writes and reads it: through the Go-format event file."""
    start = draw(st.sampled_from([T0, GO_ZERO]))
    t, ts, flags = start, [], bytearray()
    for step, f in draw(st.lists(events(), max_size=30)):
        # from Go's zero time (the one instant before 1970 a history holds) to today: a
        # duration beyond Go's largest
        t = (T0 if step else t) if t == GO_ZERO else t + step * S
        ts.append(t)
        flags.append(f)
    record = EventRecord.trusted(tuple(ts), bytes(flags))
    if draw(st.booleans()):
        return decode_event_file(encode_event_file({"k": record}), "test")["k"]
    entry = ArchiveEntry(kind="nodepool", key="k", retired_at=t, record=record)
    return decode_archive_entry(encode_archive_entry(entry), "test").record


@st.composite
def splits(draw: st.DrawFn) -> tuple[EventRecord, list[EventRecord]]:
    """A record and the growing prefixes it is folded through, ending with itself."""
    record = draw(records())
    cuts = sorted(draw(st.sets(st.integers(0, len(record)), max_size=5)) | {len(record)})
    return record, [prefix(record, n) for n in cuts]


@st.composite
def gap_sets(draw: st.DrawFn) -> tuple[tuple[int, int], ...]:
    """Sorted, disjoint unobserved gaps around ``T0`` (as ``unobserved_gaps`` gives)."""
    bounds = sorted(draw(st.sets(st.integers(-3600, 40 * 3600), max_size=8)))
    pairs = list(zip(bounds[::2], bounds[1::2], strict=False))
    return tuple((T0 + a * S, T0 + b * S) for a, b in pairs if b > a)


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(splits())
def test_the_summary_fold_is_settle_piece_by_piece(
    split: tuple[EventRecord, list[EventRecord]],
) -> None:
    record, pieces = split
    fold = SummaryFold()
    for piece in pieces:
        assert fold.fold(piece).settled() == settle(piece)
    assert fold.settled() == settle(record)


@SETTINGS
@given(splits())
def test_the_period_fold_is_record_periods_piece_by_piece(
    split: tuple[EventRecord, list[EventRecord]],
) -> None:
    _, pieces = split
    fold, closed = PeriodFold(), []
    for piece in pieces:
        closed += fold.fold(piece)
        first = [fold.provisioning] if fold.provisioning is not None else []
        assert first + closed == record_periods(piece)


@SETTINGS
@given(splits(), gap_sets())
def test_the_availability_fold_is_resource_availability_piece_by_piece(
    split: tuple[EventRecord, list[EventRecord]], gaps: tuple[tuple[int, int], ...]
) -> None:
    _, pieces = split
    fold = AvailabilityFold()
    for piece in pieces:
        if not piece.timestamps:
            continue
        fold.fold(piece, gaps)
        assert (fold.up, fold.down, fold.latest, fold.growth()) == settled_figures(piece, gaps)


def test_extends_is_an_append_only() -> None:
    a = EventRecord.trusted((1, 2), b"\x00\x01")
    assert extends(EventRecord.trusted((1, 2, 3), b"\x00\x01\x00"), a)
    assert extends(a, a)
    assert not extends(EventRecord.trusted((1, 3, 4), b"\x00\x01\x00"), a)
    assert not extends(EventRecord.trusted((1, 2, 3), b"\x00\x00\x00"), a)
    assert not extends(EventRecord.trusted((1,), b"\x00"), a)


def test_extensions_answer_as_extends_does_comparing_each_pair_once() -> None:
    """A report's folds share one ``Extensions``: each pair of records is compared once,
    and the answer is ``extends``'s, for pairs that extend and pairs that do not."""
    a = EventRecord.trusted((1, 2), b"\x00\x01")
    grown = EventRecord.trusted((1, 2, 3), b"\x00\x01\x00")
    other = EventRecord.trusted((1, 3, 4), b"\x00\x01\x00")
    extended = Extensions()
    with patch("megamon.summary.summarizing.extends", side_effect=extends) as compared:
        for _ in range(3):
            assert [extended(grown, a), extended(other, a), extended(a, grown)] == [
                extends(grown, a),
                extends(other, a),
                extends(a, grown),
            ]
    assert compared.call_count == 3


@pytest.mark.parametrize("name", CASES)
def test_the_go_summarizers_cases_fold_to_its_figures_from_every_split(name: str) -> None:
    """The Go megamon's own cases (and the rules' cases beside them): folded through every
    split point, the summary at the case's ``now`` is the Go figure."""
    case = CASES[name]
    for cut in range(len(case.record) + 1):
        fold = SummaryFold().fold(prefix(case.record, cut)).fold(case.record)
        assert summary_at(case.record, fold.settled(), case.now) == case.want


@pytest.mark.parametrize(
    "gaps",
    [(), ((T0 + 2 * H, T0 + 3 * H),), ((T0 + 12 * H, T0 + 13 * H),), ((T0 + 9 * H, T0 + 11 * H),)],
)
def test_a_failed_band_across_an_instant_up_is_one_band_as_the_definition_reads_it(
    gaps: tuple[tuple[int, int], ...],
) -> None:
    """Failed while provisioning, up for no time, failed again: the definition merges the two
    failed bands (a zero-length band does not part them), so the whole is provisioning until
    a gap cuts it; after the gap it is down. The fold reads it the same, split anywhere."""
    failed = FLAG_FAILED
    record = EventRecord.trusted(
        (T0, T0 + 10 * H, T0 + 10 * H, T0 + 20 * H, T0 + 30 * H),
        bytes((failed, FLAG_UP, failed, failed, FLAG_UP)),
    )
    for cut in range(1, len(record) + 1):
        for whole in (prefix(record, cut), record):
            fold = AvailabilityFold().fold(prefix(record, cut), gaps).fold(whole, gaps)
            assert (fold.up, fold.down, fold.latest, fold.growth()) == settled_figures(whole, gaps)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(written_runs(), st.randoms(use_true_random=False))
def test_histories_megamon_wrote_fold_to_the_batch_figures_split_anywhere(
    runs: list[Run], random: Random
) -> None:
    """Histories written by megamon's recorder (snapshots with reasons, segments, archives,
    runs with unobserved time between them), read back as ``megamon report`` reads them:
    every lifetime, live or archived, folded in random pieces equals the batch figures."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "c"
        end = write_runs(root, T0, runs, WRITTEN_RESOURCES)
        resources = list(read_resources(LocalEventStore(root), WRITTEN_KINDS, {}, end))
    for resource in resources:
        record = resource.record
        cuts = sorted({random.randint(0, len(record)) for _ in range(3)} | {len(record)})
        assert fold_problems(resource, cuts) == []


LONG = EventRecord.trusted(
    tuple(T0 + i * H for i in range(EVERY_SPLIT_UP_TO + 10)),
    bytes(FLAG_UP if i % 3 else FLAG_FAILED for i in range(EVERY_SPLIT_UP_TO + 10)),
)


def test_the_split_points_of_a_written_history_are_every_one_or_the_same_draw_every_run() -> None:
    """``foldcheck.split_points`` (the end of every emulator scenario): a short record is
    split at every point and folded event by event; a long one at points its key draws,
    the same every time, inside it."""
    short = Resource(Kind.NODEPOOL, "np", prefix(LONG, 3), {})
    assert split_points(short) == [[0, 3], [1, 3], [2, 3], [0, 1, 2, 3]]
    long = Resource(Kind.NODEPOOL, "np", LONG, {})
    drawn = split_points(long)
    assert drawn == split_points(Resource(Kind.NODEPOOL, "np", LONG, {}))
    assert drawn != split_points(Resource(Kind.NODEPOOL, "other", LONG, {}))
    assert len(drawn) == SAMPLED_SPLITS + 1
    assert all(0 < cut < len(LONG) for cuts in drawn for cut in cuts[:-1])
    assert all(cuts == sorted(set(cuts)) and cuts[-1] == len(LONG) for cuts in drawn)
    assert all(fold_problems(long, cuts) == [] for cuts in drawn)
