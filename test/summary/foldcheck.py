"""The folds held to their definitions on a history as megamon wrote it, for the tests that
have one: ``test_folds.py`` on histories its recorder wrote, and the end of every emulator
scenario (``test/integration/scenarios/conftest.py``) on the history megamon wrote there.

- ``fold_problems``: one lifetime (a ``Resource`` as ``megamon report`` reads it) folded in
  pieces (``SummaryFold``, ``PeriodFold``, ``AvailabilityFold``) against the batch figures
  (``settle``, ``record_periods``, ``resource_availability``);
- ``history_fold_problems``: that for every lifetime, live and archived, of a history, at
  split points chosen by ``split_points`` (deterministic: a record's own key seeds them);
- ``summary_state_problems``: the summary state persisted beside each snapshot
  (``log/summaries/``, ``summary.foldstate``), when it is the snapshot's, decoded as a start-up
  decodes it, equals the folds of the events it says it folded: what a restart reads is what
  a replay computes;
- ``check_folds``: both on a history directory, asserting; the emulator scenarios, the
  ``megamon run`` processes of the end-to-end tests and the demo end with it.

Each gives the problems it found, one line each, so that a caller reports them all at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from random import Random

from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.fleet.resources import read_resources
from megamon.recording.loading import load_kind
from megamon.stores.base import EventStore
from megamon.stores.local import LocalEventStore
from megamon.summary.availability import (
    Resource,
    Window,
    availability_report,
    resource_availability,
)
from megamon.summary.chips import chip_figures
from megamon.summary.chiptally import AvailabilityFold, Growth, Span, gaps_before
from megamon.summary.distributions import DistributionTally, PeriodFold, record_periods
from megamon.summary.foldstate import (
    KindState,
    Periods,
    ResourceState,
    StateError,
    decode_state,
)
from megamon.summary.summarizing import SummaryFold, settle

EVERY_SPLIT_UP_TO = 16
"""Records of at most this many events are split at every point."""
SAMPLED_SPLITS = 4
"""Split points drawn for a longer record (besides its start and end)."""

Figures = tuple[int, int, int, Growth]


def prefix(record: EventRecord, n: int) -> EventRecord:
    """The first ``n`` events of ``record``."""
    if n == len(record):
        return record
    return EventRecord.trusted(record.timestamps[:n], record.flags[:n])


def settled_figures(record: EventRecord, gaps: tuple[Span, ...]) -> Figures:
    """Up, down, last and growth as the chip tally settled them before it folded: from
    ``resource_availability`` at the last event, and one nanosecond past it."""
    last = max(record.timestamps)
    before = gaps_before(gaps, last)
    resource = Resource(Kind.NODEPOOL, "k", record, {}, unobserved=before)
    figures = resource_availability(resource, Window(now=last))
    assert figures is not None
    probe = resource_availability(resource, Window(now=last + 1, since=last))
    growth = Growth.NEITHER
    if probe is not None and probe.times.up:
        growth = Growth.UP
    elif probe is not None and probe.times.down:
        growth = Growth.DOWN
    return figures.times.up, figures.times.down, last, growth


def _name(resource: Resource) -> str:
    retired = f" (retired {resource.retired_at})" if resource.retired_at is not None else ""
    return f"{resource.kind.value} {resource.key}{retired}"


def fold_problems(resource: Resource, cuts: Sequence[int]) -> list[str]:
    """``resource``'s record folded through its prefixes ending at ``cuts`` (growing, the
    last its length): what the folds say that the batch figures do not."""
    record, gaps = resource.record, resource.unobserved
    summary, periods, availability = SummaryFold(), PeriodFold(), AvailabilityFold()
    closed: list[tuple[str, str, float]] = []
    for cut in cuts:
        piece = prefix(record, cut)
        summary.fold(piece)
        closed += periods.fold(piece)
        if piece.timestamps:
            availability.fold(piece, gaps)
    where = f"{_name(resource)}, {len(record)} events folded in pieces ending at {list(cuts)}"
    problems = []
    if summary.settled() != settle(record):
        problems.append(f"{where}: SummaryFold {summary.settled()}, settle {settle(record)}")
    first = [periods.provisioning] if periods.provisioning is not None else []
    if first + closed != record_periods(record):
        problems.append(f"{where}: PeriodFold {first + closed}, periods {record_periods(record)}")
    if record.timestamps:
        folded = (availability.up, availability.down, availability.latest, availability.growth())
        batch = settled_figures(record, gaps)
        if folded != batch:
            problems.append(f"{where}: AvailabilityFold {folded}, availability {batch}")
    return problems


def split_points(resource: Resource) -> list[list[int]]:
    """The ways ``resource``'s record is folded: for a short record, at every split point
    (two pieces each) and one event at a time; for a longer one, a few split points drawn
    by a generator its kind, key and retirement seed (the same every run)."""
    n = len(resource.record)
    if n <= EVERY_SPLIT_UP_TO:
        return [[cut, n] for cut in range(n)] + [list(range(n + 1))]
    seed = f"{resource.kind.value}/{resource.key}/{resource.retired_at}"
    drawn = sorted(Random(seed).sample(range(1, n), SAMPLED_SPLITS))
    return [[cut, n] for cut in drawn] + [[*drawn, n]]


def history_fold_problems(store: EventStore, kinds: Iterable[Kind], now: int) -> list[str]:
    """Every lifetime of every resource of ``store`` (live and archived, as ``megamon
    report`` reads them at ``now``), folded at its ``split_points``, against the batch."""
    problems = []
    for resource in read_resources(store, list(kinds), {}, now):
        for cuts in split_points(resource):
            problems += fold_problems(resource, cuts)
    return problems


def summary_state_problems(store: EventStore, kinds: Iterable[Kind]) -> tuple[int, list[str]]:
    """The summary state of each kind of ``store`` that is the snapshot's (the one a start
    would take; ``load_kind`` says which snapshot a start trusts) against a replay: each
    resource whose history, as loaded, extends what its folds folded (the ones a start
    takes) has the folds of those events. How many resources were compared, and the
    problems (a state that does not decode is one)."""
    compared, problems = 0, []
    for kind in kinds:
        data = store.log.read_summary_state(kind)
        if data is None:
            continue
        loaded = load_kind(store, kind)
        if loaded.file is None:
            continue  # no snapshot a start trusts: it folds the history
        try:
            state = decode_state(data)
        except StateError as err:
            problems.append(f"{kind.value}: the summary state does not decode: {err}")
            continue
        if state.snapshot != loaded.file.digest:
            continue  # another snapshot's (stale): a start folds the history
        if state.kind != kind.value:
            problems.append(f"{kind.value}: the summary state is {state.kind!r}'s")
            continue
        for key, resource in state.resources.items():
            record = loaded.history.records.get(key)
            count = resource.count
            if record is None or not resource.folded(record):
                continue  # not what a start takes
            compared += 1
            where = f"{kind.value} {key}: the summary state of its first {count} events"
            problems += [
                f"{where}: {text}" for text in _state_problems(kind, state, resource, record)
            ]
    return compared, problems


def _state_problems(
    kind: Kind, state: KindState, resource: ResourceState, record: EventRecord
) -> list[str]:
    """One resource's persisted folds against the folds of its first ``count`` events."""
    folded = prefix(record, resource.count)
    problems = []
    if resource.summary is not None:
        replay = SummaryFold().fold(folded)
        if resource.summary.fields() != replay.fields():
            problems.append(f"SummaryFold {resource.summary.fields()}, replay {replay.fields()}")
    if resource.periods is not None:
        problems += _periods_problems(kind, resource.periods, folded)
    if resource.availability is not None:
        replay_availability = AvailabilityFold().fold(folded, state.gaps)
        if resource.availability != replay_availability:
            problems.append(
                f"AvailabilityFold {resource.availability}, replay {replay_availability}"
            )
    return problems


