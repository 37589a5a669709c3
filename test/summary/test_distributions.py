"""Histograms from the history (no I/O): which periods count, with which reason, and that a
retired resource stays counted while a changed one is not counted twice."""

from __future__ import annotations

import math
from bisect import bisect_left

from hypothesis import given, settings
from hypothesis import strategies as st

from megamon.domain import distributions as d
from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.observations import Attrs, NodePoolAttrs, Observation
from megamon.summary.distributions import Counted, DistributionTally, record_periods
from megamon.summary.foldstate import (
    KindState,
    Periods,
    ResourceState,
    bounds,
    decode_state,
    encode_state,
)

S = 1_000_000_000
T = 1_780_272_000 * S
V5P = Attrs(tpu_accelerator="tpu-v5p-slice", tpu_topology="4x4x4")


def rec(*events: tuple[int, bool, str] | tuple[int, bool, str, str]) -> EventRecord:
    out = []
    for event in events:
        t, up, reason, *flag = event
        out.append(UpEvent(up=up, ts=T + t * S, reason=reason, expected_down=flag == ["ed"],
                           failed=flag == ["f"]))  # fmt: skip
    return EventRecord.of(out)


def test_periods_of_a_pool_that_provisions_is_interrupted_twice_and_recovers() -> None:
    record = rec(
        (0, False, ""),
        (600, True, ""),  # provisioned in 10 min
        (4200, False, "maintenance"),  # up 1 h, then maintenance
        (4500, True, ""),  # recovered in 5 min
        (8100, False, "ed", "ed"),  # a planned stop: no interruption
        (9000, True, ""),
        (9600, False, "node-lost"),  # up 10 min, then still down: no recovery yet
    )
    assert record_periods(record) == [
        (d.PROVISIONING, d.PROVISIONING_SUCCESS, 600 * S),
        (d.TIME_BETWEEN_INTERRUPTIONS, "maintenance", 3600 * S),
        (d.TIME_TO_RECOVER, "maintenance", 300 * S),
        (d.TIME_BETWEEN_INTERRUPTIONS, "node-lost", 600 * S),
    ]


def test_a_pool_that_never_came_up_counts_as_failed_provisioning() -> None:
    record = rec((0, False, ""), (120, False, "error", "f"))
    assert record_periods(record) == [(d.PROVISIONING, d.PROVISIONING_FAILED, 120 * S)]
    assert record_periods(rec((0, False, ""))) == []


def test_a_down_without_a_recorded_reason_is_unknown() -> None:
    periods = record_periods(rec((0, False, ""), (1, True, ""), (61, False, ""), (91, True, "")))
    assert periods[1:] == [
        (d.TIME_BETWEEN_INTERRUPTIONS, "unknown", 60 * S),
        (d.TIME_TO_RECOVER, "unknown", 30 * S),
    ]


def ttr(tally: DistributionTally, reason: str = "preemption") -> d.Histogram:
    (found,) = [
        h for k, h in tally.series() if k.measure == d.TIME_TO_RECOVER and k.label == reason
    ]
    return found


def test_the_tally_recounts_a_grown_record_once_and_keeps_a_retired_one() -> None:
    tally = DistributionTally()
    first = rec((0, False, ""), (1, True, ""), (2, False, "preemption"), (32, True, ""))
    tally.update("nodepool", {"np": first}, {"np": V5P})
    tally.update("nodepool", {"np": first}, {"np": V5P})  # unchanged: not counted again
    assert ttr(tally).count == 1
    grown = EventRecord.of([*first.events, UpEvent(up=False, ts=T + 40 * S, reason="error"),
                            UpEvent(up=True, ts=T + 100 * S)])  # fmt: skip
    tally.update("nodepool", {"np": grown}, {"np": V5P})
    histogram = ttr(tally)
    assert (histogram.count, histogram.total_ns) == (1, 30 * S)  # counted once, not twice
    assert ttr(tally, "error").count == 1
    tally.update("nodepool", {}, {})  # the pool retired: its periods stay counted
    keys = {(k.measure, k.label) for k, _ in tally.series()}
    assert (d.TIME_TO_RECOVER, "error") in keys and (d.TIME_TO_RECOVER, "preemption") in keys


