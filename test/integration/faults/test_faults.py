"""Faults lose nothing: each case plays the scenario with one kind of fault and compares the
history megamon wrote with the history of the same scenario without faults — the same
transitions, nothing lost, nothing duplicated, each timestamp within a cycle or two of the
clean run (a transition is seen by the next cycle; two runs can fall on either side of one).

Long variants (30 s stalls, longer outages) run with ``make chaos`` (``MEGAMON_CHAOS=1``).
"""

from __future__ import annotations

import os
import re
import time

import orjson
import pytest

from megamon.domain.kinds import Kind
from test.integration.e2e.harness import value
from test.integration.faults.harness import (
    CYCLE_S,
    END_S,
    PATH,
    History,
    Rig,
    assert_same_history,
    future_pool_status,
    malformed_jobset,
    malformed_status,
    run_scenario,
    take_the_lease,
    wait_for_stalled_write,
)

CHAOS = bool(os.environ.get("MEGAMON_CHAOS"))
TOLERANCE_S = 2 * CYCLE_S + 1.0
"""Two cycles plus scheduling noise on a loaded 2-core machine."""
STALL_S = 30.0 if CHAOS else 4.0


def test_the_clean_scenario_records_what_happened(clean_history: History) -> None:
    pools = clean_history["nodepool"]
    assert [e[1:] for e in pools["a"]] == [
        (False, False, False),
        (True, False, False),
        (False, False, False),
        (True, False, False),
    ]
    assert [e[1:] for e in pools["b"]] == [(False, False, True)]
    assert [e[1] for e in clean_history["jobset"]["train"]] == [False, True, False]


# GCS ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [503, 429])
def test_gcs_error_bursts(fresh_rig: Rig, clean_history: History, status: int) -> None:
    """GCS answers bursts of 8 errors (503, 429) three times during the scenario. The library
    retries with backoff; what still fails waits in memory and the persist loop writes it a
    second later, with its original timestamps.
    """
    faults = [
        (at, f"{status} burst", lambda r, s=status: r.proxy.fail_next(8, s))
        for at in (2.2, 5.2, 10.2)
    ]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


def test_gcs_stalls(fresh_rig: Rig, clean_history: History) -> None:
    """GCS holds two writes for the stall time. The per-call timeout cuts them, the retry or the
    next persist round writes the history; observation never waits for the store.
    """
    faults = [(4.8, "stall the next writes", lambda r: r.proxy.stall_next(2, STALL_S))]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


def test_gcs_connection_reset_in_the_middle_of_an_upload(
    fresh_rig: Rig, clean_history: History
) -> None:
    """The connection is reset half-way through an upload, three times. GCS keeps no partial
    object; the write is retried with its generation precondition, so it lands once.
    """
    faults = [
        (at, "reset an upload", lambda r: r.proxy.reset_next_upload(1)) for at in (2.1, 5.1, 10.1)
    ]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


def test_gcs_object_deleted_underneath(fresh_rig: Rig, clean_history: History) -> None:
    """node-pools.json (a snapshot) is deleted while megamon runs. The log is untouched;
    megamon writes the file again at its next snapshot from the history it holds, with a
    warning. Snapshots every 3 s, so that there is one to delete at 6.5 s.
    """
    snapshot = fresh_rig.storage.bucket(fresh_rig.bucket).blob(f"{PATH}/node-pools.json")
    deleted: list[bool] = []

    def delete(r: Rig) -> None:
        r.processes[-1].wait_for(snapshot.exists, "a first snapshot", 30)
        snapshot.delete()
        deleted.append(True)

    faults = [(6.5, "delete node-pools.json", delete)]
    history = run_scenario(fresh_rig, faults, SnapshotIntervalSeconds=3)
    assert deleted, "the fault was not applied"
    assert_same_history(clean_history, history, TOLERANCE_S)
    assert snapshot.exists(), "written again from the history megamon holds"


def test_gcs_corrupt_object_is_quarantined_never_overwritten_and_nothing_is_lost(
    fresh_rig: Rig, clean_history: History
) -> None:
    """node-pools.json (a snapshot) is replaced by garbage. At its next snapshot megamon
    copies it to node-pools.json.corrupt-<time> first, counts it, and writes the file again
    from the history it holds (the log is untouched).
    """
    garbage = b'{"a": {"upEvents": [{"up": "maybe"'

    def corrupt(r: Rig) -> None:
        r.storage.bucket(r.bucket).blob(f"{PATH}/node-pools.json").upload_from_string(garbage)

    history = run_scenario(fresh_rig, [(6.5, "corrupt node-pools.json", corrupt)])
    assert_same_history(clean_history, history, TOLERANCE_S)
    names = [b.name for b in fresh_rig.storage.list_blobs(fresh_rig.bucket, prefix=PATH)]
    [aside] = [n for n in names if ".corrupt-" in n]
    assert fresh_rig.storage.bucket(fresh_rig.bucket).blob(aside).download_as_bytes() == garbage