def _periods_problems(kind: Kind, periods: Periods, record: EventRecord) -> list[str]:
    """The persisted ``PeriodFold`` and histogram contribution against a replay: the fold
    of ``record`` and its periods counted under the persisted shape and chips, as a start
    counts an archived resource (``DistributionTally.add_archived``)."""
    problems = []
    replay = PeriodFold()
    replay.fold(record)
    if periods.fold != replay:
        problems.append(f"PeriodFold {periods.fold}, replay {replay}")
    shape = periods.shape
    attrs = {
        "tpuAccelerator": shape.accelerator,
        "tpuTopology": shape.topology,
        "spot": shape.spot,
        "tpuChipCount": periods.chips,
    }
    tally = DistributionTally()
    tally.add_archived(kind.value, record, attrs)
    counted = {
        (key.measure, key.label): h
        for key, h in tally.histograms.items()
        if key.kind == kind.value and key.shape == shape and h.count
    }
    persisted = {  # a period taken back (provisioning failed, then up) leaves an empty part
        label: part
        for label, part in periods.contribution.items()
        if part[0].count or any(part[0].counts)
    }
    if counted.keys() != persisted.keys():
        problems.append(f"histograms {sorted(persisted)}, replay {sorted(counted)}")
        return problems
    lost_by_label: dict[str, int] = {}
    for (measure, label), (histogram, lost) in persisted.items():
        want = counted[(measure, label)]
        lost_by_label[label] = lost_by_label.get(label, 0) + lost[0]
        # Exactly, sums included: they are integer nanoseconds.
        if histogram != want:
            problems.append(f"{measure} {label}: histogram {histogram}, replay {want}")
    for label, lost in lost_by_label.items():
        want_lost = tally.chip_ns.get((kind.value, shape, label), 0)
        if lost != want_lost:
            problems.append(f"{label}: {lost} chip-nanoseconds down, replay {want_lost}")
    return problems


def report_ratios(resources: list[Resource], now: int) -> dict[tuple[str, str], float]:
    """What ``megamon report`` prints, summed over topologies per kind and accelerator in
    integer chip-nanoseconds (exact, so the ratio of the sums is the tally's to the bit)."""
    sums: dict[tuple[str, str], list[int]] = {}
    for chips in chip_figures(availability_report(resources, Window(now=now)).resources):
        found = sums.setdefault((chips.kind.value, chips.accelerator), [0, 0])
        found[0] += chips.up_chip_ns
        found[1] += chips.down_chip_ns
    return {group: up / (up + down) for group, (up, down) in sums.items() if up + down > 0}


def check_folds(root: Path, kinds: Iterable[Kind], now: int) -> None:
    """The summaries' folds on the history at ``root`` (a local store's directory) equal
    their batch definitions, and what a restart would read from the persisted summary state,
    a replay; AssertionError naming every problem otherwise."""
    kinds = list(kinds)
    store = LocalEventStore(root)
    problems = history_fold_problems(store, kinds, now)
    problems += summary_state_problems(store, kinds)[1]
    lines = "\n  ".join(problems)
    assert not problems, f"{root}: the folds disagree with their definitions:\n  {lines}"
