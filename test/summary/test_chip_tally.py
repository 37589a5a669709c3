"""The chip tally kept from cycle to cycle equals ``megamon report``'s chip figures computed
from scratch (``availability_report`` + ``chip_figures``) at every ``now``: records grown by
megamon's own append rules, retirements, megamon stopping and starting again, and ``now``
between cycles."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from megamon.domain.events import ArchiveEntry, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.appending import reconcile
from megamon.recording.replay import add_span
from megamon.summary import chiptally
from megamon.summary.availability import Resource, Window, unobserved_gaps
from megamon.summary.chiptally import ChipTally
from test.summary.foldcheck import report_ratios

S = 10**9
T0 = 1_780_272_000 * S
SLACK = 120 * S
KIND = Kind.JOBSET
SHAPES = (
    Attrs(tpu_accelerator="tpu-v6e-slice", tpu_topology="4x4", tpu_chip_count=16),
    Attrs(tpu_accelerator="tpu-v6e-slice", tpu_topology="2x2", tpu_chip_count=4),
    Attrs(tpu_accelerator="tpu-v5p-slice", tpu_topology="2x2x1", tpu_chip_count=4),
    Attrs(tpu_accelerator="", tpu_topology="", tpu_chip_count=8),
    Attrs(tpu_accelerator="tpu-v5p-slice", tpu_topology="2x2x1", tpu_chip_count=0),
)
STATES = {
    "up": {"expected": 1, "ready": 1},
    "down": {"expected": 1, "ready": 0},
    "failed": {"expected": 1, "ready": 0, "failed": True},
    "completed": {"expected": 1, "ready": 0, "expected_down": True},
}


@dataclass
class World:
    """megamon's history of one kind as the event log keeps it: live records, archive
    entries and the observed spans."""

    records: dict[str, EventRecord] = field(default_factory=dict)
    attrs: dict[str, Attrs] = field(default_factory=dict)
    archived: list[ArchiveEntry] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    run_since: int | None = None

    def cycle(self, now: int, observed: dict[str, tuple[str, Attrs]]) -> list[ArchiveEntry]:
        observations = {
            key: Observation.build(**STATES[state], attrs=attrs)  # type: ignore[arg-type]
            for key, (state, attrs) in observed.items()
        }
        result = reconcile(self.records, observations, now)
        retired = [
            ArchiveEntry(
                kind=KIND.value,
                key=key,
                retired_at=now,
                attrs=self.attrs.pop(key).model_dump(by_alias=True),
                record=record,
            )
            for key, record in result.retired.items()
        ]
        self.archived += retired
        self.records = result.records
        for key, observation in observations.items():
            if self.attrs.get(key) != observation.attrs:
                self.attrs[key] = observation.attrs
        self.run_since = now if self.run_since is None else self.run_since
        self.spans = add_span(self.spans, (self.run_since, now))
        return retired

    def resources(self, now: int) -> list[Resource]:
        gaps = unobserved_gaps(self.spans, now, SLACK)
        live = [
            Resource(KIND, key, record, self.attrs[key].model_dump(by_alias=True), unobserved=gaps)
            for key, record in self.records.items()
        ]
        archived = [
            Resource(KIND, e.key, e.record, e.attrs, e.retired_at, unobserved=gaps)
            for e in self.archived
        ]
        return live + archived


CYCLE = st.fixed_dictionaries(
    {
        "after": st.integers(1, 3 * 3600).map(lambda s: s * S),
        "restart": st.booleans(),
        "observed": st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]),
            st.tuples(st.sampled_from(sorted(STATES)), st.sampled_from(SHAPES)),
        ),
        "peek": st.integers(0, 3 * 3600).map(lambda s: s * S),
    }
)


@settings(max_examples=150, deadline=None)
@given(st.lists(CYCLE, min_size=1, max_size=10))
def test_the_tally_is_the_reports_chip_availability_at_every_now(
    cycles: list[dict[str, object]],
) -> None:
    """Whatever happens between cycles, the ratio per kind and accelerator at the cycle's
    ``now``, and at a later ``now`` before the next cycle, is the one computed from scratch;
    a group with neither up nor down time has none."""
    world, tally, now = World(), ChipTally(), T0
    for cycle in cycles:
        now += cycle["after"]  # type: ignore[operator]
        if cycle["restart"]:
            world.run_since = None  # megamon was not running since the last cycle
        for entry in world.cycle(now, cycle["observed"]):  # type: ignore[arg-type]
            tally.add_archived(KIND, entry)
        for at in (now, now + cycle["peek"]):  # type: ignore[operator]
            gaps = unobserved_gaps(world.spans, at, SLACK)
            tally.update(KIND, world.records, world.attrs, gaps)
            covered = {KIND: world.spans[-1][1] if world.spans else None}
            found = {
                (kind, accelerator): ratio for kind, accelerator, ratio in tally.rows(at, covered)
            }
            assert found == report_ratios(world.resources(at), at)
            assert summed(tally, at) == each(tally, at)


def summed(tally: ChipTally, now: int) -> dict[tuple[Kind, str], list[int]]:
    """The kept sums of the live records at ``now`` (groups with some time)."""
    sums: dict[tuple[Kind, str], list[int]] = {}
    for kind in tally._live:
        kind_sums = tally._kind_sums(kind)
        assert kind_sums.hold_at(now, tally._gaps[kind])
        for accelerator, group in kind_sums.groups.items():
            chiptally._add(sums, (kind, accelerator), 1, *group.at(now))
    return {group: values for group, values in sums.items() if values != [0, 0]}


def each(tally: ChipTally, now: int) -> dict[tuple[Kind, str], list[int]]:
    """The same, record by record (what the sums stand for)."""
    sums: dict[tuple[Kind, str], list[int]] = {}
    for kind in tally._live:
        tally._add_each(sums, kind, now)
    return {group: values for group, values in sums.items() if values != [0, 0]}


def test_an_unchanged_record_is_not_figured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records are immutable: a cycle that hands back the same record and attrs only adds
    the running time, as the settled summaries do."""
    calls: list[int] = []
    real = chiptally.resource_availability

    def counting(resource: Resource, window: Window) -> object:
        calls.append(window.now)
        return real(resource, window)

    monkeypatch.setattr(chiptally, "resource_availability", counting)
    world, tally = World(), ChipTally()
    world.cycle(T0, {"a": ("up", SHAPES[0])})
    tally.update(KIND, world.records, world.attrs, ())
    assert tally.rows(T0 + 3600 * S, {KIND: T0}) == (("jobset", "tpu-v6e-slice", 1.0),)
    settled = len(calls)
    world.cycle(T0 + 3600 * S, {"a": ("up", SHAPES[0])})
    tally.update(KIND, world.records, world.attrs, ())
    world.cycle(T0 + 7200 * S, {"a": ("down", SHAPES[0])})
    tally.update(KIND, world.records, world.attrs, ())
    assert len(calls) == 2 * settled  # settled once more: for the new down event only
    assert tally.rows(T0 + 3 * 3600 * S, {KIND: T0}) == (("jobset", "tpu-v6e-slice", 2 / 3),)


def test_an_archived_resource_retired_after_now_is_figured_up_to_now_until_it_is_retired() -> None:
    """A retirement stamped later than the report's ``now`` (a replica whose clock runs
    ahead) is not settled at ``now``: its figures go on to its retirement."""
    world = World()
    world.cycle(T0, {"a": ("up", SHAPES[0])})
    world.cycle(T0 + 1800 * S, {"a": ("down", SHAPES[0])})
    [entry] = world.cycle(T0 + 2 * 3600 * S, {})
    tally = ChipTally()
    tally.update(KIND, {}, {}, ())
    tally.add_archived(KIND, entry)
    covered = {KIND: T0 + 2 * 3600 * S}
    assert tally.rows(T0 + 3600 * S, covered) == (("jobset", "tpu-v6e-slice", 0.5),)
    assert tally.rows(T0 + 3 * 3600 * S, covered) == (("jobset", "tpu-v6e-slice", 0.25),)
    assert tally.rows(T0 + 9 * 3600 * S, covered) == (("jobset", "tpu-v6e-slice", 0.25),)