def test_two_writers_without_leader_election_race_and_lose_nothing(
    fresh_rig: Rig, clean_history: History
) -> None:
    """Two replicas without leader election on one history. The first to take the writer
    lease appends; the other stands by (saying so in its log and in a metric) and records
    nothing, so no stale view is ever written.
    """
    history = run_scenario(fresh_rig, [], replicas=2)
    assert_same_history(clean_history, history, TOLERANCE_S)
    logs = [process.log() for process in fresh_rig.processes]
    assert sum("standing by" in text for text in logs) == 1


def test_two_replicas_with_leader_election(fresh_rig: Rig, clean_history: History) -> None:
    """Two replicas with leader election: only the leader observes and writes; the standby
    publishes build info and leader 0.
    """
    history = run_scenario(fresh_rig, [], replicas=2, EnableLeaderElection=True)
    assert_same_history(clean_history, history, TOLERANCE_S + 2 * CYCLE_S)


def test_megamon_killed_in_the_middle_of_a_snapshot_then_restarted(
    fresh_rig: Rig, clean_history: History
) -> None:
    """megamon snapshots every 3 s. Its second snapshot (its first compare-and-swap write: the
    mark naming the new node-pools.json, written before the file) is held by a stall and
    megamon is killed with SIGKILL in the middle of it, then restarted. The event file is the
    old one or the new one, never half of one (GCS has no partial objects), and the mark
    vouches for either: the restart reads it and the segments after it."""
    restarted: dict[str, float] = {}

    def kill_mid_snapshot(r: Rig) -> None:
        replacing = r"ifGenerationMatch=[1-9]"  # not a segment: those are create-only
        r.proxy.stall_next(1, 30.0, method="POST", path=replacing)
        r.processes[0].wait_for(
            lambda: any(re.search(replacing, rec.target) for rec in r.proxy.records),
            "a snapshot write",
            10,
        )
        r.proxy.clear_rules()  # the stalled write dies with the process
        restarted["gap"] = r.restart(SnapshotIntervalSeconds=3)

    history = run_scenario(
        fresh_rig,
        [(4.5, "SIGKILL during a snapshot", kill_mid_snapshot)],
        SnapshotIntervalSeconds=3,
    )
    assert_same_history(clean_history, history, TOLERANCE_S + restarted["gap"] + CYCLE_S)


def test_a_truncated_segment_is_quarantined_never_overwritten_and_reported(
    fresh_rig: Rig, clean_history: History
) -> None:
    """A node-pool segment loses its tail (the heartbeat line), then megamon is killed and
    restarted, so the restart reads it. The segment is copied to log/quarantine/, counted and
    logged; its whole lines are kept and the segment itself is never rewritten."""
    bucket = fresh_rig.storage.bucket(fresh_rig.bucket)
    damaged: dict[str, bytes] = {}
    restarted: dict[str, float] = {}

    def truncate_and_restart(r: Rig) -> None:
        prefix = f"{PATH}/log/kind=nodepool/"
        name = sorted(b.name for b in r.storage.list_blobs(r.bucket, prefix=prefix))[0]
        data = bucket.blob(name).download_as_bytes()
        damaged[name] = data[:-10]
        bucket.blob(name).upload_from_string(damaged[name])
        restarted["gap"] = r.restart()

    history = run_scenario(fresh_rig, [(6.5, "truncate a segment, restart", truncate_and_restart)])
    assert_same_history(clean_history, history, TOLERANCE_S + restarted["gap"] + 2 * CYCLE_S)
    [(name, data)] = damaged.items()
    assert bucket.blob(name).download_as_bytes() == data
    names = [b.name for b in fresh_rig.storage.list_blobs(fresh_rig.bucket, prefix=PATH)]
    assert any("/log/quarantine/" in n and n.endswith(".corrupt") for n in names)
    assert "cannot be read whole" in fresh_rig.processes[-1].log()


def test_gcs_outage_across_a_snapshot(fresh_rig: Rig, clean_history: History) -> None:
    """GCS answers 503 to everything for five seconds, across a snapshot. Segments, the lease
    renewal and the snapshot wait in memory and are written when GCS is back, each
    transition with its own timestamp."""
    faults = [
        (6.0, "GCS down", lambda r: r.proxy.fail_next(1_000_000, 503)),
        (11.0, "GCS back", lambda r: r.proxy.clear_rules()),
    ]
    history = run_scenario(fresh_rig, faults, SnapshotIntervalSeconds=3)
    assert_same_history(clean_history, history, TOLERANCE_S)


