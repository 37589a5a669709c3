"""The Kubernetes API becomes unreachable while megamon has a write to make to it.

With ``SliceEnabled`` megamon writes the slice→owner map to a ConfigMap whenever it changes.
Here every write of it is refused (HTTP 500) so that a save stays pending, then the API server
goes away altogether: the next attempts fail in the transport (connection refused), not with
an HTTP status. GKE keeps answering, and a node pool that turns ERROR meanwhile must be
recorded at once, with its timestamp — one unreachable API must not cost the other's history.
"""

from __future__ import annotations

import time

from internal.gcsemu.client import make_storage_client
from megamon.domain.events import FLAG_FAILED, FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.recording.loading import load_kind
from megamon.stores.gcs import GcsEventStore
from test.integration.e2e.harness import value
from test.integration.faults.harness import CYCLE_S, PATH, Rig

OWNER_MAPS = "/api/v1/namespaces/megamon-system/configmaps"
TOLERANCE_NS = int((2 * CYCLE_S + 1.0) * 1e9)


def node_pools(rig: Rig) -> dict[str, EventRecord]:
    """The node pool history in the bucket now, as megamon reads it (snapshot and log)."""
    store = GcsEventStore(make_storage_client(rig.emulator_endpoint), rig.bucket, PATH)
    return dict(load_kind(store, Kind.NODEPOOL).history.records)


def test_kubernetes_api_unreachable_with_slices_keeps_recording_node_pools(
    fresh_rig: Rig,
) -> None:
    rig = fresh_rig
    for verb in ("create", "update"):
        rig.kube.fail_next(None, status=500, path_prefix=OWNER_MAPS, verb=verb)
    rig.world.pool("a", "RUNNING", topology="2x2x2", machine_type="tpu7x-standard-4t")
    for i in range(2):
        rig.world.node(f"a-{i}", "a", topology="2x2x2", extra=None)
    rig.world.jobset("train", replicas=1, topology="2x2x2")
    rig.world.slice("slice-a", owner="train")
    megamon = rig.megamon(SliceEnabled=True)
    megamon.settle(lambda s: value(s, "megamon_nodepool_up", nodepool_name="a") == 1.0, "pool a up")
    megamon.wait_for(lambda: "cannot save the slice owner map" in megamon.log(), "a failed save")

    rig.kube.stop()
    try:
        changed_at = time.time_ns()
        rig.world.pool("b", "ERROR", topology="2x4", machine_type="ct5lp-hightpu-8t")
        megamon.settle(
            lambda s: value(s, "megamon_nodepool_up", nodepool_name="b") == 0.0,
            "pool b reported while the Kubernetes API is unreachable",
        )
        megamon.wait_for(lambda: "b" in node_pools(rig), "pool b recorded")
        history = node_pools(rig)
    finally:
        rig.kube.start()

    b = history["b"]
    assert b.flags[0] & FLAG_FAILED and not b.flags[0] & FLAG_UP  # down, failed: ERROR
    assert 0 <= b.timestamps[0] - changed_at <= TOLERANCE_NS
    assert [bool(f & FLAG_UP) for f in history["a"].flags] == [False, True]
    megamon.wait_for(lambda: "unreachable" in megamon.log(), "the logged cause")