def test_archived_resources_are_counted_with_their_archived_shape() -> None:
    tally = DistributionTally()
    record = rec((0, False, ""), (1, True, ""), (2, False, "restart"), (20, True, ""))
    tally.add_archived("jobset", record, {"tpuAccelerator": "tpu-v6e-slice", "spot": True})
    key, histogram = next((k, h) for k, h in tally.series() if k.measure == d.TIME_TO_RECOVER)
    assert (key.shape, key.label, histogram.count) == (
        d.Shape("tpu-v6e-slice", "", True),
        "restart",
        1,
    )


def test_buckets_span_seconds_to_a_week_and_count_cumulatively() -> None:
    histogram = d.Histogram()
    for seconds in (5, 10, 11, 3_600, 10**7):
        histogram.add(seconds * S)
    cumulative = histogram.cumulative()
    assert d.BUCKETS_S[0] == 10 and d.BUCKETS_S[-1] == 7 * 86_400
    assert cumulative[0] == 2 and cumulative[-1] == histogram.count == 5
    assert cumulative[d.BUCKETS_S.index(3_600.0)] == 4


def test_chip_seconds_down_count_closed_and_ongoing_interruptions_by_reason() -> None:
    tally = DistributionTally()
    chips = Attrs(tpu_accelerator="tpu-v5p-slice", tpu_topology="4x4x4", tpu_chip_count=64)
    closed = rec((0, False, ""), (1, True, ""), (2, False, "upgrade"), (12, True, ""))
    ongoing = rec((0, False, ""), (1, True, ""), (5, False, "ed", "ed"), (6, True, ""),
                  (10, False, "error", "f"))  # fmt: skip
    tally.update("nodepool", {"a": closed, "b": ongoing}, {"a": chips, "b": chips})
    shape = d.Shape("tpu-v5p-slice", "4x4x4", False)
    now = T + 100 * S
    assert tally.chips_down(now) == {
        ("nodepool", shape, "upgrade"): 10 * 64 * S,
        ("nodepool", shape, "error"): 90 * 64 * S,  # still down: up to now
    }
    tally.update("nodepool", {}, {})  # both retired: the closed one stays counted
    assert tally.chips_down(now) == {("nodepool", shape, "upgrade"): 640 * S}


EVENT = st.tuples(
    st.integers(1, 3600),
    st.booleans(),
    st.sampled_from(["", "maintenance", "preemption", "error"]),
    st.sampled_from(["", "ed", "f"]),
)
SHAPES = [V5P, Attrs(tpu_accelerator="tpu-v6e-slice", tpu_topology="4x4", tpu_chip_count=16)]


def _record(steps: list[tuple[int, bool, str, str]]) -> EventRecord:
    at, events = 0, []
    for gap, up, reason, flag in steps:
        at += gap
        events.append((at, up, reason, flag) if flag else (at, up, reason))
    return rec(*events)


@st.composite
def versions(draw: st.DrawFn) -> list[dict[str, tuple[EventRecord, Attrs]]]:
    """Cycles of live records: each key grows, keeps, rewrites its past, changes shape or
    retires from one cycle to the next; a key that comes back starts a new history, as the
    log gives it one."""
    cycles: list[dict[str, tuple[EventRecord, Attrs]]] = []
    steps: dict[str, list[tuple[int, bool, str, str]]] = {}
    shapes: dict[str, Attrs] = {}
    for _ in range(draw(st.integers(1, 6))):
        live: dict[str, tuple[EventRecord, Attrs]] = {}
        for key in draw(st.sets(st.sampled_from(["a", "b", "c"]))):
            change = draw(st.sampled_from(["grow", "keep", "rewrite", "reshape"]))
            returning = bool(cycles) and key not in cycles[-1]
            if key not in steps or returning or change == "rewrite":
                steps[key] = draw(st.lists(EVENT, max_size=8))
            elif change == "grow":
                steps[key] = steps[key] + draw(st.lists(EVENT, min_size=1, max_size=3))
            if key not in shapes or change == "reshape":
                shapes[key] = draw(st.sampled_from(SHAPES))
            kept = cycles[-1].get(key) if cycles and change in {"keep", "reshape"} else None
            record = kept[0] if kept is not None else _record(steps[key])  # the same object
            live[key] = (record, shapes[key])
        cycles.append(live)
    return cycles