# GKE ------------------------------------------------------------------------------------


def test_gke_403_keeps_readiness_and_shows_stale_data(
    fresh_rig: Rig, clean_history: History
) -> None:
    """GKE answers 403 for six seconds. megamon logs one line per failed poll, keeps the last node
    pool list (node readiness still flows from the Kubernetes API), and the freshness gauge
    shows the growing age of the GKE data.
    """
    seen: dict[str, float | None] = {}

    def forbid(r: Rig) -> None:
        r.gke.inject_fault(status=403, count=1_000_000)

    def look(r: Rig) -> None:
        samples = r.processes[0].scrape()
        seen["up"] = value(samples, "megamon_nodepool_up", nodepool_name="a")
        fresh = value(samples, "megamon_last_observation_timestamp_seconds", source="gke")
        seen["age"] = time.time() - fresh if fresh else None

    faults = [
        (4.0, "GKE answers 403", forbid),
        (9.7, "scrape", look),
        (10.5, "GKE answers again", lambda r: r.gke.clear_faults()),
    ]
    history = run_scenario(fresh_rig, faults)
    assert_same_history(clean_history, history, TOLERANCE_S)
    assert seen["up"] == 1.0  # readiness from the nodes kept the pool's state current
    assert seen["age"] is not None and seen["age"] > 3.0
    assert "403" in fresh_rig.processes[0].log()


def _once_the_500s_are_retried(rig: Rig) -> None:
    """Wait until the client has taken every pending fault. A retry sleeps a random part of
    its backoff, so 500s may still be pending when the slow answers are scripted; a slow
    fault added then joins them (a slow failure each, then more backoff), and one
    ListNodePools call can outlast the scenario, so that pool b, created at 12 s, is never
    seen (which happened under load with five 500s and two 3 s answers). Waiting keeps the
    two faults one after the other, as the case means them."""
    deadline = time.monotonic() + 10.0
    while rig.gke.pending_faults():
        if time.monotonic() > deadline:
            raise AssertionError("megamon did not retry GKE's 500s within 10 s")
        time.sleep(0.05)


def test_gke_500s_and_timeouts(fresh_rig: Rig, clean_history: History) -> None:
    """GKE answers 500s, then (once they are retried) answers slowly. The client retries the
    500s; the slow polls delay only the polling loop.

    The worst case fits the scenario: the 500s from 3 s are taken by 4.75 s (a poll within
    a second, then retries after at most 0.25 s and 0.5 s), the two slow polls (2 s each, the
    first within a second of 6 s) end by 12 s, and the next poll sees pool b by 13 s, as the
    clean run does.
    """

    def slow(r: Rig) -> None:
        _once_the_500s_are_retried(r)
        r.gke.inject_fault(latency_seconds=2.0, count=2)

    faults = [
        (3.0, "GKE 500s", lambda r: r.gke.inject_fault(status=500, count=3)),
        (6.0, "GKE slow, once the 500s are retried", slow),
    ]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


def test_gke_reports_a_pool_status_the_client_does_not_know(
    fresh_rig: Rig, clean_history: History
) -> None:
    """From 6 s on GKE reports pool a with status 99, a value newer than the client. megamon
    reads it as its raw value; the list of pools stays current, so pool b, created at 12 s,
    is recorded as in the clean run.
    """
    faults = [(6.0, "pool a: status 99", lambda r: future_pool_status(r, "a", 99))]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


# Kubernetes -----------------------------------------------------------------------------


def test_kubernetes_malformed_jobsets(fresh_rig: Rig, clean_history: History) -> None:
    """Two JobSets whose replicatedJobs and replicatedJobsStatus are numbers appear, one
    before and one during the run's busiest part. Each is skipped, logged once and counted
    (kind jobset, reason invalid); the JobSet watch lives on, so train's transitions are
    recorded as in the clean run.
    """
    seen: dict[str, float | None] = {}

    def look(r: Rig) -> None:
        seen["errors"] = value(
            r.processes[0].scrape(),
            "megamon_observation_errors_total",
            kind="jobset",
            reason="invalid",
        )

    faults = [
        (0.5, "a malformed JobSet", lambda r: malformed_jobset(r, "bad-1")),
        (9.0, "another one", lambda r: malformed_jobset(r, "bad-2")),
        (14.0, "scrape", look),
    ]
    history = run_scenario(fresh_rig, faults)
    assert_same_history(clean_history, history, TOLERANCE_S)
    assert seen["errors"] == 2.0
    assert fresh_rig.processes[0].log().count("replicatedJobs must be a list") == 2


