"""The fake's static knowledge of GKE (enum numbers, TPU node pool shapes) checked against
the installed google-cloud-container client, so a client upgrade that changes them is caught."""

from __future__ import annotations

import pytest
from google.cloud.container_v1 import NodePool
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from internal.fakegke import tpu_node_pool
from internal.fakegke.builders import nodes_for
from internal.fakegke.enums import ENUM_FIELDS, NODE_POOL_STATUS, wants_int_enums, with_int_enums

pytestmark = pytest.mark.integration


def _field(message: Descriptor, json_path: tuple[str, ...]) -> FieldDescriptor:
    field = next(f for f in message.fields if f.json_name == json_path[0])
    return field if len(json_path) == 1 else _field(field.message_type, json_path[1:])


@pytest.mark.parametrize("json_path", list(ENUM_FIELDS), ids=".".join)
def test_enum_numbers_match_the_proto(json_path: tuple[str, ...]) -> None:
    enum = _field(NodePool.pb().DESCRIPTOR, json_path).enum_type

    assert ENUM_FIELDS[json_path] == {value.name: value.number for value in enum.values}


def test_node_pool_status_has_no_deleting() -> None:
    assert set(NODE_POOL_STATUS) == set(NodePool.Status.__members__)
    assert "DELETING" not in NODE_POOL_STATUS


def test_int_encoding_walks_lists_and_leaves_unknown_names() -> None:
    pool = {
        "status": "STOPPING",
        "config": {"taints": [{"effect": "NO_SCHEDULE"}, {"effect": "FUTURE_EFFECT"}]},
    }

    encoded = with_int_enums(pool)

    assert encoded == {
        "status": 5,
        "config": {"taints": [{"effect": 1}, {"effect": "FUTURE_EFFECT"}]},
    }
    assert pool["status"] == "STOPPING", "the stored pool is not modified"


@pytest.mark.parametrize(
    ("alt", "wanted"),
    [
        ("json;enum-encoding=int", True),
        ("json", False),
        (None, False),
        ("enum-encoding=int", False),
    ],
)
def test_wants_int_enums(alt: str | None, wanted: bool) -> None:
    assert wants_int_enums(alt) is wanted


@pytest.mark.parametrize(
    ("machine_type", "topology", "nodes"),
    [
        ("ct5lp-hightpu-4t", "16x16", 64),
        ("ct5lp-hightpu-8t", "2x4", 1),
        ("ct5lp-hightpu-1t", "1x1", 1),
        ("ct5p-hightpu-4t", "4x4x8", 32),
        ("ct6e-standard-4t", "8x16", 32),
    ],
)
def test_nodes_for_tpu_slices(machine_type: str, topology: str, nodes: int) -> None:
    assert nodes_for(machine_type, topology) == nodes


def test_builder_shape() -> None:
    pool = tpu_node_pool(
        "np", status="ERROR", status_message="stockout", spot=True, zone="us-east5-a", node_count=3
    )

    assert pool["config"] == {
        "machineType": "ct5lp-hightpu-4t",
        "resourceLabels": {"goog-gke-accelerator-type": "tpu-v5-lite-podslice"},
        "spot": True,
    }
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "16x16"}
    assert pool["initialNodeCount"] == 3
    assert pool["locations"] == ["us-east5-a"]
    assert (pool["status"], pool["statusMessage"]) == ("ERROR", "stockout")
    assert "spot" not in tpu_node_pool("on-demand")["config"]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"machine_type": "n2-standard-8"}, "pass node_count"),
        ({"topology": "4by4"}, "invalid TPU topology"),
        ({"status": "UP"}, "invalid node pool status"),
    ],
)
def test_builder_rejects_nonsense(kwargs: dict[str, str], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        tpu_node_pool("np", **kwargs)  # type: ignore[arg-type]
