"""The TPU topology of a workload policy: how Ironwood (TPU7x) multi-host node pools say it.

A TPU7x multi-host node pool has no ``placementPolicy.tpuTopology``: GKE creates it with a
Compute Engine workload policy (``gcloud compute resource-policies create workload-policy
NAME --type=HIGH_THROUGHPUT --accelerator-topology=2x2x2``, then ``--placement-policy=NAME``
on the node pool), so the pool carries ``placementPolicy.policyName`` and the topology is the
policy's ``workloadPolicy.acceleratorTopology``. It is read here, through the official
``google-cloud-compute`` client, once per policy: a resource policy cannot be changed, only
deleted and created anew (and a pool's policy is fixed at creation), so a topology once read
is kept for the life of the process.

A call that fails (403 without ``compute.resourcePolicies.get``, 404, an unreachable API) is
one log line per policy until it succeeds, and its count is
``megamon_gke_latency_seconds_count{method="GetResourcePolicy",error="true"}``; the policy is
asked again no sooner than ``retry_after`` seconds later, so a refused policy costs one call
per interval, not one per poll. The caller observes the pool without the topology (from its
nodes, when it has some).

The client is made at the first policy to read, not at start: a cluster without TPU7x
multi-host pools never needs Compute Engine, and missing credentials for it are such a
failure of the pools that need it, never a start-up failure of megamon. So is its module:
``google.cloud.compute_v1`` holds every Compute Engine message, and importing it costs a
process about 150 MB, which a fleet without workload policies never pays.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from google.api_core import exceptions as api_exceptions
from google.api_core import retry as api_retry
from google.auth import exceptions as auth_exceptions
from google.auth.credentials import AnonymousCredentials

from megamon.errors import SourceError
from megamon.sources.gke.calls import FAILURES, RETRYABLE
from megamon.telemetry import METHOD_GET_RESOURCE_POLICY, Instruments

DEFAULT_TIMEOUT = 10.0
DEFAULT_DEADLINE = 10.0
DEFAULT_RETRY_AFTER = 60.0
"""Seconds before a policy whose read failed is asked again."""

_POLICY_PATH = re.compile(
    r"(?:^|/)projects/(?P<project>[^/]+)/regions/(?P<region>[^/]+)/resourcePolicies/(?P<name>[^/]+)$"
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from google.cloud.compute_v1 import ResourcePoliciesClient as Client


class WorkloadPolicies(Protocol):
    def topology(self, policy: str) -> str:
        """The accelerator topology of ``policy`` (a node pool's ``policyName``); raises
        ``SourceError`` when it cannot be read or the policy has none."""
        ...


@dataclass(frozen=True, slots=True)
class PolicyRef:
    project: str
    region: str
    name: str

    def __str__(self) -> str:
        return f"projects/{self.project}/regions/{self.region}/resourcePolicies/{self.name}"


def region_of(location: str) -> str:
    """The region of a cluster's location: a region itself, or the region of a zone
    (``us-central1-a`` → ``us-central1``); regions are always two dash-separated parts."""
    return "-".join(location.split("-")[:2])


def policy_ref(policy: str, project: str, region: str) -> PolicyRef:
    """What ``policyName`` names: a policy of the node pool's project and region (GKE's rule),
    or the one a resource path or URL names."""
    match = _POLICY_PATH.search(policy)
    if match is None:
        return PolicyRef(project, region, policy)
    return PolicyRef(match["project"], match["region"], match["name"])


def make_compute_client(endpoint: str = "") -> Client:
    """A REST client (the only transport compute_v1 has); an ``http://`` endpoint (an
    emulator) gets anonymous credentials, as the GKE client does."""
    from google.cloud import compute_v1  # noqa: PLC0415 - heavy: only when a policy is read

    if not endpoint:
        return compute_v1.ResourcePoliciesClient(transport="rest")
    credentials = AnonymousCredentials() if endpoint.startswith("http://") else None  # type: ignore[no-untyped-call]
    return compute_v1.ResourcePoliciesClient(
        transport="rest", client_options={"api_endpoint": endpoint}, credentials=credentials
    )


@dataclass(frozen=True, slots=True)
class _Failure:
    message: str
    at: float


class ComputeWorkloadPolicies:
    """Workload policies of one project and region, read with ResourcePolicies.Get and kept."""

    def __init__(
        self,
        project: str,
        region: str,
        connect: Callable[[], Client],
        *,
        instruments: Instruments | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        initial_backoff: float = 0.25,
        retry_after: float = DEFAULT_RETRY_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._project = project
        self._region = region
        self._client: Client | None = None
        self._connect = connect
        self._instruments = instruments or Instruments.unregistered()
        self._timeout = timeout
        self._retry = api_retry.Retry(
            predicate=RETRYABLE, initial=initial_backoff, maximum=2.0, timeout=deadline
        )
        self._retry_after = retry_after
        self._clock = clock
        self._topologies: dict[PolicyRef, str] = {}
        self._failures: dict[PolicyRef, _Failure] = {}

    def topology(self, policy: str) -> str:
        ref = policy_ref(policy, self._project, self._region)
        known = self._topologies.get(ref)
        if known is not None:
            return known
        failure = self._failures.get(ref)
        if failure is not None and self._clock() - failure.at < self._retry_after:
            raise SourceError(failure.message)
        try:
            topology = self._read(ref)
        except SourceError as err:
            self._failed(ref, str(err), failure)
            raise
        if failure is not None:
            log.info("workload policy %s: read, topology %s", ref, topology)
            del self._failures[ref]
        self._topologies[ref] = topology
        return topology

    def _connected(self, ref: PolicyRef) -> Client:
        if self._client is None:
            try:
                self._client = self._connect()
            except auth_exceptions.GoogleAuthError as err:
                raise SourceError(
                    f"Compute GetResourcePolicy {ref}: no Google Cloud credentials ({err})"
                ) from err
        return self._client

    def _read(self, ref: PolicyRef) -> str:
        client = self._connected(ref)
        start = time.perf_counter()
        failed = True
        try:
            found = client.get(
                project=ref.project,
                region=ref.region,
                resource_policy=ref.name,
                timeout=self._timeout,
                retry=self._retry,
            )
            failed = False
        except api_exceptions.RetryError as err:
            raise SourceError(f"Compute GetResourcePolicy {ref}: gave up: {err.cause}") from err
        except FAILURES as err:
            raise SourceError(f"Compute GetResourcePolicy {ref}: {err}") from err
        finally:
            elapsed = time.perf_counter() - start
            self._instruments.observe_gke(METHOD_GET_RESOURCE_POLICY, elapsed, failed=failed)
        topology = found.workload_policy.accelerator_topology
        if not topology:
            raise SourceError(
                f"Compute GetResourcePolicy {ref}: the policy has no "
                "workloadPolicy.acceleratorTopology (not a TPU workload policy)"
            )
        return topology

    def _failed(self, ref: PolicyRef, message: str, previous: _Failure | None) -> None:
        """One log line per policy while it keeps failing the same way."""
        if previous is None or previous.message != message:
            log.warning("%s; its node pools are sized from their nodes until it is read", message)
        self._failures[ref] = _Failure(message, self._clock())
