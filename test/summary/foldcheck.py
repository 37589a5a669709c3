"""The folds held to their definitions on a history as megamon wrote it, for the tests that
have one: ``test_folds.py`` on histories its recorder wrote, and the end of every emulator
scenario (``test/integration/scenarios/conftest.py``) on the history megamon wrote there.

- ``fold_problems``: one lifetime (a ``Resource`` as ``megamon report`` reads it) folded in
  pieces (``SummaryFold``, ``PeriodFold``, ``AvailabilityFold``) against the batch figures
  (``settle``, ``record_periods``, ``resource_availability``);
- ``history_fold_problems``: that for every lifetime, live and archived, of a history, at
  split points chosen by ``split_points`` (deterministic: a record's own key seeds them);

Each gives the problems it found, one line each, so that a caller reports them all at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from random import Random

from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.fleet.resources import read_resources
from megamon.stores.base import EventStore
from megamon.summary.availability import Resource, Window, resource_availability
from megamon.summary.chiptally import AvailabilityFold, Growth, Span, gaps_before
from megamon.summary.distributions import PeriodFold, record_periods
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
