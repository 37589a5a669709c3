"""Injected failures and delays, as the real REST client experiences them.

These tests pin down client behaviour megamon must be written against: which exception class
each HTTP status becomes, that the generated client already retries 503 on its own, and that a
timeout surfaces as a ``requests`` exception rather than a ``google.api_core`` one.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
import requests
from google.api_core import exceptions
from google.api_core.retry import Retry, if_exception_type
from google.cloud.container_v1 import ClusterManagerClient

from internal.fakegke import FakeGke, tpu_node_pool

pytestmark = pytest.mark.integration

PARENT = "projects/proj/locations/us-east5-a/clusters/tpu"
CLUSTER = ("proj", "us-east5-a", "tpu")


@pytest.fixture(autouse=True)
def _one_pool(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))


def fast_retry(*errors: type[Exception]) -> Retry:
    """A Retry with millisecond backoff, so retrying tests stay fast."""
    return Retry(
        predicate=if_exception_type(*errors), initial=0.01, maximum=0.02, multiplier=1.0, timeout=5
    )


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (403, exceptions.Forbidden),
        (429, exceptions.TooManyRequests),
        (500, exceptions.InternalServerError),
        (503, exceptions.ServiceUnavailable),
    ],
)
def test_status_maps_to_api_core_exception(
    fake_gke: FakeGke,
    gke_client: ClusterManagerClient,
    status: int,
    error: type[exceptions.GoogleAPICallError],
) -> None:
    fake_gke.inject_fault(status=status)

    with pytest.raises(error) as raised:
        gke_client.list_node_pools(parent=PARENT, retry=None)

    assert type(raised.value) is error
    assert raised.value.code == status
    assert "fakegke injected fault" in raised.value.message
    assert len(gke_client.list_node_pools(parent=PARENT).node_pools) == 1, "only one request fails"


def test_rest_403_is_not_permission_denied(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    # PermissionDenied/ResourceExhausted are the gRPC-flavoured subclasses; over REST the
    # client maps by HTTP code only and raises their parents Forbidden/TooManyRequests.
    fake_gke.inject_fault(status=403)
    fake_gke.inject_fault(status=429)

    with pytest.raises(exceptions.Forbidden) as forbidden:
        gke_client.list_node_pools(parent=PARENT, retry=None)
    with pytest.raises(exceptions.TooManyRequests) as throttled:
        gke_client.list_node_pools(parent=PARENT, retry=None)

    assert not isinstance(forbidden.value, exceptions.PermissionDenied)
    assert not isinstance(throttled.value, exceptions.ResourceExhausted)


def test_default_retry_hides_503(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    fake_gke.inject_fault(status=503, count=2)

    pools = gke_client.list_node_pools(parent=PARENT).node_pools

    assert [p.name for p in pools] == ["np"]
    assert fake_gke.request_count == 3


def test_explicit_retry_retries_503_then_succeeds(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.inject_fault(status=503, count=3)

    pools = gke_client.list_node_pools(
        parent=PARENT, retry=fast_retry(exceptions.ServiceUnavailable)
    )

    assert [p.name for p in pools.node_pools] == ["np"]
    assert fake_gke.request_count == 4


def test_retry_does_not_retry_what_its_predicate_excludes(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.inject_fault(status=429, count=1)

    with pytest.raises(exceptions.TooManyRequests):
        gke_client.list_node_pools(parent=PARENT, retry=fast_retry(exceptions.ServiceUnavailable))

    assert fake_gke.request_count == 1


def test_latency_with_timeout_raises_requests_timeout(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.inject_fault(latency_seconds=2.0)
    started = time.monotonic()

    # Not api_core's DeadlineExceeded: the REST transport lets requests' ReadTimeout through,
    # and the default retry (DeadlineExceeded, ServiceUnavailable) does not retry it.
    with pytest.raises(requests.exceptions.ReadTimeout):
        gke_client.list_node_pools(parent=PARENT, timeout=0.2)

    assert time.monotonic() - started < 1.5
    assert fake_gke.request_count == 1


def test_latency_below_timeout_only_slows(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.inject_fault(latency_seconds=0.2)
    started = time.monotonic()

    pools = gke_client.list_node_pools(parent=PARENT, timeout=5)

    assert time.monotonic() - started >= 0.15
    assert len(pools.node_pools) == 1


def test_path_prefix_targets_one_resource(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.inject_fault(status=403, path_prefix=f"/v1/{PARENT}/nodePools/np")

    assert len(gke_client.list_node_pools(parent=PARENT, retry=None).node_pools) == 1
    with pytest.raises(exceptions.Forbidden):
        gke_client.get_node_pool(name=f"{PARENT}/nodePools/np", retry=None)
    assert gke_client.get_node_pool(name=f"{PARENT}/nodePools/np").name == "np"


def test_status_faults_apply_in_order_and_latency_composes(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.inject_fault(status=500)
    fake_gke.inject_fault(latency_seconds=0.2)
    fake_gke.inject_fault(status=403)
    started = time.monotonic()

    with pytest.raises(exceptions.InternalServerError):
        gke_client.list_node_pools(parent=PARENT, retry=None)
    assert time.monotonic() - started >= 0.15, "the first request is also the slow one"
    with pytest.raises(exceptions.Forbidden):
        gke_client.list_node_pools(parent=PARENT, retry=None)
    assert len(gke_client.list_node_pools(parent=PARENT, retry=None).node_pools) == 1


def test_clear_faults(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    fake_gke.inject_fault(status=500, count=5)
    fake_gke.clear_faults()

    assert len(gke_client.list_node_pools(parent=PARENT, retry=None).node_pools) == 1


def test_stop_does_not_wait_for_injected_latency(fake_gke: FakeGke) -> None:
    fake_gke.inject_fault(latency_seconds=30)

    def call() -> None:
        with contextlib.suppress(requests.exceptions.ConnectionError):
            requests.get(f"{fake_gke.endpoint}/v1/{PARENT}/nodePools", timeout=10)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 5
    while fake_gke.request_count == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    fake_gke.stop()
    caller.join(timeout=5)

    assert time.monotonic() - started < 2
    assert not caller.is_alive()
