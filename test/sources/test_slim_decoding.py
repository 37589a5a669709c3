"""Nodes decoded with only the fields the projection reads give the projection of the whole
object: on the benchmark's realistic TPU nodes (~9 KB each), and on malformed ones, which are
rejected with the same message — one bad object never costs the page."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from internal.bench.fleet_objects import SIZES, nodes
from megamon.errors import ObservationError
from megamon.sources.kube.projections import node_view
from megamon.sources.kube.slim import SlimNode, decode_page, item_decoder

DECODE = item_decoder(SlimNode)
READY = {"type": "Ready", "status": "True"}


def _page(items: list[Any], **meta: str) -> bytes:
    return orjson.dumps({"kind": "NodeList", "metadata": meta, "items": items})


def _views(items: list[Any]) -> list[Any]:
    out = []
    for obj in items:
        try:
            out.append(node_view(obj))
        except (ObservationError, AttributeError, TypeError) as err:
            out.append(type(err).__name__ + str(err))
    return out


def test_realistic_nodes_project_alike() -> None:
    objects = list(itertools.islice(nodes(SIZES["S"]), 600))
    objects[3]["spec"]["taints"] = [{"key": "cloud.google.com/impending-node-termination"}]
    objects[4]["spec"]["unschedulable"] = True
    objects[5]["status"]["conditions"][-1]["status"] = "Unknown"
    objects[6]["metadata"]["labels"]["cloud.google.com/scheduled-maintenance-time"] = "1780282800"
    objects[7]["metadata"]["labels"]["cloud.google.com/scheduled-maintenance-time"] = "soon"
    objects[8]["status"]["allocatable"]["google.com/tpu"] = "0"
    del objects[9]["status"]["allocatable"]
    meta, items = decode_page(_page(objects, resourceVersion="42", **{"continue": "t"}), DECODE)
    slim = list(items)
    assert meta == {"resourceVersion": "42", "continue": "t"}
    assert _views(slim) == _views(objects)
    views = _views(slim)
    assert [v.scheduled_maintenance for v in views[6:8]] == [1_780_282_800, -1]
    chips_per_vm = int(objects[7]["status"]["allocatable"]["google.com/tpu"])
    assert [v.tpu_allocatable for v in views[7:10]] == [chips_per_vm, 0, None]
    assert len(orjson.dumps(slim)) < len(orjson.dumps(objects)) / 2  # the rest is skipped


@pytest.mark.parametrize(
    "bad",
    [
        5,
        "node",
        None,
        {"metadata": "n"},
        {"metadata": {"name": "n", "labels": "x"}},
        {"metadata": {"name": "n"}, "spec": {"taints": 3}},
        {"metadata": {"name": "n"}, "status": {"conditions": [READY | {"lastTransitionTime": 7}]}},
        {"metadata": {"name": "n"}, "status": {"conditions": [READY | {"lastTransitionTime": ""}]}},
        {"metadata": {"name": "n"}, "status": []},
        {"metadata": {"name": "n"}, "status": {"allocatable": "4"}},
        {"metadata": {"name": "n"}, "status": {"allocatable": {"google.com/tpu": [4]}}},
        {"metadata": {"name": "n", "labels": {"cloud.google.com/scheduled-maintenance-time": 5}}},
    ],
)  # fmt: skip
def test_a_malformed_node_is_judged_alone_as_before(bad: Any) -> None:
    good = next(iter(nodes(SIZES["S"])))
    _, items = decode_page(_page([good, bad, good]), DECODE)
    slim = list(items)
    assert _views(slim) == _views([good, bad, good])


@pytest.mark.parametrize(
    ("body", "items"),
    [(b'{"items": null}', []), (b'{"items": 5}', []), (b"{}", []), (b'{"items": []}', [])],
)
def test_a_page_without_a_list_of_items_has_none(body: bytes, items: list[Any]) -> None:
    assert list(decode_page(body, DECODE)[1]) == items


@pytest.mark.parametrize("body", [b"[1]", b"{bad", b"", b'"x"'])
def test_a_body_that_is_not_an_object_is_a_value_error(body: bytes) -> None:
    with pytest.raises(ValueError, match="the API server answered a list"):
        decode_page(body, DECODE)
