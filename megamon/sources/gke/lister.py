"""Listing a cluster's node pools: from the GKE API, or inferred from nodes in simulation.

GKE's answer is read one pool at a time, and one pool never costs the others: an enum value
newer than the installed client (proto-plus then hands out a bare number) is kept as its raw
value (``"99"``), and a pool that cannot be read at all is skipped, logged once and counted
in ``megamon_observation_errors_total`` — the list of every other pool stays current.

A pool GKE placed with a workload policy (Ironwood, TPU7x multi-host) has no
``placementPolicy.tpuTopology``; its topology is the policy's, read through
``megamon.sources.gke.policies`` (once per policy). When the policy cannot be read the pool
is listed without a topology and with the reason, so it is still observed (sized from its
nodes when it has some) and an observation that cannot be sized says why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any, Protocol

from google.api_core import exceptions as api_exceptions
from google.api_core import retry as api_retry
from google.auth.credentials import AnonymousCredentials
from google.cloud import container_v1

from megamon.domain.kinds import Kind
from megamon.domain.labels import GKE_ACCELERATOR_TYPE
from megamon.domain.rejections import REASON_UNEXPECTED
from megamon.errors import SourceError
from megamon.sources.gke.calls import FAILURES, RETRYABLE
from megamon.sources.gke.policies import WorkloadPolicies
from megamon.sources.gke.views import NodePoolView
from megamon.telemetry import METHOD_LIST_NODE_POOLS, Instruments

SIMULATED_MACHINE_TYPE = "tpu7x-standard-4t"
DEFAULT_TIMEOUT = 15.0
DEFAULT_DEADLINE = 15.0
"""Short: the polling loop asks again every interval, and a long retry inside one call would
only delay seeing the next change of a node pool."""
MAX_BACKOFF = 2.0


log = logging.getLogger(__name__)


class NodePoolLister(Protocol):
    def list_node_pools(self) -> list[NodePoolView]: ...


def enum_name(value: Any) -> str:
    """An enum field's name; the raw number when the client does not know the value."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def _view(pool: Any, policies: WorkloadPolicies | None) -> NodePoolView:
    config = pool.config
    placement = pool.placement_policy
    topology, policy, problem = placement.tpu_topology, placement.policy_name, ""
    if not topology and policy and policies is not None:
        try:
            topology = policies.topology(policy)
        except SourceError as err:
            problem = str(err)
    return NodePoolView(
        name=pool.name,
        status=enum_name(pool.status),
        machine_type=config.machine_type,
        tpu_topology=topology,
        accelerator=config.resource_labels.get(GKE_ACCELERATOR_TYPE, ""),
        spot=bool(config.spot),
        status_message=pool.status_message,
        placement_policy=policy,
        topology_problem=problem,
    )


def make_client(endpoint: str = "") -> container_v1.ClusterManagerClient:
    """A REST client; an ``http://`` endpoint (an emulator) gets anonymous credentials."""
    if not endpoint:
        return container_v1.ClusterManagerClient(transport="rest")
    credentials = AnonymousCredentials() if endpoint.startswith("http://") else None  # type: ignore[no-untyped-call]
    return container_v1.ClusterManagerClient(
        transport="rest", client_options={"api_endpoint": endpoint}, credentials=credentials
    )


class GkeNodePoolLister:
    """ListNodePools of one cluster, with per-call timeout, retries and a latency histogram."""

    def __init__(
        self,
        cluster_ref: str,
        client: container_v1.ClusterManagerClient,
        *,
        instruments: Instruments | None = None,
        policies: WorkloadPolicies | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        initial_backoff: float = 0.25,
    ) -> None:
        self._ref = cluster_ref
        self._client = client
        self._instruments = instruments or Instruments.unregistered()
        self._policies = policies
        self._unreadable: set[str] = set()
        self._timeout = timeout
        self._retry = api_retry.Retry(
            predicate=RETRYABLE, initial=initial_backoff, maximum=MAX_BACKOFF, timeout=deadline
        )

    def list_node_pools(self) -> list[NodePoolView]:
        start = time.perf_counter()
        failed = True
        try:
            response = self._client.list_node_pools(
                parent=self._ref, timeout=self._timeout, retry=self._retry
            )
            failed = False
        except api_exceptions.RetryError as err:
            raise SourceError(f"GKE ListNodePools {self._ref}: gave up: {err.cause}") from err
        except FAILURES as err:
            raise SourceError(f"GKE ListNodePools {self._ref}: {err}") from err
        finally:
            elapsed = time.perf_counter() - start
            self._instruments.observe_gke(METHOD_LIST_NODE_POOLS, elapsed, failed=failed)
        return self._views(response.node_pools)

    def _views(self, pools: Iterable[Any]) -> list[NodePoolView]:
        """The pools that can be read; each other one is logged and counted once."""
        views: list[NodePoolView] = []
        unreadable: set[str] = set()
        for pool in pools:
            try:
                views.append(_view(pool, self._policies))
            except Exception as err:  # one pool's boundary: the others stay current
                name = str(getattr(pool, "name", "") or "?")
                unreadable.add(name)
                if name not in self._unreadable:
                    log.warning("node pool %s skipped: %s: %s", name, type(err).__name__, err)
                    self._instruments.count_skipped(Kind.NODEPOOL.value, REASON_UNEXPECTED)
        self._unreadable = unreadable
        return views


class StaticNodePoolLister:
    """Node pools held in memory: tests and tools set them; ``fail`` makes listing fail."""

    def __init__(self, pools: Iterable[NodePoolView] = ()) -> None:
        self.pools = list(pools)
        self.fail: SourceError | None = None

    def list_node_pools(self) -> list[NodePoolView]:
        if self.fail is not None:
            raise self.fail
        return list(self.pools)