def _counted(tally: DistributionTally) -> dict[object, tuple[list[int], int, int]]:
    """The history's histograms (maintenance lead times are counted as interruptions begin,
    not recounted from the history: ``test_maintenance_lead_time_is_counted_once``)."""
    return {
        k: (h.counts, h.count, h.total_ns)
        for k, h in tally.series()
        if k.measure != d.MAINTENANCE_LEAD_TIME
    }


@settings(max_examples=200, deadline=None)
@given(versions())
def test_the_incremental_tally_equals_a_recount_of_what_was_last_seen(
    cycles: list[dict[str, tuple[EventRecord, Attrs]]],
) -> None:
    """Whatever the records do from cycle to cycle, the running tally holds exactly the last
    version of each lifetime of each key — live or retired — as a tally counted from scratch
    would."""
    tally = DistributionTally()
    lifetimes: list[tuple[EventRecord, Attrs]] = []
    previous: dict[str, tuple[EventRecord, Attrs]] = {}
    for live in cycles:
        records = {key: record for key, (record, _) in live.items()}
        tally.update("nodepool", records, {key: attrs for key, (_, attrs) in live.items()})
        lifetimes += [version for key, version in previous.items() if key not in live]
        previous = live
    lifetimes += previous.values()
    fresh = DistributionTally()
    for n, (record, attrs) in enumerate(lifetimes):
        fresh.update("nodepool", {str(n): record}, {str(n): attrs})
    assert _counted(tally) == _counted(fresh)
    assert tally.chip_ns == fresh.chip_ns


def _lead(tally: DistributionTally, announced: str) -> d.Histogram | None:
    found = [
        h for k, h in tally.series() if (k.measure, k.label) == (d.MAINTENANCE_LEAD_TIME, announced)
    ]
    return found[0] if found else None


def test_maintenance_lead_time_is_counted_once_as_the_interruption_begins() -> None:
    """Announced at T (first seen), maintenance from T+3h: one 3 h lead time, counted again
    neither while the interruption lasts nor when it ends; an unannounced one is 0 s."""
    scheduled = T // S + 3 * 3600
    pool = NodePoolAttrs(
        tpu_accelerator="tpu-v5p-slice",
        tpu_topology="4x4x4",
        scheduled_maintenance=scheduled,
        maintenance_announced=T // S,
    )
    tally = DistributionTally()
    up = rec((0, False, ""), (60, True, ""))
    tally.update("nodepool", {"a": up}, {"a": pool})
    assert _lead(tally, d.ANNOUNCED) is None
    down = rec((0, False, ""), (60, True, ""), (3 * 3600, False, "maintenance"))
    for _ in range(3):
        tally.update("nodepool", {"a": down}, {"a": pool})
    same_down = rec((0, False, ""), (60, True, ""), (3 * 3600, False, "maintenance"))
    tally.update("nodepool", {"a": same_down}, {"a": pool.model_copy(update={"spot": False})})
    recovered = rec(
        (0, False, ""), (60, True, ""), (3 * 3600, False, "maintenance"), (4 * 3600, True, "")
    )
    tally.update("nodepool", {"a": recovered}, {"a": V5P})
    lead = _lead(tally, d.ANNOUNCED)
    assert lead is not None
    assert (lead.count, lead.total_ns) == (1, 3 * 3600 * S)
    assert _lead(tally, d.NOT_ANNOUNCED) is None
    tally.update(
        "nodepool", {"b": rec((0, False, ""), (1, True, ""), (9, False, "maintenance"))}, {"b": V5P}
    )
    tally.update(
        "nodepool", {"c": rec((0, False, ""), (1, True, ""), (9, False, "node-lost"))}, {"c": pool}
    )
    unannounced = _lead(tally, d.NOT_ANNOUNCED)
    assert unannounced is not None
    assert (unannounced.count, unannounced.total_ns) == (1, 0)


def queued(*marks: tuple[str, int, int], attrs: Attrs = V5P) -> Observation:
    stamped = tuple((stage, T + created * S, T + reached * S) for stage, created, reached in marks)
    return Observation.build(expected=4, ready=4, attrs=attrs, queued=stamped)


