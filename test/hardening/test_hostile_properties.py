"""Generated hostile input through the boundaries (hypothesis): Kubernetes objects through the
watch caches' projections and every observer, GKE node pools through the lister's reading
and the node pool observer, event files through the codec and the summarizer. Nothing raises
past the boundary, and every rejection is counted: an object is either kept or reported, once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from google.cloud import container_v1
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from megamon.codec.history import decode_event_file, encode_event_file
from megamon.codec.report import encode_summaries
from megamon.domain import labels, timestamps
from megamon.domain.kinds import Kind
from megamon.domain.rejections import REASONS, Rejection
from megamon.errors import EventFileError
from megamon.observing.cluster import (
    WorkloadObservers,
    observe_pools,
    observe_scheduling,
    observe_workloads,
)
from megamon.observing.common import Memos, Settings
from megamon.observing.nodepools import _is_tpu_pool
from megamon.sources.gke.lister import GkeNodePoolLister, make_client
from megamon.sources.gke.views import NodePoolView
from megamon.sources.kube.cache import WatchCache, object_key
from megamon.sources.kube.projections import jobset_view, lws_view, node_view, pod_view, slice_view
from megamon.sources.kube.snapshot import ClusterSnapshot
from megamon.summary.summarizing import summarize
from megamon.telemetry import Instruments

NOW = timestamps.parse("2026-05-04T18:00:00Z")
NOWHERE = "http://127.0.0.1:9"
"""The GKE client is built but never called: only its answers' reading is under test."""
HYPOTHESIS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JSON of every shape, with the values that break naive code: huge and negative numbers,
# NaN-free floats, empty and odd strings, timestamps beyond the horizon.
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        ["True", "False", "Unknown", "2x2x2", "4x4", "0x4", "99999x99999", "tpu7x-standard-4t"]
    ),
    st.sampled_from(["9999-12-31T23:59:59Z", "1969-01-01T00:00:00Z", "2026-05-04T17:00:00Z"]),
)
json_values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
LABEL_KEYS = [
    labels.NODEPOOL,
    labels.TPU_TOPOLOGY,
    labels.TPU_ACCELERATOR,
    labels.ACCELERATOR_COUNT,
    labels.PROVISIONER_JOBSET_NAME,
    labels.PROVISIONER_JOBSET_NAMESPACE,
    labels.JOBSET_NAME,
    labels.SLICE_OWNER_KIND,
    labels.SLICE_OWNER_NAME,
    labels.SLICE_OWNER_NAMESPACE,
]


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually the well-shaped value, sometimes anything at all."""
    return st.one_of(strategy, strategy, json_values)


label_maps = st.dictionaries(st.sampled_from(LABEL_KEYS), maybe(leaves), max_size=6)
conditions = st.lists(
    maybe(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["Ready", "Completed", "Failed", "SliceCreationFailed"]),
                "status": maybe(st.sampled_from(["True", "False", "Unknown"])),
                "lastTransitionTime": maybe(leaves),
            }
        )
    ),
    max_size=3,
)
replicated_job = st.fixed_dictionaries(
    {
        "name": maybe(st.text(max_size=5)),
        "replicas": maybe(st.integers(-2, 2**40)),
        "template": maybe(
            st.fixed_dictionaries({"spec": maybe(st.fixed_dictionaries({"parallelism": leaves}))})
        ),
    }
)


@st.composite
def k8s_objects(draw: st.DrawFn) -> Any:
    """A Kubernetes object of any of the watched kinds, plausibly shaped and then broken."""
    meta = draw(
        maybe(
            st.fixed_dictionaries(
                {
                    "name": maybe(st.text(min_size=1, max_size=6)),
                    "namespace": maybe(st.sampled_from(["team", ""])),
                    "uid": maybe(st.text(max_size=4)),
                    "labels": maybe(label_maps),
                }
            )
        )
    )
    spec = draw(
        maybe(
            st.fixed_dictionaries(
                {
                    "replicatedJobs": maybe(st.lists(maybe(replicated_job), max_size=2)),
                    "replicas": leaves,
                    "nodeName": leaves,
                    "type": leaves,
                    "topology": leaves,
                }
            )
        )
    )
    status = draw(
        maybe(
            st.fixed_dictionaries(
                {
                    "conditions": maybe(conditions),
                    "replicatedJobsStatus": maybe(
                        st.lists(maybe(st.fixed_dictionaries({"ready": leaves})), max_size=2)
                    ),
                    "readyReplicas": leaves,
                }
            )
        )
    )
    return draw(st.one_of(st.just({"metadata": meta, "spec": spec, "status": status}), leaves))


PROJECTIONS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "node": node_view,
    "pod": pod_view,
    "jobset": jobset_view,
    "leaderworkerset": lws_view,
    "slice": slice_view,
}


def cache_of(kind: str, objects: list[Any]) -> tuple[WatchCache[Any], list[Rejection]]:
    """A watch cache fed ``objects`` as a list, then the same objects again as watch events."""
    rejected: list[Rejection] = []
    cache: WatchCache[Any] = WatchCache(
        kind, lambda **_: None, PROJECTIONS[kind], kind=kind, on_problem=rejected.append
    )
    cache.replace(objects)
    for event, obj in zip(("ADDED", "MODIFIED", "DELETED") * len(objects), objects, strict=False):
        if event != "DELETED":
            cache.apply(event, obj)
    return cache, rejected


@HYPOTHESIS
@given(st.lists(k8s_objects(), max_size=6), st.sampled_from(sorted(PROJECTIONS)))
def test_hostile_kubernetes_objects_are_kept_or_reported_never_raised(
    objects: list[Any], kind: str
) -> None:
    # One object per key, as the API server has it (the cache keys by namespace/name).
    objects = list({object_key(obj): obj for obj in objects}.values())
    cache, rejected = cache_of(kind, objects)
    kept = set(cache.snapshot())
    reported = {r.subject for r in rejected}
    for obj in objects:
        key = object_key(obj) or "?"
        assert key in kept or key in reported, f"{obj!r} neither kept nor reported"
    assert all(r.reason in REASONS and r.kind == kind for r in rejected)
    assert len(rejected) == len(reported)  # each object reported once, however often seen


@HYPOTHESIS
@given(
    st.lists(k8s_objects(), max_size=4),
    st.lists(k8s_objects(), max_size=4),
    st.lists(k8s_objects(), max_size=4),
    st.lists(k8s_objects(), max_size=3),
    st.lists(k8s_objects(), max_size=3),
)
def test_what_the_caches_keep_never_breaks_an_observer(
    nodes: list[Any], pods: list[Any], jobsets: list[Any], lwss: list[Any], slices: list[Any]
) -> None:
    snapshot = ClusterSnapshot(
        nodes=cache_of("node", nodes)[0].snapshot(),
        leader_pods=cache_of("pod", pods)[0].snapshot(),
        jobsets=cache_of("jobset", jobsets)[0].snapshot(),
        leaderworkersets=cache_of("leaderworkerset", lwss)[0].snapshot(),
        slices=cache_of("slice", slices)[0].snapshot(),
    )
    kinds = set(Kind) - {Kind.NODEPOOL}
    result = observe_workloads(snapshot, kinds, {}, Settings(), NOW, observers=WorkloadObservers())
    observed = sum(len(batch) for batch in result.batch.values())
    assert observed + len(result.problems) >= len({js.uid for js in snapshot.jobsets.values()})
    registry = CollectorRegistry()
    instruments = Instruments("megamon", registry)
    for problem in result.problems:
        instruments.count_skipped(problem.kind.value, problem.reason)
    total = sum(
        s.value
        for metric in registry.collect()
        for s in metric.samples
        if s.name == "megamon_observation_errors_total"
    )
    assert total == len(result.problems)


pool_views = st.builds(
    NodePoolView,
    name=st.text(max_size=6),
    status=st.one_of(st.sampled_from(["RUNNING", "ERROR", "STOPPING", "99"]), st.text(max_size=5)),
    machine_type=st.one_of(
        st.sampled_from(["tpu7x-standard-4t", "ct5lp-hightpu-8t", "e2-standard-8"]),
        st.text(max_size=12),
    ),
    tpu_topology=st.one_of(st.sampled_from(["2x2x2", "2x4", "0x4", "4x"]), st.text(max_size=8)),
    accelerator=st.text(max_size=6),
    spot=st.booleans(),
)


@HYPOTHESIS
@given(st.lists(pool_views, max_size=5), st.lists(k8s_objects(), max_size=5))
def test_hostile_node_pools_are_observed_or_reported_never_raised(
    pools: list[NodePoolView], nodes: list[Any]
) -> None:
    snapshot = ClusterSnapshot(nodes=cache_of("node", nodes)[0].snapshot())
    observed = observe_pools(pools, snapshot, Settings(), NOW, Memos(), polled_ns=NOW)
    observe_scheduling(snapshot, pools)
    members = {n.nodepool for n in snapshot.nodes.values() if n.topology}
    for pool in pools:  # a TPU pool is observed or reported; others are not megamon's
        tpu_nodes = [n for n in snapshot.nodes.values() if n.topology and n.nodepool == pool.name]
        if _is_tpu_pool(pool, tpu_nodes):
            assert pool.name in observed.observations or any(
                p.subject == pool.name for p in observed.problems
            ), pool
    for name in members - {p.name for p in pools}:  # nodes of pools GKE does not list
        assert any(p.subject == (name or "(no gke-nodepool label)") for p in observed.problems)


@HYPOTHESIS
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": st.text(max_size=6),
                "status": st.integers(min_value=0, max_value=2**31 - 1),
                "machine_type": st.text(max_size=12),
                "tpu_topology": st.text(max_size=8),
            }
        ),
        max_size=5,
    )
)
@pytest.mark.filterwarnings("ignore:Unrecognized Status enum value:UserWarning")  # the point
def test_gke_pools_with_any_status_number_are_all_read(raw: list[dict[str, Any]]) -> None:
    pools = [
        container_v1.NodePool(
            name=p["name"],
            status=p["status"],
            config=container_v1.NodeConfig(machine_type=p["machine_type"]),
            placement_policy=container_v1.NodePool.PlacementPolicy(tpu_topology=p["tpu_topology"]),
        )
        for p in raw
    ]
    lister = GkeNodePoolLister("projects/p/locations/l/clusters/c", make_client(NOWHERE))
    views = lister._views(pools)
    assert [v.name for v in views] == [p["name"] for p in raw]
    known = {s.value: s.name for s in container_v1.NodePool.Status}
    assert [v.status for v in views] == [known.get(p["status"], str(p["status"])) for p in raw]


events = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "up": maybe(st.booleans()),
                "ts": maybe(
                    st.one_of(
                        st.integers(-(2**62), 2**62).map(lambda ns: timestamps.format_ns(NOW + ns)),
                        leaves,
                    )
                ),
            },
            optional={"f": maybe(st.booleans()), "ed": maybe(st.booleans())},
        ),
        json_values,
    ),
    max_size=6,
)
event_files = st.one_of(
    st.dictionaries(
        st.text(max_size=6), maybe(st.fixed_dictionaries({"upEvents": maybe(events)})), max_size=4
    ),
    json_values,
)


@HYPOTHESIS
@given(st.one_of(event_files.map(lambda doc: json.dumps(doc).encode()), st.binary(max_size=40)))
def test_hostile_event_files_are_refused_cleanly_or_summarize_within_bounds(data: bytes) -> None:
    try:
        records = decode_event_file(data, "node-pools.json")
    except EventFileError as err:
        assert str(err).startswith("node-pools.json")
        return
    summaries = {}
    for key, record in records.items():
        assert all(timestamps.MIN_NS <= t < timestamps.MAX_NS for t in record.timestamps), key
        summaries[key] = summarize(record, NOW)
    encode_summaries(summaries)  # every duration fits a JSON integer
    assert decode_event_file(encode_event_file(records), "again") == records
