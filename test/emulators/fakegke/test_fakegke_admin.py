"""The admin HTTP surface of the fake, and the exact bytes its API sends on the wire."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud.container_v1 import ClusterManagerClient, NodePool

from internal.fakegke import ApiError, FakeGke, tpu_node_pool

pytestmark = pytest.mark.integration

CLUSTER_PATH = "projects/proj/locations/europe-west4-a/clusters/tpu"
PARENT = CLUSTER_PATH
CLUSTER = ("proj", "europe-west4-a", "tpu")


def http(fake: FakeGke, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    """Send one request to the fake with urllib; returns (status, decoded JSON body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(fake.endpoint + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def test_admin_put_is_served_to_the_client(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    pool = tpu_node_pool("from-http", spot=True, status="RECONCILING")

    code, stored = http(fake_gke, "PUT", f"/admin/v1/{CLUSTER_PATH}/nodePools/from-http", pool)

    assert code == 200
    assert stored["selfLink"].endswith(f"/v1/{CLUSTER_PATH}/nodePools/from-http")
    got = gke_client.get_node_pool(name=f"{PARENT}/nodePools/from-http")
    assert got.status == NodePool.Status.RECONCILING
    assert got.config.spot is True


def test_admin_path_name_wins_over_body(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    code, stored = http(
        fake_gke, "PUT", f"/admin/v1/{CLUSTER_PATH}/nodePools/path-name", tpu_node_pool("body")
    )

    assert code == 200
    assert stored["name"] == "path-name"
    assert [p.name for p in gke_client.list_node_pools(parent=PARENT).node_pools] == ["path-name"]


def test_admin_list_get_and_delete(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("a"))
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("b"))

    assert http(fake_gke, "GET", f"/admin/v1/{CLUSTER_PATH}/nodePools/a")[1]["name"] == "a"
    assert http(fake_gke, "DELETE", f"/admin/v1/{CLUSTER_PATH}/nodePools/a") == (200, {})
    code, listed = http(fake_gke, "GET", f"/admin/v1/{CLUSTER_PATH}/nodePools")

    assert code == 200
    assert [p["name"] for p in listed["nodePools"]] == ["b"]
    assert fake_gke.request_count == 0, "admin requests are not API requests"


def test_admin_delete_unknown_is_404(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("a"))

    code, body = http(fake_gke, "DELETE", f"/admin/v1/{CLUSTER_PATH}/nodePools/zzz")

    assert code == 404
    assert body["error"]["status"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"status": "DELETING"}, "STOPPING"),
        ({"status": "running"}, "invalid node pool status"),
        ([1, 2], "JSON object"),
    ],
)
def test_admin_rejects_invalid_pools(fake_gke: FakeGke, body: Any, fragment: str) -> None:
    code, reply = http(fake_gke, "PUT", f"/admin/v1/{CLUSTER_PATH}/nodePools/np", body)

    assert code == 400
    assert reply["error"]["status"] == "INVALID_ARGUMENT"
    assert fragment in reply["error"]["message"]


def test_python_api_rejects_deleting_status(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))

    with pytest.raises(ApiError, match="STOPPING") as raised:
        fake_gke.set_status(*CLUSTER, "np", "DELETING")
    assert raised.value.code == 400
    with pytest.raises(ValueError, match="STOPPING"):
        tpu_node_pool("np", status="DELETING")


def test_python_api_delete_then_client_404(
    fake_gke: FakeGke, gke_client: ClusterManagerClient
) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))
    fake_gke.delete_node_pool(*CLUSTER, "np")

    with pytest.raises(exceptions.NotFound):
        gke_client.get_node_pool(name=f"{PARENT}/nodePools/np")
    with pytest.raises(ApiError) as raised:
        fake_gke.delete_node_pool(*CLUSTER, "np")
    assert raised.value.code == 404


def test_api_sends_integer_enums_when_the_client_asks(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np", status="RUNNING_WITH_ERROR"))
    path = f"/v1/{CLUSTER_PATH}/nodePools/np"

    _, as_int = http(fake_gke, "GET", path + "?%24alt=json%3Benum-encoding%3Dint")
    _, as_name = http(fake_gke, "GET", path)

    assert (as_int["status"], as_int["placementPolicy"]["type"]) == (3, 1)
    assert (as_name["status"], as_name["placementPolicy"]["type"]) == (
        "RUNNING_WITH_ERROR",
        "COMPACT",
    )
    assert fake_gke.get_node_pool(*CLUSTER, "np")["status"] == "RUNNING_WITH_ERROR"


def test_api_list_of_empty_cluster_is_an_empty_object(fake_gke: FakeGke) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))
    fake_gke.delete_node_pool(*CLUSTER, "np")

    assert http(fake_gke, "GET", f"/v1/{CLUSTER_PATH}/nodePools") == (200, {})


def test_api_errors_use_google_shape(fake_gke: FakeGke) -> None:
    code, body = http(fake_gke, "GET", "/v1/projects/p/locations/l/clusters/c/nodePools")

    assert code == 404
    assert body == {
        "error": {
            "code": 404,
            "message": "Not found: projects/p/locations/l/clusters/c.",
            "status": "NOT_FOUND",
        }
    }


def test_api_write_methods_are_unimplemented(fake_gke: FakeGke) -> None:
    code, body = http(fake_gke, "POST", f"/v1/{CLUSTER_PATH}/nodePools", {"nodePool": {}})

    assert code == 501
    assert body["error"]["status"] == "UNIMPLEMENTED"


def test_faults_over_http(fake_gke: FakeGke, gke_client: ClusterManagerClient) -> None:
    fake_gke.put_node_pool(*CLUSTER, tpu_node_pool("np"))

    code, reply = http(fake_gke, "POST", "/admin/v1/faults", {"status": 429, "count": 2})
    assert (code, reply["faults"][0]["count"]) == (200, 2)
    assert http(fake_gke, "GET", f"/admin/v1/{CLUSTER_PATH}/nodePools")[0] == 200
    with pytest.raises(exceptions.TooManyRequests):
        gke_client.list_node_pools(parent=PARENT)
    assert http(fake_gke, "DELETE", "/admin/v1/faults") == (200, {"faults": []})

    assert [p.name for p in gke_client.list_node_pools(parent=PARENT).node_pools] == ["np"]


@pytest.mark.parametrize(
    "spec",
    [
        {"status": 418},
        {"status": 503.0},
        {"status": 503, "count": 0},
        {"status": 503, "count": True},
        {"count": 1},
        {"latency_seconds": -1},
        {"latency_seconds": "1"},
        {"latency_seconds": float("nan")},
        {"x": 1},
    ],
)
def test_invalid_fault_is_400(fake_gke: FakeGke, spec: dict[str, Any]) -> None:
    code, body = http(fake_gke, "POST", "/admin/v1/faults", spec)

    assert code == 400
    assert body["error"]["status"] == "INVALID_ARGUMENT"
