"""Benchmark: the CPU of a node sync, decoding the whole objects (``orjson``, as before) and
only the fields the projection keeps (``msgspec`` slim structs, ``sources/kube/slim.py``),
side by side in one run on the same pages.

The pages are what the API server sends a 65,000-node cluster's list (L): 500 realistic TPU
nodes (~9 KB each) a page, 130 pages. Each decoder parses every page and projects every node
(``node_view``), as the watch cache's sync does; the projections of both are compared. The
figure is process CPU time, the best of ``--repeat`` runs of each, alternating.

    python -m internal.bench.node_decoding [--size L] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from internal.bench.fleet_objects import SIZES, nodes
from megamon.sources.kube.projections import NodeView, node_view
from megamon.sources.kube.slim import SlimNode, decode_page, item_decoder

PAGE_SIZE = 500


def pages(size: str) -> Iterator[bytes]:
    """The list's pages, as the API server serializes them."""
    source = nodes(SIZES[size])
    while chunk := list(itertools.islice(source, PAGE_SIZE)):
        meta = {"resourceVersion": "1", "continue": "next"}
        yield orjson.dumps(
            {"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": chunk}
        )


def whole(data: bytes) -> list[NodeView]:
    return [node_view(obj) for obj in orjson.loads(data)["items"]]


_SLIM = item_decoder(SlimNode)


def slim(data: bytes) -> list[NodeView]:
    return [node_view(obj) for obj in decode_page(data, _SLIM)[1]]


def cpu(decode: Callable[[bytes], list[NodeView]], data: list[bytes]) -> tuple[float, int]:
    gc.collect()
    start = time.process_time()
    count = sum(len(decode(page)) for page in data)
    return time.process_time() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="L")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = list(pages(args.size))
    megabytes = sum(map(len, data)) / 1e6
    first_page: Any = data[0]
    assert whole(first_page) == slim(first_page), "the decoders project differently"
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, decode in (("orjson, whole objects", whole), ("msgspec, slim", slim)):
            seconds, count = cpu(decode, data)
            best[name] = min(best.get(name, seconds), seconds)
    print(f"node sync at {args.size}: {count} nodes, {len(data)} pages, {megabytes:.0f} MB of JSON")
    for name, seconds in best.items():
        print(f"  {name:24s} {seconds:6.2f} s CPU")
    ratio = best["msgspec, slim"] / best["orjson, whole objects"]
    print(f"  slim / whole             {ratio:6.2f}x")


if __name__ == "__main__":
    main()
