"""The aggregator: runs the flow observers → event log → summarizer → report → exporters.

Three loops, each catching and logging its own failures so that one bad cycle never stops
the service:
- polling: GKE node pools every ``PollingIntervalSeconds``;
- workloads: reacts to changes in the watch caches, coalescing bursts (at most once a
  second), so a JobSet's transition is recorded when it happens, not at the next tick;
- aggregation: every ``AggregationIntervalSeconds``, observes every kind at one ``now``,
  records events, and once every required kind has been observed has the report assembly
  (``summary.assembly``, which holds every figure kept between cycles) build the report,
  publishes it (an atomic reference swap) and runs the exporters. A failing cycle keeps the
  last good report;
- persist: writes the history held in memory to the store, so that a slow or failing store
  delays the writing of a transition, never its timestamp.
Only a leader (or the only replica) does any of this; ``healthy`` says whether the loops
still make progress.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.domain.rejections import Rejection
from megamon.domain.reports import Report
from megamon.errors import MegamonError
from megamon.observing.cluster import (
    WORKLOAD_KINDS,
    WorkloadObservers,
    observe_pools,
    observe_scheduling,
    observe_workloads,
)
from megamon.observing.common import Memos, Problem, Settings
from megamon.observing.owners import MemoryOwnerMapStore, SliceOwners
from megamon.recording.eventlog import EventLog
from megamon.recording.latest import LatestObservations
from megamon.sources.gke.lister import NodePoolLister
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.cluster import ClusterView
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.summary.assembly import ReportAssembly
from megamon.telemetry import Instruments

log = logging.getLogger(__name__)

SOURCE_GKE = "gke"
SOURCE_KUBERNETES = "kubernetes"
LOOP_POLL = "poll"
LOOP_WORKLOADS = "workloads"
LOOP_AGGREGATE = "aggregate"
LOOP_PERSIST = "persist"
COALESCE_SECONDS = 1.0
STALL_FACTOR = 5
"""A loop that has not finished an iteration in this many intervals is stuck."""
MIN_STALL_SECONDS = 60.0
UNWRITABLE_SECONDS = 60.0
"""A history that could not be written for this long fails readiness."""


@dataclass(frozen=True)
class Intervals:
    aggregation: float = 10.0
    polling: float = 10.0
    coalesce: float = COALESCE_SECONDS
    persist: float = 1.0


class Aggregator:
    """Owns the cycle; everything it talks to is passed in. It holds no figures: what a
    report is built from lives in the event log and the report assembly."""

    def __init__(
        self,
        *,
        event_log: EventLog,
        assembly: ReportAssembly,
        cluster: ClusterView,
        latest: LatestObservations | None = None,
        pools: NodePoolLister,
        kinds: Iterable[Kind],
        settings: Settings,
        export: Callable[[Report], object],
        intervals: Intervals = Intervals(),
        slice_owners: SliceOwners | None = None,
        observers: WorkloadObservers | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        instruments: Instruments | None = None,
        memos: Memos | None = None,
        clock: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = event_log
        self._assembly = assembly
        self._latest = latest or LatestObservations()
        self._cluster = cluster
        self._pool_lister = pools
        self._kinds = frozenset(kinds)
        self._settings = settings
        self._export = export
        self._intervals = intervals
        self._slice_owners = slice_owners or SliceOwners(MemoryOwnerMapStore())
        self._memos = memos or Memos()
        self._observers = observers or WorkloadObservers(nodes=self._memos.nodes)
        self._workload_kinds = self._kinds & (WORKLOAD_KINDS | self._observers.kinds)
        self._is_leader = is_leader
        self._instruments = instruments or Instruments.unregistered()
        self._clock = clock
        self._monotonic = monotonic
        self._persist_failing_since: float | None = None
        self._led = False
        """Whether this process led at its last loop iteration (to hand over when it stops)."""
        self._required = frozenset(kind for kind in self._kinds if kind.builtin)
        """What the first report waits for: a described kind's resource may not be served."""
        self._pools: tuple[list[NodePoolView], int] | None = None
        """GKE's latest node pool listing and when it was requested (one reference, swapped
        whole by the poll loop)."""
        self._observed_at: dict[str, int] = {}
        self._report: Report | None = None
        self._record_lock = threading.Lock()
        self._problems_seen: set[Problem] = set()
        self._progress: dict[str, float] = {}
        self.changed = threading.Event()
        """Set by the watch caches on every change; wakes the workload loop."""
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    # What the rest of the service reads --------------------------------------------------

    def latest_report(self) -> Report | None:
        return self._report

    def ready(self) -> bool:
        """A report exists and the history can be written: a store that refuses every write
        for ``UNWRITABLE_SECONDS`` fails readiness (its reason is logged every attempt), for
        what it holds is lost at the next restart. A kind whose history is refused (its
        snapshot does not match its mark) fails it too: that kind is not being recorded."""
        return self._report is not None and not self.store_unwritable() and not self._log.refused

    def store_unwritable(self) -> bool:
        since = self._persist_failing_since
        return since is not None and self._monotonic() - since >= UNWRITABLE_SECONDS

    def standing_by(self) -> bool:
        """Another process holds the history's writer lease: this one records nothing."""
        return self._log.standing_by

    def store_description(self) -> str:
        return self._log.store.describe()

    def healthy(self) -> bool:
        """Every loop thread and watch thread runs, and every loop has finished an iteration
        recently: a thread that died, or one stuck, freezes data behind a healthy probe."""
        if not self._stop.is_set() and not all(t.is_alive() for t in self._threads):
            return False
        if not self._cluster.alive():
            return False
        now = self._monotonic()
        limits = {
            LOOP_POLL: self._intervals.polling,
            LOOP_WORKLOADS: self._intervals.aggregation,
            LOOP_AGGREGATE: self._intervals.aggregation,
            LOOP_PERSIST: self._intervals.persist,
        }
        for loop, last in self._progress.items():
            if now - last > max(STALL_FACTOR * limits[loop], MIN_STALL_SECONDS):
                return False
        return True

    # One step of each loop ---------------------------------------------------------------

    def poll_once(self) -> bool:
        """List node pools; on failure keep the previous list (its age shows in freshness).
        The list is kept with when it was requested: GKE's answer is at least that recent,
        which decides whether it answers for nodes that vanished (observing.deletions)."""
        requested = self._clock()
        try:
            pools = self._pool_lister.list_node_pools()
        except MegamonError as err:
            log.error("cannot list node pools: %s", err)
            return False
        self._pools = (pools, requested)
        self._observed_at[SOURCE_GKE] = self._clock()
        return True

    def _report_problems(self, problems: Iterable[Problem]) -> None:
        """Log and count each distinct problem once, not every cycle."""
        for problem in problems:
            if problem not in self._problems_seen:
                self._problems_seen.add(problem)
                self._instruments.count_skipped(problem.kind.value, problem.reason)
                log.warning("skipped (%s) %s", problem.reason, problem)

    def rejected(self, rejection: Rejection) -> None:
        """A source skipped one object (a watch cache, the node pool lister): count it. The
        source has logged it, once per object."""
        self._instruments.count_skipped(rejection.kind, rejection.reason)

    def _workload_batch(
        self, snapshot: ClusterSnapshot, now: int
    ) -> dict[Kind, dict[str, Observation]]:
        slices = Kind.SLICE in self._kinds
        owners = self._slice_owners.current() if slices else {}
        result = observe_workloads(
            snapshot,
            self._workload_kinds,
            owners,
            self._settings,
            now,
            observers=self._observers,
        )
        self._report_problems(result.problems)
        if slices:
            self._slice_owners.update(result.owner_map)
        contact = self._cluster.last_contact_ns()
        if contact is not None:
            self._observed_at[SOURCE_KUBERNETES] = contact
        return result.batch

    def _record(self, batch: dict[Kind, dict[str, Observation]], now: int) -> None:
        """Apply the batch to the history in memory; the persist loop writes it out."""
        with self._record_lock:
            self._latest.publish(batch)
            try:
                self._log.append(batch, now, flush=False)
            except MegamonError as err:
                log.error("cannot record events: %s", err)

    def persist_once(self) -> bool:
        """Write out history held in memory only, heartbeats and snapshots; on failure it
        stays pending."""
        if not self._log.due:
            return True
        try:
            self._log.flush()
        except MegamonError as err:
            self._persist_failed(str(err))
            return False
        failure = self._log.failure  # only the lease's renewal was due, and it was refused
        if failure is not None:
            self._persist_failed(failure)
            return False
        self._persist_failing_since = None
        return True

    def _persist_failed(self, reason: str) -> None:
        """Log a failed write; after ``UNWRITABLE_SECONDS`` of them readiness fails."""
        if self._persist_failing_since is None:
            self._persist_failing_since = self._monotonic()
        log.error("cannot write history (kept in memory, retried): %s", reason)
        if self.store_unwritable():
            log.error(
                "history in %s unwritable for %.0f s: not ready until a write lands",
                self._log.store.describe(),
                self._monotonic() - self._persist_failing_since,
            )

    def observe_workloads_once(self) -> None:
        """React to a change of JobSets, LWS, Slices or nodes: record workload kinds now."""
        if not self._cluster.synced():
            return
        now = self._clock()
        self._record(self._workload_batch(self._cluster.snapshot(), now), now)

    def aggregate_once(self) -> Report | None:
        """One cycle at one ``now``; returns the report it published, if any."""
        start = time.perf_counter()
        now = self._clock()
        batch: dict[Kind, dict[str, Observation]] = {}
        snapshot = self._cluster.snapshot() if self._cluster.synced() else None
        listing = self._pools
        if snapshot is not None:
            if listing is not None:
                pools, requested = listing
                observed = observe_pools(
                    pools, snapshot, self._settings, now, self._memos, polled_ns=requested
                )
                self._report_problems(observed.problems)
                batch[Kind.NODEPOOL] = observed.observations
            batch.update(self._workload_batch(snapshot, now))
        if batch:
            self._record(batch, now)
        if snapshot is None or not self._log.ready or not self._latest.observed(self._required):
            return None
        with self._record_lock:  # observations and records of the same batch
            observations, records = self._latest.snapshot(), self._log.records()
            coverage, epoch = self._log.coverage(), self._log.epoch
            snapshots = self._log.snapshot_digests()
        report = self._assembly.build(
            observations,
            records,
            coverage=coverage,
            epoch=epoch,
            snapshots=snapshots,
            scheduling=observe_scheduling(snapshot, listing[0] if listing else [], self._memos),
            observed_at=self._observed_at,
            now=now,
        )
        self._report = report
        self._export(report)
        self._instruments.aggregation_duration.observe(time.perf_counter() - start)
        return report

    # Loops ---------------------------------------------------------------------------------

    def iterate(self, name: str, step: Callable[[], object]) -> None:
        """One iteration of loop ``name``. A step that raises is logged and does not count
        as progress: a loop failing every cycle freezes its data as surely as a dead one,
        and must fail ``healthy`` after the same stall time. A standby makes progress."""
        self._progress.setdefault(name, self._monotonic())
        if self._is_leader():
            self._led = True
            try:
                step()
            except Exception:  # the loop's boundary: log, keep the last good report
                log.exception("%s cycle failed", name)
                return
        elif name == LOOP_PERSIST and self._led:
            self._led = False
            self._log.hand_over()  # the next leader takes the history's writer lease now
        self._progress[name] = self._monotonic()

    def _loop(self, name: str, step: Callable[[], object], wait: Callable[[], object]) -> None:
        while not self._stop.is_set():
            self.iterate(name, step)
            wait()

    def _wait_for_change(self) -> None:
        self._stop.wait(self._intervals.coalesce)
        self.changed.wait(self._intervals.aggregation)
        self.changed.clear()

    def start(self) -> Aggregator:
        self._stop.clear()
        loops: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            (LOOP_POLL, self.poll_once, lambda: self._stop.wait(self._intervals.polling)),
            (LOOP_WORKLOADS, self.observe_workloads_once, self._wait_for_change),
            (
                LOOP_AGGREGATE,
                self.aggregate_once,
                lambda: self._stop.wait(self._intervals.aggregation),
            ),
            (LOOP_PERSIST, self.persist_once, lambda: self._stop.wait(self._intervals.persist)),
        ]
        for name, step, wait in loops:
            thread = threading.Thread(
                target=self._loop, args=(name, step, wait), name=name, daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loops, then write out what is still held in memory (best effort)."""
        self._stop.set()
        self.changed.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()
        if self._is_leader():
            try:
                self._log.close()
            except MegamonError as err:
                log.error("cannot write history at shutdown: %s", err)