def test_queueing_times_are_counted_once_per_resource_and_stage() -> None:
    tally = DistributionTally()
    tally.count_queueing("kueue_workload", {"a": queued(("quota_reserved", 0, 90))})
    tally.count_queueing(
        "kueue_workload",
        {
            "a": queued(("quota_reserved", 0, 90), ("admitted", 0, 150)),
            "b": queued(("quota_reserved", 0, 4000), ("admitted", 0, 4000)),
        },
    )
    tally.count_queueing(  # evicted and admitted again later: not counted again
        "kueue_workload",
        {"a": queued(("quota_reserved", 0, 9000), ("admitted", 0, 9000))},
    )
    found = {key.label: h for key, h in tally.series() if key.measure == d.QUEUEING}
    assert {stage: (h.count, h.total_ns) for stage, h in found.items()} == {
        "admitted": (2, 4150 * S),
        "quota_reserved": (2, 4090 * S),
    }
    shape = next(key.shape for key, _ in tally.series())
    assert (shape.accelerator, shape.topology) == ("tpu-v5p-slice", "4x4x4")
    assert found["admitted"].cumulative()[d.BUCKETS_S.index(300.0)] == 1


def test_a_resource_gone_and_a_clock_skew_do_not_recount_or_go_negative() -> None:
    tally = DistributionTally()
    tally.count_queueing("kueue_workload", {"a": queued(("admitted", 10, 5))})
    tally.count_queueing("kueue_workload", {})
    (histogram,) = (h for key, h in tally.series() if key.measure == d.QUEUEING)
    assert (histogram.count, histogram.total_ns) == (1, 0), "kept after it is gone, 0 s"
    tally.count_queueing("jobset", {"j": Observation.build(expected=1, ready=1)})
    assert [key.kind for key, _ in tally.series()] == ["kueue_workload"]


def test_an_observation_falls_in_the_bucket_its_float_seconds_did_at_every_edge() -> None:
    """The bucket is the first bound with ``ns <= bound`` compared as integers, which is
    the bucket the float seconds chose: one nanosecond either side of every bound, and the
    bound itself (half a bound's ulp is less than a nanosecond, so no float rounding can
    carry an observation across it)."""
    assert all(bound.is_integer() and math.ulp(bound) / 2 < 1e-9 for bound in d.BUCKETS_S)
    assert tuple(int(bound) * S for bound in d.BUCKETS_S) == d.BUCKETS_NS
    for index, bound in enumerate(d.BUCKETS_NS):
        for ns, expected in ((bound - 1, index), (bound, index), (bound + 1, index + 1)):
            assert bisect_left(d.BUCKETS_NS, ns) == expected
            assert bisect_left(d.BUCKETS_S, ns / S) == expected
            histogram = d.Histogram()
            histogram.add(ns)
            assert histogram.counts[expected] == 1 and histogram.total_ns == ns


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.integers(0, 2**70),
        st.sampled_from(d.BUCKETS_NS).flatmap(lambda b: st.integers(b - 10**6, b + 10**6)),
    )
)
def test_the_integer_bucket_is_the_float_seconds_bucket_for_any_duration(ns: int) -> None:
    assert bisect_left(d.BUCKETS_NS, ns) == bisect_left(d.BUCKETS_S, ns / S)


BIG = Attrs(tpu_accelerator="tpu-v5p-slice", tpu_topology="16x16x36", tpu_chip_count=9216)
"""A slice so large that its chip time down over a year goes past 2⁶⁴ chip-nanoseconds."""
LONG_EVENT = st.tuples(
    st.one_of(st.integers(1, 3600), st.integers(1, 400 * 86_400)),
    st.booleans(),
    st.sampled_from(["", "maintenance", "preemption", "error"]),
    st.sampled_from(["", "ed", "f"]),
)


@st.composite
def cut_histories(draw: st.DrawFn) -> list[tuple[EventRecord, Attrs]]:
    """One resource's history as cycles see it: cut at random points into records that
    each extend the one before, each seen with the attrs of the moment (now and then a new
    shape or chip count, which moves every period)."""
    steps = draw(st.lists(LONG_EVENT, min_size=1, max_size=12))
    cuts = sorted(draw(st.sets(st.integers(1, len(steps)), max_size=5)) | {len(steps)})
    shapes = [*SHAPES, BIG]
    attrs = draw(st.sampled_from(shapes))
    versions = []
    for cut in cuts:
        if draw(st.integers(0, 5)) == 0:
            attrs = draw(st.sampled_from(shapes))
        versions.append((_record(steps[:cut]), attrs))
    return versions


