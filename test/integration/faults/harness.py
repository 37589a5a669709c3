"""Run one scripted fleet scenario with ``megamon run`` (a real process) and read back the
history it wrote, so that a run with faults can be compared with a run without.

The scenario changes the cluster at fixed offsets from its start; faults are injected at
fixed offsets too. A history is compared as, per resource, the sequence of its events
(up, expected down, failed) with each timestamp taken relative to the scenario's start.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as kube_config

from internal.fakegke import FakeGke
from internal.fakekube.fakekube import FakeKube
from internal.faultproxy import Action, FaultProxy
from internal.gcsemu.client import make_storage_client
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP
from megamon.domain.kinds import Kind
from megamon.loops.leader import micro_time
from megamon.recording.loading import load_kind
from megamon.sources.kube.resources import JOBSETS
from megamon.stores.gcs import GcsEventStore
from test.integration.e2e.harness import MegamonProcess
from test.integration.scenarios.world import CLUSTER, LOCATION, PROJECT, World

PATH = "megamon/clusters/faults"
S = 1_000_000_000
CYCLE_S = 1.0
"""The aggregation interval of every run."""

Event = tuple[int, bool, bool, bool]
"""(ns since the scenario started, up, expected down, failed)."""
History = dict[str, dict[str, list[Event]]]


@dataclass
class Rig:
    """Everything a run talks to, and what the scenario and the faults act on."""

    world: World
    kube: FakeKube
    gke: FakeGke
    proxy: FaultProxy
    bucket: str
    storage: Any
    workdir: Path
    kubeconfig: Path
    emulator_endpoint: str
    processes: list[MegamonProcess] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    running: threading.Event = field(default_factory=threading.Event)
    """Cleared while a fault restarts megamon: the scenario's next steps wait for it."""
    held_s: float = 0.0
    """Seconds the scenario was held by restarts: its later steps and its end move by as
    much, so a slow restart on a busy machine leaves megamon the same time to see them."""

    def __post_init__(self) -> None:
        self.running.set()

    def ready(self, process: MegamonProcess) -> None:
        """Wait until ``process`` serves: caches synced, node pools listed, a first report
        (or a standby's readiness)."""
        process.wait_for(lambda: process.get(process.probe_port, "/readyz")[0] == 200, "ready", 60)

    def restart(self, **overrides: Any) -> float:
        """Kill the running process, start a new one and hold the scenario until it is ready:
        a megamon that is down observes nothing, and how long a restart takes on a busy
        machine must not decide which of the scenario's states it lives to see. Returns the
        seconds the scenario was held (the timestamps after it are that much later)."""
        started = time.monotonic()
        self.running.clear()
        try:
            self.processes[-1].stop(kill=True)
            self.ready(self.megamon(**overrides))
        finally:
            held = time.monotonic() - started
            self.held_s += held
            self.running.set()
        return held

    """JobSet UID → name: UIDs differ between runs, names do not."""

    def megamon(self, **overrides: Any) -> MegamonProcess:
        config = {
            "AggregationIntervalSeconds": int(CYCLE_S),
            "EventsBucketName": self.bucket,
            "EventsBucketPath": PATH,
            "GKE": {
                "ProjectID": PROJECT,
                "ClusterLocation": LOCATION,
                "ClusterName": CLUSTER,
                "Endpoint": self.gke.endpoint,
                "ComputeEndpoint": self.gke.endpoint,
            },
            **overrides,
        }
        env = {
            "KUBECONFIG": str(self.kubeconfig),
            "STORAGE_EMULATOR_HOST": self.proxy.endpoint,
            "GOOGLE_CLOUD_PROJECT": "megamon-test",
        }
        process = MegamonProcess(self.workdir, config, env).start()
        self.processes.append(process)
        return process

    def store(self) -> GcsEventStore:
        """The history in the bucket, read past the fault proxy."""
        return GcsEventStore(make_storage_client(self.emulator_endpoint), self.bucket, PATH)

    def history(self) -> History:
        """What a restart would read: the snapshot and the log after it."""
        store = self.store()
        return {
            kind.value: {
                self.names.get(key, key): [
                    (ts, bool(f & FLAG_UP), bool(f & FLAG_EXPECTED_DOWN), bool(f & FLAG_FAILED))
                    for ts, f in zip(record.timestamps, record.flags, strict=True)
                ]
                for key, record in load_kind(store, kind).history.records.items()
            }
            for kind in (Kind.NODEPOOL, Kind.JOBSET, Kind.JOBSET_NODES)
        }


