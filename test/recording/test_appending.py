"""The append rules (docs/rules.md): which observations become events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.observations import Observation
from megamon.recording.appending import next_record, reconcile
from test.timeline import T0, H, M, down, record, up

NOW = T0 + H


def obs(ready: int, *, expected: int = 1, unknown: int = 0, **kw: bool) -> Observation:
    return Observation.build(expected=expected, ready=ready, unknown=unknown, **kw)


UP = obs(1)
DOWN = obs(0)


def test_first_observation_down_appends_down_now() -> None:
    assert next_record(None, DOWN, NOW).events == (UpEvent(up=False, ts=NOW),)


def test_first_observation_up_appends_down_and_up_now() -> None:
    assert next_record(None, UP, NOW).events == (
        UpEvent(up=False, ts=NOW),
        UpEvent(up=True, ts=NOW),
    )


def test_first_observation_failed_is_marked_failed() -> None:
    got = next_record(None, obs(0, failed=True), NOW)
    assert got.events == (UpEvent(up=False, failed=True, ts=NOW),)


def test_an_up_change_appends() -> None:
    assert next_record(record(down(0)), UP, NOW).events[-1] == UpEvent(up=True, ts=NOW)
    assert next_record(record(down(0), up(M)), DOWN, NOW).events[-1] == UpEvent(up=False, ts=NOW)


def test_expected_down_is_recorded_down_whatever_the_counts() -> None:
    got = next_record(record(down(0), up(M)), obs(1, expected_down=True), NOW)
    assert got.events[-1] == UpEvent(up=False, expected_down=True, ts=NOW)


def test_failure_changing_while_down_appends() -> None:
    failed = next_record(record(down(0)), obs(0, failed=True), NOW)
    assert failed.events[-1] == UpEvent(up=False, failed=True, ts=NOW)
    retrying = next_record(failed, DOWN, NOW + M)
    assert retrying.events[-1] == UpEvent(up=False, ts=NOW + M)


def test_nothing_else_appends_and_the_same_record_comes_back() -> None:
    still_down = record(down(0))
    assert next_record(still_down, DOWN, NOW) is still_down
    still_failed = record(down(0, f=True))
    assert next_record(still_failed, obs(0, failed=True, expected_down=True), NOW) is still_failed
    still_up = record(down(0), up(M))
    assert next_record(still_up, obs(1, failed=True), NOW) is still_up
    two_unknown = Observation.build(expected=10, ready=8, unknown=2, threshold=0.1)
    assert next_record(still_down, two_unknown, NOW) is still_down


def test_unknown_within_threshold_is_up() -> None:
    o = Observation.build(expected=10, ready=9, unknown=1, threshold=0.1)
    assert next_record(record(down(0)), o, NOW).events[-1].up


def test_clock_skew_never_writes_an_earlier_event() -> None:
    rec = record(down(0), up(2 * H))
    got = next_record(rec, DOWN, T0 + H)
    assert got.events[-1] == UpEvent(up=False, ts=T0 + 2 * H)


def test_down_again_before_the_clock_moved_is_a_nanosecond_later() -> None:
    """Up and down at one instant: the second down would read back from the log as the
    first (an event is its key, timestamp and state), leaving the key up after a restart."""
    first = next_record(None, UP, T0)  # down@T0, up@T0
    got = next_record(first, DOWN, T0)
    assert [(e.up, e.ts) for e in got.events] == [(False, T0), (True, T0), (False, T0 + 1)]
    assert next_record(got, UP, T0).events[-1] == UpEvent(up=True, ts=T0 + 1)  # a new instant


def test_reconcile_reports_changes_and_retires_unobserved_keys() -> None:
    records = {"a": record(down(0)), "b": record(down(0), up(M)), "gone": record(down(0))}
    result = reconcile(records, {"a": UP, "b": UP, "new": DOWN}, NOW)
    assert result.changed == {"a", "new"}
    assert set(result.records) == {"a", "b", "new"}
    assert result.records["b"] is records["b"]
    assert result.retired == {"gone": records["gone"]}
    assert result.dirty


def test_reconcile_with_nothing_new_is_clean() -> None:
    records = {"b": record(down(0), up(M))}
    result = reconcile(records, {"b": UP}, NOW)
    assert not result.dirty
    assert result.records == records


def test_records_are_immutable() -> None:
    rec = EventRecord()
    after = next_record(rec, UP, NOW)
    assert len(rec) == 0 and len(after) == 2


# A down the node pool observer held back until GKE said why (``down_since``) ------------------
#
#   nodes vanish at +1 min, GKE answers at +2 min:
#   record:  up ____________|down (stamped +1 min, not +2 min)


def test_a_held_down_is_stamped_when_it_began() -> None:
    held = obs(0).model_copy(update={"down_since": T0 + M})
    got = next_record(record(down(0), up(0)), held, T0 + 2 * M)
    assert got.events[-1] == UpEvent(up=False, ts=T0 + M)


def test_a_held_expected_down_keeps_its_flags_and_its_start() -> None:
    held = obs(0, expected_down=True).model_copy(update={"down_since": T0 + M})
    got = next_record(record(down(0), up(0)), held, T0 + 2 * M)
    assert got.events[-1] == UpEvent(up=False, expected_down=True, ts=T0 + M)


def test_a_held_down_that_recovered_appends_the_down_then_the_up() -> None:
    back = UP.model_copy(update={"down_since": T0 + M, "reason": "node-lost"})
    got = next_record(record(down(0), up(0)), back, T0 + 2 * M)
    assert got.events[-2:] == (
        UpEvent(up=False, ts=T0 + M, reason="node-lost"),
        UpEvent(up=True, ts=T0 + 2 * M),
    )


def test_a_held_down_is_never_stamped_before_the_last_event() -> None:
    """Nor at its instant: an up and a down of one key at one instant have no order once
    the log is read back, so the down is a nanosecond after the up."""
    held = obs(0).model_copy(update={"down_since": T0 + M})
    got = next_record(record(down(0), up(2 * M)), held, T0 + 3 * M)
    assert got.events[-1] == UpEvent(up=False, ts=T0 + 2 * M + 1)


def test_a_held_down_that_ended_at_once_still_has_its_up_after_it() -> None:
    held = obs(1).model_copy(update={"down_since": T0 + 2 * M, "reason": "restart"})
    got = next_record(record(down(0), up(2 * M)), held, T0 + 2 * M)
    assert [e.ts for e in got.events[-2:]] == [T0 + 2 * M + 1, T0 + 2 * M + 2]


def test_down_since_on_a_record_already_down_appends_nothing() -> None:
    before = record(down(0), up(M), down(2 * M))
    held = obs(0, expected_down=True).model_copy(update={"down_since": T0 + 3 * M})
    assert next_record(before, held, T0 + 4 * M) is before


OBSERVED = [
    UP,
    DOWN,
    obs(0, failed=True),
    obs(0, expected_down=True),
    obs(1, unknown=1, expected=2),
    UP.model_copy(update={"down_since": T0 + M, "reason": "node-lost"}),
    DOWN.model_copy(update={"down_since": T0 + M}),
    UP.model_copy(update={"up_since": T0 + 2 * M}),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2 * H),
            st.dictionaries(st.sampled_from("abc"), st.sampled_from(range(len(OBSERVED)))),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_knowing_the_batch_that_made_the_records_changes_nothing(
    batches: list[tuple[int, dict[str, int]]],
) -> None:
    """The event log tells ``reconcile`` which batch made its records (``applied``), so that
    a key observed as the same object again is skipped: the records, changes and
    retirements are those of reconciling without it, batch after batch, whatever the
    observations hold (held downs, timed ups, failures) and however often they repeat."""
    records: dict[str, EventRecord] = {}
    plain: dict[str, EventRecord] = {}
    applied = None
    now = T0
    for after, chosen in batches:
        now += after
        observations = {key: OBSERVED[index] for key, index in chosen.items()}
        ours = reconcile(records, observations, now, applied)
        theirs = reconcile(plain, observations, now)
        assert ours.records == theirs.records
        assert (ours.changed, ours.retired) == (theirs.changed, theirs.retired)
        records, plain, applied = ours.records, theirs.records, observations
