"""The summary state persisted beside each snapshot: a start-up reads it instead of folding
every history again, and gives the same report as a start-up without it; a state that is
missing, stale (written beside another snapshot) or corrupt is folded from the history
instead, logged and counted, on a local directory and in memory alike."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from megamon.domain.events import EventRecord
from megamon.domain.interruptions import MAINTENANCE, NO_CAUSE, NODE_LOST, Cause
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import Report
from megamon.domain.timestamps import GO_ZERO_NS
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS, EventLog
from megamon.stores.local import LocalEventStore
from megamon.stores.memory import MemoryEventStore
from megamon.stores.objects import ObjectEventStore
from megamon.summary.assembly import CORRUPT, MISSING, STALE, ReportAssembly
from megamon.summary.foldstate import STATE_VERSION, StateError, decode_state, encode_state
from megamon.summary.summarizing import SummaryFold
from test.summary.foldcheck import history_fold_problems, summary_state_problems

S = 10**9
H = 3600 * S
T0 = 1_780_272_000 * S
KINDS = frozenset({Kind.NODEPOOL, Kind.JOBSET})
SHAPES = [
    Attrs(tpu_accelerator="tpu-v6e-slice", tpu_topology="4x4", tpu_chip_count=16),
    Attrs(tpu_accelerator="tpu-v5p-slice", tpu_topology="2x2x2", tpu_chip_count=8, spot=True),
]


def _observation(kind: Kind, n: int, up: bool, reason: str) -> Observation:
    attrs = SHAPES[n % 2]
    if kind is Kind.JOBSET:
        attrs = attrs.model_copy(update={"jobset_name": f"js{n}", "jobset_uid": f"u{n}"})
    return Observation.build(
        expected=4, ready=4 if up else 0, attrs=attrs, cause=Cause(reason) if reason else NO_CAUSE
    )


def _batch(step: int) -> dict[Kind, dict[str, Observation]]:
    """Step ``step`` of a fleet whose resources go down and up on their own rhythms, with
    reasons; ``np3`` is retired after step 5."""
    batch: dict[Kind, dict[str, Observation]] = {}
    for kind in sorted(KINDS, key=str):
        found = {}
        for n in range(5):
            if kind is Kind.NODEPOOL and n == 3 and step > 5:
                continue
            up = step == 0 or (step + n) % (n + 2) != 0
            reason = MAINTENANCE if n % 2 else NODE_LOST
            found[f"np{n}" if kind is Kind.NODEPOOL else f"u{n}"] = _observation(
                kind, n, up, "" if up else reason
            )
        batch[kind] = found
    return batch


class Process:
    """One megamon process on ``store``: its event log and report assembly."""

    def __init__(self, store: ObjectEventStore, *, state: bool = True) -> None:
        self.rebuilt: list[tuple[Kind, str]] = []
        self.assembly = ReportAssembly(
            KINDS,
            store,
            unobserved_slack_ns=UNOBSERVED_SLACK_NS,
            state_store=store.log if state else None,
            on_rebuilt=lambda kind, reason: self.rebuilt.append((kind, reason)),
        )
        self.log = EventLog(
            store,
            KINDS,
            on_retired=self.assembly.retired,
            on_snapshot=self.assembly.snapshotted,
        )
        self.observations: dict[Kind, dict[str, Observation]] = {}

    def record(self, step: int) -> None:
        self.observations = _batch(step)
        self.log.append(self.observations, T0 + step * H)

    def report(self, now: int) -> Report:
        return self.assembly.build(
            self.observations,
            self.log.records(),
            coverage=self.log.coverage(),
            epoch=self.log.epoch,
            snapshots=self.log.snapshot_digests(),
            scheduling={},
            observed_at={},
            now=now,
        )


def _run(store: ObjectEventStore, steps: range, *, state: bool = True) -> Process:
    """A process recording ``steps`` and reporting after each, then shutting down (which
    snapshots, and writes the summary state beside the snapshot)."""
    process = Process(store, state=state)
    for step in steps:
        process.record(step)
        process.report(T0 + step * H)
    process.log.close()
    return process


def _figures(report: Report) -> tuple[Any, ...]:
    return (
        {kind: dict(part.summaries) for kind, part in report.kinds.items()},
        report.distributions,
        report.chips_down,
        report.chip_availability,
    )


@pytest.fixture(params=["memory", "local"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A store of each kind (a new one per call, on the same history)."""
    if request.param == "memory":
        store = MemoryEventStore()
        yield lambda: MemoryEventStore(objects=store.objects)
    else:
        yield lambda: LocalEventStore(tmp_path / "history")


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many events each ``SummaryFold.fold`` took in."""
    counts: list[int] = []
    real = SummaryFold.fold

    def counting(self: SummaryFold, record: EventRecord) -> SummaryFold:
        counts.append(len(record) - self.count)
        return real(self, record)

    monkeypatch.setattr(SummaryFold, "fold", counting)
    return counts


def _restart_and_compare(new_store: Callable[[], Any], step: int) -> tuple[Process, Report]:
    """A process started on the history, recording ``step``; its first report, checked
    against a process that reads no summary state (the history folded from scratch)."""
    started = Process(new_store())
    started.record(step)
    report = started.report(T0 + step * H)
    reference = Process(new_store(), state=False)
    reference.observations = started.observations
    reference.log = started.log
    assert _figures(reference.report(T0 + step * H)) == _figures(report)
    return started, report


def test_a_history_from_gos_zero_time_keeps_its_state_beside_the_snapshot(
    new_store: Callable[[], Any],
) -> None:
    """A Go-written history whose first event is stamped with Go's zero time (below what 64
    bits hold in nanoseconds): the state beside the snapshot is written and read back, and a
    start takes it, to the figures of a replay."""
    go_written = (
        b'{"np0":{"upEvents":[{"up":false,"ts":"0001-01-01T00:00:00Z"},'
        b'{"up":true,"ts":"2026-06-01T00:00:00Z"}]},'
        b'"np1":{"upEvents":[{"up":false,"ts":"2026-05-31T23:00:00Z"}]}}'
    )
    store = new_store()
    store.log.backend.upload("node-pools.json", go_written, 0)
    _run(new_store(), range(1, 4))
    state = decode_state(new_store().log.read_summary_state(Kind.NODEPOOL))
    assert state.resources["np0"].bounds is not None
    assert state.resources["np0"].bounds[0] == GO_ZERO_NS
    started, _ = _restart_and_compare(new_store, 4)
    assert started.rebuilt == []


def test_a_start_up_reads_the_state_and_folds_only_the_new_events(
    new_store: Callable[[], Any], folded: list[int]
) -> None:
    _run(new_store(), range(8))
    before = {kind: new_store().read(kind).records for kind in KINDS}
    started = Process(new_store())
    started.record(8)
    folded.clear()
    started.report(T0 + 8 * H)
    assert started.rebuilt == []
    after = started.log.records()
    new_events = sum(
        len(record) - len(before[kind].get(key, EventRecord()))
        for kind in KINDS
        for key, record in after[kind].items()
        if key in started.observations[kind]
    )
    assert 0 < sum(folded) == new_events
    started.log.close()
    _restart_and_compare(new_store, 9)


def test_the_state_is_used_for_the_next_start_too(new_store: Callable[[], Any]) -> None:
    _run(new_store(), range(6))
    _run(new_store(), range(6, 10))
    started, _ = _restart_and_compare(new_store, 10)
    assert started.rebuilt == []


def test_a_missing_state_is_folded_from_the_history_and_counted(
    new_store: Callable[[], Any], folded: list[int]
) -> None:
    _run(new_store(), range(8), state=False)
    started, _ = _restart_and_compare(new_store, 8)
    assert set(started.rebuilt) == {(Kind.NODEPOOL, MISSING), (Kind.JOBSET, MISSING)}


def test_a_state_written_beside_another_snapshot_is_stale(new_store: Callable[[], Any]) -> None:
    _run(new_store(), range(6))
    old = new_store().log.read_summary_state(Kind.NODEPOOL)
    _run(new_store(), range(6, 9))
    new_store().log.write_summary_state(Kind.NODEPOOL, old)
    started, _ = _restart_and_compare(new_store, 9)
    assert started.rebuilt == [(Kind.NODEPOOL, STALE)]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-5] + b"12345",  # the body altered: its checksum fails
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: b"not json\n" + data,
        lambda data: data.replace(b'"version":%d' % STATE_VERSION, b'"version":99'),
    ],
)
def test_a_corrupt_state_is_folded_from_the_history_and_counted(
    new_store: Callable[[], Any], damage: Callable[[bytes], bytes]
) -> None:
    _run(new_store(), range(8))
    data = new_store().log.read_summary_state(Kind.JOBSET)
    new_store().log.write_summary_state(Kind.JOBSET, damage(data))
    started, _ = _restart_and_compare(new_store, 8)
    assert started.rebuilt == [(Kind.JOBSET, CORRUPT)]


def _as_version_1(data: bytes) -> bytes:
    """``data`` as version 1 wrote it: each resource an object with a digest of its events,
    its sums float seconds, a checksum of its own."""
    header, _, body = data.partition(b"\n")
    raw = orjson.loads(body)
    for key, (count, _bounds, summary, periods, availability) in raw["resources"].items():
        old_periods = None
        if periods is not None:
            fold, shape, chips, contribution = periods
            if fold[4] is not None:
                fold[4][2] /= S
            for part in contribution:
                part[3], part[5] = part[3] / S, part[5] / S
            old_periods = {
                "fold": fold,
                "shape": shape,
                "chips": chips,
                "contribution": contribution,
            }
        raw["resources"][key] = {
            "count": count,
            "digest": "0" * 32,
            "summary": summary,
            "periods": old_periods,
            "availability": availability,
        }
    old_body = orjson.dumps(raw)
    old_header = {**orjson.loads(header), "version": 1}
    old_header["checksum"] = hashlib.sha256(old_body).hexdigest()
    return orjson.dumps(old_header) + b"\n" + old_body


def test_a_state_of_version_1_float_seconds_is_folded_from_the_history_and_counted(
    new_store: Callable[[], Any],
) -> None:
    """The state an older megamon wrote (its sums float seconds) is refused for its version,
    not read as integers: both kinds are folded from the history, to the same figures."""
    assert STATE_VERSION == 2
    _run(new_store(), range(8))
    for kind in KINDS:
        old = _as_version_1(new_store().log.read_summary_state(kind))
        with pytest.raises(StateError, match="version 1, not 2"):
            decode_state(old)
        new_store().log.write_summary_state(kind, old)
    started, _ = _restart_and_compare(new_store, 8)
    assert set(started.rebuilt) == {(Kind.NODEPOOL, CORRUPT), (Kind.JOBSET, CORRUPT)}


def test_a_history_that_does_not_extend_what_was_folded_is_folded_afresh(
    new_store: Callable[[], Any],
) -> None:
    """A resource's history no longer begins with the events its folds took in (its snapshot
    was written by another program meanwhile, keeping both histories' events, an older one
    first): that resource is folded from its history, the others are read."""
    _run(new_store(), range(8))
    store = new_store()
    snapshot = store.read(Kind.NODEPOOL)
    records = dict(snapshot.records)
    np0 = records["np0"]
    records["np0"] = EventRecord.trusted(
        (np0.timestamps[0] - H, *np0.timestamps), bytes((0,)) + np0.flags
    )
    store.write(Kind.NODEPOOL, records, snapshot.version)
    started = Process(new_store())
    started.record(8)
    report = started.report(T0 + 8 * H)
    reference = Process(new_store(), state=False)
    reference.observations, reference.log = started.observations, started.log
    assert _figures(reference.report(T0 + 8 * H)) == _figures(report)


def test_the_state_a_start_reads_is_what_a_replay_folds(new_store: Callable[[], Any]) -> None:
    """``foldcheck`` (the end of every emulator scenario): every resource of the state
    written at shutdown has the folds of its events, and the history folds in pieces."""
    _run(new_store(), range(10))
    compared, problems = summary_state_problems(new_store(), KINDS)
    assert problems == []
    assert compared == 9  # np3 retired: the state holds the live resources
    assert history_fold_problems(new_store(), KINDS, T0 + 10 * H) == []


@pytest.mark.parametrize("part", ["summary", "periods", "histogram", "availability"])
def test_a_persisted_fold_that_is_not_the_replays_is_found(
    new_store: Callable[[], Any], part: str
) -> None:
    """A state that decodes and whose snapshot and bounds hold, but one fold of which is
    not what its events fold to: ``foldcheck`` names it (a start would take it)."""
    _run(new_store(), range(10))
    data = new_store().log.read_summary_state(Kind.NODEPOOL)
    assert data is not None
    state = decode_state(data)
    resource = state.resources["np1"]
    if part == "summary":
        assert resource.summary is not None
        resource.summary.totals.up_time += 1
    elif part == "periods":
        assert resource.periods is not None
        resource.periods.fold.up_since += 1
    elif part == "histogram":
        assert resource.periods is not None
        histogram, _ = next(iter(resource.periods.contribution.values()))
        histogram.count += 1
    else:
        assert resource.availability is not None
        resource.availability.down += 1
    new_store().log.write_summary_state(Kind.NODEPOOL, encode_state(state))
    _, problems = summary_state_problems(new_store(), KINDS)
    assert len(problems) == 1
    assert problems[0].startswith("nodepool np1: the summary state of its first")
