"""The summarizer (docs/rules.md): every rule, the Go megamon's own cases, and provisioning.

Timelines read left to right; ``|`` is an event, ``X`` a failed down event, ``E`` an expected
down event, hours between events below.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from megamon.domain.events import EventRecord
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.summary.summarizing import anomalies, summarize
from test.timeline import T0, H, M, down, record, up

PROVISIONING = ProvisioningState.PROVISIONING
SUCCESS = ProvisioningState.SUCCESS
FAILED = ProvisioningState.FAILED


@dataclass(frozen=True)
class Case:
    record: EventRecord
    now: int
    want: Summary


CASES: dict[str, Case] = {
    "empty": Case(record(), T0, Summary()),
    "first event up is invalid": Case(record(up(0)), T0 + H, Summary()),
    "up then down is invalid": Case(record(up(0), down(H)), T0 + H, Summary()),
    # down:   _____
    # event:  0    now
    # hrs:      1
    "not up yet: provisioning, duration grows": Case(
        record(down(0)),
        T0 + H,
        Summary(down_time=H, provisioning_duration=H, provisioning_state=PROVISIONING),
    ),
    # down:   ____X
    # event:  0   1
    "failed provisioning (GKE ERROR)": Case(
        record(down(0), down(H, f=True)),
        T0 + H,
        Summary(
            down_time=H,
            provisioning_duration=H,
            provisioning_state=FAILED,
        ),
    ),
    # down:   ____X______
    # event:  0   1      now
    # hrs:      1    2
    "failed provisioning is frozen at the failure, down time keeps growing": Case(
        record(down(0), down(H, f=True)),
        T0 + 3 * H,
        Summary(
            down_time=3 * H,
            provisioning_duration=H,
            provisioning_state=FAILED,
        ),
    ),
    "failed at first sight: failed with zero duration": Case(
        record(down(0, f=True)),
        T0 + H,
        Summary(down_time=H, provisioning_state=FAILED),
    ),
    # down:   ____X____|____
    # event:  0   1    2    now     (ERROR, then retrying: provisioning again)
    "failed then retrying is provisioning again, from the first event": Case(
        record(down(0), down(H, f=True), down(2 * H)),
        T0 + 3 * H,
        Summary(down_time=3 * H, provisioning_duration=3 * H, provisioning_state=PROVISIONING),
    ),
    "two plain down events form one down period": Case(
        record(down(0), down(H)),
        T0 + H,
        Summary(down_time=H, provisioning_duration=H, provisioning_state=PROVISIONING),
    ),
    # up:              ____
    # down:   ____X___|
    # event:  0   1   2    now
    # hrs:      1   1   1
    "failed then came up: success, duration from the first event": Case(
        record(down(0), down(H, f=True), up(2 * H)),
        T0 + 3 * H,
        Summary(
            down_time=2 * H,
            up_time=H,
            down_time_initial=2 * H,
            provisioning_duration=2 * H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:
    # down:   ____|
    # event:  0   1
    "just up": Case(
        record(down(0), up(H)),
        T0 + H,
        Summary(
            down_time=H, down_time_initial=H, provisioning_duration=H, provisioning_state=SUCCESS
        ),
    ),
    # up:         _____
    # down:   ____|
    # event:  0   1    now
    # hrs:      1   3
    "up for 3 hours": Case(
        record(down(0), up(H)),
        T0 + 4 * H,
        Summary(
            down_time_initial=H,
            down_time=H,
            up_time=3 * H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____
    # down:   ____|   |
    # event:  0   1   2
    "single interruption": Case(
        record(down(0), up(H), down(2 * H)),
        T0 + 2 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=H,
            interruption_count=1,
            total_up_time_between_interruption=H,
            mean_up_time_between_interruption=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____
    # down:   ____|   |____
    # event:  0   1   2    now
    "single interruption then down for an hour": Case(
        record(down(0), up(H), down(2 * H)),
        T0 + 3 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=2 * H,
            interruption_count=1,
            total_up_time_between_interruption=H,
            mean_up_time_between_interruption=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____
    # down:   ____|   |___|
    # event:  0   1   2   3
    "single interruption single recovery": Case(
        record(down(0), up(H), down(2 * H), up(3 * H)),
        T0 + 3 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=2 * H,
            interruption_count=1,
            recovery_count=1,
            total_down_time_between_recovery=H,
            mean_down_time_between_recovery=H,
            latest_down_time_between_recovery=H,
            total_up_time_between_interruption=H,
            mean_up_time_between_interruption=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____   _____
    # down:   ____|   |___|
    # event:  0   1   2   3    now
    "single interruption single recovery then up for an hour": Case(
        record(down(0), up(H), down(2 * H), up(3 * H)),
        T0 + 4 * H,
        Summary(
            down_time_initial=H,
            up_time=2 * H,
            down_time=2 * H,
            interruption_count=1,
            recovery_count=1,
            total_down_time_between_recovery=H,
            mean_down_time_between_recovery=H,
            latest_down_time_between_recovery=H,
            total_up_time_between_interruption=H,
            mean_up_time_between_interruption=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____   _________
    # down:   ____|   |___|        |___
    # event:  0   1   2   3        4    now
    # hrs:      1   1   1      2     3
    "two interruptions one recovery with trailing downtime": Case(
        record(down(0), up(H), down(2 * H), up(3 * H), down(5 * H)),
        T0 + 8 * H,
        Summary(
            down_time_initial=H,
            up_time=3 * H,
            down_time=5 * H,
            interruption_count=2,
            recovery_count=1,
            total_down_time_between_recovery=H,
            mean_down_time_between_recovery=H,
            latest_down_time_between_recovery=H,
            total_up_time_between_interruption=3 * H,
            mean_up_time_between_interruption=3 * H // 2,
            latest_up_time_between_interruption=2 * H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____   ______
    # down:   ____|   |___|    |______|
    # event:  0   1   2   3    4      5
    # hrs:      1   1   1    2     3
    "two interruptions two recoveries of different durations": Case(
        record(down(0), up(H), down(2 * H), up(3 * H), down(5 * H), up(8 * H)),
        T0 + 8 * H,
        Summary(
            down_time_initial=H,
            up_time=3 * H,
            down_time=5 * H,
            interruption_count=2,
            recovery_count=2,
            total_down_time_between_recovery=4 * H,
            mean_down_time_between_recovery=2 * H,
            latest_down_time_between_recovery=3 * H,
            total_up_time_between_interruption=3 * H,
            mean_up_time_between_interruption=3 * H // 2,
            latest_up_time_between_interruption=2 * H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____
    # down:   ____|   E
    # event:  0   1   2
    "expected down is not an interruption; latest kept, total zeroed": Case(
        record(down(0), up(H), down(2 * H, ed=True)),
        T0 + 2 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____   __
    # down:   ____|   E___|
    # event:  0   1   2   3
    "the end of an expected down period is not a recovery, its time still counts": Case(
        record(down(0), up(H), down(2 * H, ed=True), up(3 * H)),
        T0 + 3 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=2 * H,
            latest_up_time_between_interruption=H,
            total_down_time_between_recovery=H,
            latest_down_time_between_recovery=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    # up:         _____       ____
    # down:   ____|   |___X___|
    # event:  0   1   2   3   4
    "a down period annotated as failed stays one period": Case(
        record(down(0), up(H), down(2 * H), down(3 * H, f=True), up(4 * H)),
        T0 + 4 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=3 * H,
            interruption_count=1,
            recovery_count=1,
            total_down_time_between_recovery=2 * H,
            mean_down_time_between_recovery=2 * H,
            latest_down_time_between_recovery=2 * H,
            total_up_time_between_interruption=H,
            mean_up_time_between_interruption=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    "a down period is expected by its first event, not a later one": Case(
        record(down(0), up(H), down(2 * H), down(3 * H, ed=True, f=True), up(4 * H)),
        T0 + 4 * H,
        Summary(
            down_time_initial=H,
            up_time=H,
            down_time=3 * H,
            interruption_count=1,
            recovery_count=1,
            total_down_time_between_recovery=2 * H,
            mean_down_time_between_recovery=2 * H,
            latest_down_time_between_recovery=2 * H,
            total_up_time_between_interruption=H,
            mean_up_time_between_interruption=H,
            latest_up_time_between_interruption=H,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    "means truncate like Go's Duration division": Case(
        record(down(0), up(H), down(H + 1), up(H + 2), down(H + 4), up(H + 5), down(H + 6)),
        T0 + H + 6,
        Summary(
            down_time_initial=H,
            up_time=4,
            down_time=H + 2,
            interruption_count=3,
            recovery_count=2,
            total_down_time_between_recovery=2,
            mean_down_time_between_recovery=1,
            latest_down_time_between_recovery=1,
            total_up_time_between_interruption=4,
            mean_up_time_between_interruption=1,
            latest_up_time_between_interruption=1,
            provisioning_duration=H,
            provisioning_state=SUCCESS,
        ),
    ),
    "now before the last event (clock skew): that event has not happened yet": Case(
        record(down(0), up(H)),
        T0 + H - 5 * M,
        Summary(
            down_time=H - 5 * M,
            provisioning_duration=H - 5 * M,
            provisioning_state=PROVISIONING,
        ),
    ),
    "an event later than now is not an interruption yet, nor 73 years of down time": Case(
        record(down(0), up(M), down(H), up(H + 10 * M)),
        T0 + H + 5 * M,
        Summary(
            down_time_initial=M,
            down_time=M + 5 * M,
            up_time=H - M,
            interruption_count=1,
            total_up_time_between_interruption=H - M,
            mean_up_time_between_interruption=H - M,
            latest_up_time_between_interruption=H - M,
            provisioning_duration=M,
            provisioning_state=SUCCESS,
        ),
    ),
    "now before the only event: nothing has happened yet, nothing negative": Case(
        record(down(0)),
        T0 - M,
        Summary(),
    ),
    "first observation already up: down and up at the same instant": Case(
        record(down(0), up(0)),
        T0 + H,
        Summary(up_time=H, provisioning_state=SUCCESS),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_summary_matches_the_rules(name: str) -> None:
    case = CASES[name]
    assert summarize(case.record, case.now) == case.want


def test_nanosecond_durations_are_exact() -> None:
    rec = record(down(0), up(1), down(1_000_000_001), up(3_000_000_004))
    got = summarize(rec, T0 + 3_000_000_004)
    assert got.latest_down_time_between_recovery == 2_000_000_003
    assert got.latest_up_time_between_interruption == 1_000_000_000
    assert got.down_time == 2_000_000_004


def test_a_step_back_in_time_counts_as_zero_and_is_reported() -> None:
    rec = record(down(0), up(2 * H), down(H), up(3 * H))
    got = summarize(rec, T0 + 3 * H)
    assert got.latest_up_time_between_interruption == 0
    assert got.latest_down_time_between_recovery == 2 * H
    assert anomalies(rec) == ["event 2 is earlier than event 1: that period counts as zero"]


def test_invalid_history_is_reported_not_fatal() -> None:
    assert anomalies(record(up(0))) == [
        "first event is up: history is invalid and summarizes to zero"
    ]
    assert anomalies(record(down(0), up(H))) == []