Step = tuple[float, str, Callable[[Rig], object]]


def _pool_comes_up(rig: Rig) -> None:
    for i in range(2):
        rig.world.node(f"a-{i}", "a", topology="2x2x2", extra=None)
    rig.world.pool_status("a", "RUNNING")
    rig.world.jobset_status("train", ready=1)


SCENARIO: list[Step] = [
    (
        0.0,
        "pool a provisioning; JobSet train created",
        lambda r: (
            r.world.pool("a", "PROVISIONING", topology="2x2x2", machine_type="tpu7x-standard-4t"),
            r.names.__setitem__(r.world.jobset("train", replicas=1, topology="2x2x2"), "train"),
        ),
    ),
    (2.0, "pool a: its nodes register, RUNNING; train ready", _pool_comes_up),
    (5.0, "a node of pool a turns NotReady", lambda r: r.world.ready("a-0", "False")),
    (8.0, "the node is Ready again", lambda r: r.world.ready("a-0", "True")),
    (10.0, "train fails", lambda r: r.world.jobset_status("train", ready=0, condition="Failed")),
    (
        12.0,
        "pool b created, and GKE says ERROR",
        lambda r: r.world.pool("b", "ERROR", topology="2x4", machine_type="ct5lp-hightpu-8t"),
    ),
]
END_S = 15.0


def play(rig: Rig, steps: list[Step], start: float) -> None:
    """Run ``steps`` at their offsets from ``start`` (a ``time.monotonic()`` reading), each
    moved by the time restarts held the scenario so far."""
    for at, _name, action in sorted(steps, key=lambda step: step[0]):
        while True:
            rig.running.wait()  # a restart in progress holds the world still
            delay = start + at + rig.held_s - time.monotonic()
            if delay <= 0:
                break
            time.sleep(delay)  # then look again: a restart may have begun meanwhile
        action(rig)


def run_scenario(
    rig: Rig,
    faults: list[Step],
    *,
    replicas: int = 1,
    end_s: float = END_S,
    **config: Any,
) -> History:
    """The scenario with ``faults`` interleaved, observed until ``end_s``; returns the
    history relative to its start."""
    for _ in range(replicas):
        rig.megamon(**config)
    # The scenario's clock starts once every replica serves (caches synced, node pools
    # listed, a first report or a standby's readiness): a megamon slow to start on a busy
    # machine must not meet a world that already moved, or its first observation would
    # fold the scenario's first transitions into one.
    for process in rig.processes:
        rig.ready(process)
    t0_ns, start = time.time_ns(), time.monotonic()
    failed: list[BaseException] = []

    def play_faults() -> None:
        try:
            play(rig, faults, start)
        except BaseException as err:  # re-raised below: a fault not applied fails the case
            failed.append(err)

    fault_thread = threading.Thread(target=play_faults, daemon=True)
    fault_thread.start()
    play(rig, SCENARIO, start)
    fault_thread.join()
    if failed:
        raise AssertionError("a fault could not be applied") from failed[0]
    delay = start + end_s + rig.held_s - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    rig.proxy.clear_rules()
    for process in rig.processes:  # restarted ones too: each stops cleanly (a snapshot)
        if process._process is not None and process._process.poll() is None:
            process.stop()
    return {
        kind: {key: [(ts - t0_ns, *flags) for ts, *flags in events] for key, events in keys.items()}
        for kind, keys in rig.history().items()
    }


@contextmanager
def rig(workdir: Path, bucket: str, storage: Any, emulator_endpoint: str) -> Iterator[Rig]:
    with (
        FakeKube(bookmark_interval=0.5) as kube,
        FakeGke() as gke,
        FaultProxy(emulator_endpoint) as proxy,
    ):
        kubeconfig = kube.write_kubeconfig(workdir / "kubeconfig")
        api = kube_config.new_client_from_config(config_file=str(kubeconfig))
        world = World(api=api, gke=gke, namespace="team")
        running = Rig(
            world, kube, gke, proxy, bucket, storage, workdir, kubeconfig, emulator_endpoint
        )
        try:
            yield running
        finally:
            for process in running.processes:
                if process._process is not None and process._process.poll() is None:
                    process.stop(kill=True)
            api.close()