def _restarted(tally: DistributionTally, kind: str) -> DistributionTally:
    """A new tally seeded from ``tally``'s persisted summary state (encoded and decoded),
    as a start-up reads it (``ReportAssembly._seed``)."""
    state = KindState(kind, "snapshot")
    for key, counted in tally.counted(kind).items():
        count = len(counted.record)
        periods = Periods(counted.fold, counted.shape, counted.chips, counted.contribution)
        folded = bounds(counted.record, count)
        state.resources[key] = ResourceState(count, folded, periods=periods)
    restarted = DistributionTally()
    for key, resource in decode_state(encode_state(state)).resources.items():
        part = resource.periods
        assert part is not None
        record = tally.counted(kind)[key].record
        counted = Counted(record, None, part.shape, part.fold, part.chips, None,
                          part.contribution, seeded=True)  # fmt: skip
        restarted.seed(kind, key, counted)
    return restarted


@settings(max_examples=300, deadline=None)
@given(st.lists(cut_histories(), min_size=1, max_size=3), st.integers(0, 5))
def test_a_tally_folded_piece_by_piece_or_seeded_from_the_state_equals_a_recount(
    histories: list[list[tuple[EventRecord, Attrs]]], restart: int
) -> None:
    """Integers all the way: a tally updated cycle by cycle (records grown piece by piece,
    a provisioning that failed then came up taken back, a new shape moving every period),
    and one started from the persisted summary state after cycle ``restart`` and updated
    on, hold exactly the histograms, sums and chip-nanoseconds of a recount of the last
    records."""
    kind = "nodepool"
    tally, seeded = DistributionTally(), None
    for n in range(max(len(versions) for versions in histories)):
        live = {str(i): versions[min(n, len(versions) - 1)] for i, versions in enumerate(histories)}
        records = {key: record for key, (record, _) in live.items()}
        attrs = {key: shape for key, (_, shape) in live.items()}
        tally.update(kind, records, attrs)
        if seeded is not None:
            seeded.update(kind, records, attrs)
        if n == restart:
            seeded = _restarted(tally, kind)
            seeded.update(kind, records, attrs)
    fresh = DistributionTally()
    fresh.update(kind, records, attrs)
    now = max(record.timestamps[-1] for record in records.values()) + 3600 * S
    for found in (tally, seeded) if seeded is not None else (tally,):
        assert _counted(found) == _counted(fresh)
        assert found.chip_ns == fresh.chip_ns
        assert found.chips_down(now) == fresh.chips_down(now)


def test_a_provisioning_that_failed_then_came_up_is_taken_back_exactly() -> None:
    """Failed after 7 s, up after 10 s more: the failed period is taken back (its
    histogram empty and gone from the series), the successful one counted, before and after
    a start from the persisted state."""
    failed = rec((0, False, ""), (7, False, "error", "f"))
    came_up = rec((0, False, ""), (7, False, "error", "f"), (17, True, ""))
    tally = DistributionTally()
    tally.update("nodepool", {"np": failed}, {"np": V5P})
    seeded = _restarted(tally, "nodepool")
    for each in (tally, seeded):
        each.update("nodepool", {"np": came_up}, {"np": V5P})
        provisioning = {k.label: h for k, h in each.series() if k.measure == d.PROVISIONING}
        assert {label: (h.count, h.total_ns) for label, h in provisioning.items()} == {
            d.PROVISIONING_SUCCESS: (1, 17 * S)
        }


def test_the_state_keeps_sums_beyond_64_bits_exactly() -> None:
    """Chip-nanoseconds of a 9216-chip slice down for a year pass 2⁶⁴: written and read back
    as the same integer."""
    year = 365 * 86_400
    record = rec((0, False, ""), (1, True, ""), (2, False, "error"), (2 + year, True, ""))
    tally = DistributionTally()
    tally.update("nodepool", {"np": record}, {"np": BIG})
    (lost,) = tally.chip_ns.values()
    assert lost == 9216 * year * S > 2**64
    assert _restarted(tally, "nodepool").chip_ns == tally.chip_ns