def test_kubernetes_a_live_jobset_turns_malformed_and_is_fixed(
    fresh_rig: Rig, clean_history: History
) -> None:
    """JobSet train, up, gets a status megamon cannot read (replicatedJobsStatus a number) at
    4 s, and a readable one again at 7 s. Meanwhile it is unobserved, not gone: its last
    observation stands, the skip is logged and counted once (kind jobset, reason invalid);
    it is never archived as deleted nor, once fixed, recorded as a new lifetime.
    """
    seen: dict[str, float | None] = {}

    def look(r: Rig) -> None:
        seen["errors"] = value(
            r.processes[0].scrape(),
            "megamon_observation_errors_total",
            kind="jobset",
            reason="invalid",
        )

    faults = [
        (4.0, "train: malformed status", lambda r: malformed_status(r, "train")),
        (6.0, "scrape", look),
        (7.0, "train: readable again", lambda r: r.world.jobset_status("train", ready=1)),
    ]
    history = run_scenario(fresh_rig, faults)
    assert_same_history(clean_history, history, TOLERANCE_S)
    assert seen["errors"] == 1.0
    assert fresh_rig.store().archived_keys(Kind.JOBSET) == []


def test_kubernetes_dropped_watches_and_410_gone(fresh_rig: Rig, clean_history: History) -> None:
    """Every watch is dropped, then the history is compacted so the reconnect gets 410 Gone. The
    watch caches reconnect with backoff and list again.
    """
    faults = [
        (4.5, "drop every watch", lambda r: r.kube.drop_watches(abrupt=True)),
        (7.5, "compact: 410 Gone", lambda r: r.kube.compact(drop_watches=True)),
    ]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


def test_kubernetes_api_server_restarted_with_the_same_state(
    fresh_rig: Rig, clean_history: History
) -> None:
    """The Kubernetes API server restarts with the same state. The watch caches reconnect and
    resume from their resourceVersion.
    """
    faults = [(4.5, "restart the API server", lambda r: r.kube.restart())]
    assert_same_history(clean_history, run_scenario(fresh_rig, faults), TOLERANCE_S)


# megamon itself -------------------------------------------------------------------------


LEASE_GAP_S = 3
"""How long the Lease is held by an intruder: the leader's next renewal (every 2 s) sees it."""


def test_a_leader_losing_its_lease_in_the_middle_of_a_flush(
    fresh_rig: Rig, clean_history: History
) -> None:
    """Two replicas with leader election. Right after train fails, the leader's write of it is
    held by a 4 s stall, and meanwhile its Lease is taken for 3 s. The leader stops leading
    with the write in flight; whichever replica leads next reads the history and records what
    it still lacks: train's failure is recorded once.
    """

    def steal_mid_flush(r: Rig) -> None:
        r.proxy.stall_next(1, 4.0, method="POST")
        wait_for_stalled_write(r, r.processes[0])  # whichever replica leads, it is flushing
        take_the_lease(r, "intruder", LEASE_GAP_S)

    faults = [(10.2, "the Lease is taken during a write", steal_mid_flush)]
    # A transition seen only once someone leads again is stamped then: the gap, plus the
    # candidates' retry period (2 s, with jitter) and a cycle; the run lasts that much longer.
    handover_s = LEASE_GAP_S + 2 * 2.2 + CYCLE_S
    history = run_scenario(
        fresh_rig,
        faults,
        replicas=2,
        end_s=END_S + handover_s,
        EnableLeaderElection=True,
    )
    assert_same_history(clean_history, history, TOLERANCE_S + handover_s)
    logs = "".join(p.log() for p in fresh_rig.processes)
    assert "stops leading: " in logs


def test_megamon_killed_in_the_middle_of_a_write_then_restarted(
    fresh_rig: Rig, clean_history: History
) -> None:
    """megamon is killed with SIGKILL while a write (a segment) is held by a stall, then
    restarted. The restarted megamon takes over the lease of its dead predecessor at once,
    reads snapshot + log and observes the current state: nothing is lost, but a transition
    held only in memory when megamon died is stamped when it is seen again."""
    restarted: dict[str, float] = {}

    def kill_mid_write(r: Rig) -> None:
        r.proxy.stall_next(1, 30.0, method="POST")
        r.processes[0].wait_for(
            lambda: any(rec.method == "POST" for rec in r.proxy.records), "a write", 10
        )
        r.proxy.clear_rules()  # the stalled write dies with the process
        restarted["gap"] = r.restart()

    history = run_scenario(fresh_rig, [(5.2, "SIGKILL during a write", kill_mid_write)])
    assert_same_history(clean_history, history, TOLERANCE_S + restarted["gap"] + CYCLE_S)
    events = orjson.loads(
        fresh_rig.storage.bucket(fresh_rig.bucket)
        .blob(f"{PATH}/node-pools.json")
        .download_as_bytes()
    )
    assert set(events) == {"a", "b"}