@dataclass
class Comparison:
    """How a history with faults differs from the clean one."""

    transitions: int = 0
    lost: int = 0
    duplicated: int = 0
    max_offset_s: float = 0.0


LAST_COMPARISON: list[Comparison] = []
"""The comparison of the running test, read by the suite's report (conftest.py)."""


def compare(clean: History, faulty: History) -> Comparison:
    result = Comparison()
    for kind, keys in clean.items():
        for key, events in keys.items():
            got = faulty.get(kind, {}).get(key, [])
            result.transitions += len(events)
            result.lost += max(0, len(events) - len(got))
            result.duplicated += max(0, len(got) - len(events))
            for (t_clean, *_), (t_got, *_) in zip(events, got, strict=False):
                result.max_offset_s = max(result.max_offset_s, abs(t_got - t_clean) / S)
    return result


def assert_same_history(clean: History, faulty: History, tolerance_s: float) -> None:
    """The same transitions, none lost or duplicated, each within ``tolerance_s`` of clean."""
    LAST_COMPARISON[:] = [compare(clean, faulty)]
    assert faulty.keys() == clean.keys()
    for kind, keys in clean.items():
        assert faulty[kind].keys() == keys.keys(), (
            f"{kind}: resources differ: clean {sorted(keys)}, with faults {sorted(faulty[kind])}"
            f"\n clean {keys}\n fault {faulty[kind]}"
        )
        for key, events in keys.items():
            got = faulty[kind][key]
            assert [e[1:] for e in got] == [e[1:] for e in events], (
                f"{kind} {key}: transitions differ:\n clean {events}\n fault {got}"
            )
            for (t_clean, *_), (t_got, *_) in zip(events, got, strict=True):
                assert abs(t_got - t_clean) <= tolerance_s * S, (
                    f"{kind} {key}: an event {(t_got - t_clean) / S:+.2f}s off the clean run"
                )


# Faults of bad input and of leadership, for test_faults.py ------------------------------

LEASE_NAME = "megamon-leader"
LEASE_NAMESPACE = "megamon-system"
"""Where ``megamon run`` keeps its Lease without ``POD_NAMESPACE``: ``ReportConfigMapRef``'s."""


def malformed_jobset(rig: Rig, name: str) -> None:
    """A JobSet whose lists are numbers: what anyone with write access can store in a CRD
    without a schema. megamon must skip it, never observe it, and never stop watching."""
    body = {
        "apiVersion": f"{JOBSETS.group}/{JOBSETS.version}",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": rig.world.namespace},
        "spec": {"replicatedJobs": 5},
        "status": {"replicatedJobsStatus": 5},
    }
    k8s.CustomObjectsApi(rig.world.api).create_namespaced_custom_object(
        JOBSETS.group, JOBSETS.version, rig.world.namespace, JOBSETS.plural, body
    )


def malformed_status(rig: Rig, name: str) -> None:
    """A live JobSet's status turned unreadable (its list a number), as a buggy controller or
    a hand-made patch may leave it."""
    rig.world.patch_jobset_status(name, {"replicatedJobsStatus": 5})


def future_pool_status(rig: Rig, pool: str, number: int) -> None:
    """GKE reports a node pool status this client does not know (one added later)."""
    found = rig.gke.get_node_pool(PROJECT, LOCATION, CLUSTER, pool)
    found["status"] = number
    rig.gke.put_node_pool(PROJECT, LOCATION, CLUSTER, found)


def wait_for_stalled_write(rig: Rig, process: MegamonProcess) -> None:
    """Until a write (a POST to the bucket) is held by a stall: a flush is in flight."""
    process.wait_for(
        lambda: any(r.method == "POST" and r.action is Action.STALL for r in rig.proxy.records),
        "a stalled write",
        10,
    )


def take_the_lease(rig: Rig, holder: str, seconds: int) -> None:
    """Write the Lease as held by ``holder`` for ``seconds`` from now: the leader's next
    renewal finds it held elsewhere and stops leading; after ``seconds`` anyone may take it."""
    leases = k8s.CoordinationV1Api(rig.world.api)
    lease = leases.read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE)
    assert lease.spec is not None
    lease.spec.holder_identity = holder
    lease.spec.renew_time = micro_time(time.time())
    lease.spec.acquire_time = lease.spec.renew_time
    lease.spec.lease_duration_seconds = seconds
    leases.replace_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE, lease)
