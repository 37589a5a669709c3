"""Decode a list page keeping only the fields a projection reads.

A TPU node is ~9 KB of JSON (managed fields, images, capacity, addresses, node info), and a
65,000-node cluster's first list is ~600 MB of it; ``orjson`` builds every dict and string of
every node before the projection keeps a few labels and one condition. msgspec decodes into
typed structs and skips, while parsing, every field a struct does not name, so a page of
nodes costs a third of the CPU (``python -m internal.bench.node_decoding``).

A page is first split into its items, each kept as raw bytes (``msgspec.Raw``: a slice of the
page, not parsed); each item is then decoded on its own into its resource's slim struct. The
struct's fields are typed ``Any`` where the API server's type is not megamon's to promise, so
a malformed object decodes as it is and its projection rejects it with the usual message;
an item that is not even an object falls back to ``orjson``, so one bad object costs only
itself, never the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import orjson

from megamon.domain import labels

Json = dict[str, Any]
ItemDecoder = Callable[[bytes], Any]


class _Metadata(msgspec.Struct, omit_defaults=True):
    """What every cache reads of ``metadata``: the key, the version, the node's labels."""

    name: Any = None
    namespace: Any = None
    uid: Any = None
    resourceVersion: Any = None  # noqa: N815 - the API's name
    labels: Any = None


class _Taint(msgspec.Struct, omit_defaults=True):
    key: Any = None


class _NodeSpec(msgspec.Struct, omit_defaults=True):
    taints: list[_Taint] | None = None
    unschedulable: Any = None


class _Condition(msgspec.Struct, omit_defaults=True):
    """A condition without its message, reason and heartbeat: most of a node's status."""

    type: Any = None
    status: Any = None
    lastTransitionTime: Any = None  # noqa: N815 - the API's name


class _Allocatable(msgspec.Struct, omit_defaults=True):
    """Of the node's allocatable quantities, only its TPU chips."""

    tpu: Any = msgspec.field(default=None, name=labels.RESOURCE_TPU)


class _NodeStatus(msgspec.Struct, omit_defaults=True):
    conditions: list[_Condition] | None = None
    allocatable: _Allocatable | None = None


class SlimNode(msgspec.Struct, omit_defaults=True):
    """The fields of a Node that ``projections.node_view`` reads, and nothing else."""

    metadata: _Metadata | None = None
    spec: _NodeSpec | None = None
    status: _NodeStatus | None = None


class _Page(msgspec.Struct):
    metadata: Any = None
    items: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"[]"))
    """The items unparsed: split into objects only once the page is known to be an object."""


_PAGE = msgspec.json.Decoder(_Page)
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


def item_decoder(slim: type[msgspec.Struct]) -> ItemDecoder:
    """Decode one object into plain dicts of ``slim``'s fields, absent where the object has
    none (``slim`` omits defaults, as the JSON did); anything ``slim`` cannot hold is decoded
    whole, for the projection to judge."""
    decoder = msgspec.json.Decoder(slim)

    def decode(raw: bytes) -> Any:
        try:
            return msgspec.to_builtins(decoder.decode(raw))
        except msgspec.ValidationError:
            return orjson.loads(bytes(raw))

    return decode


def decode_page(data: bytes, decode_item: ItemDecoder) -> tuple[Any, Iterator[Any]]:
    """A list page's ``metadata`` and its items, each decoded by ``decode_item`` as it is
    iterated. Raises ``ValueError`` for a body that is not a JSON object."""
    try:
        page = _PAGE.decode(data)
        items = _ITEMS.decode(page.items) if bytes(page.items) != b"null" else []
    except msgspec.ValidationError:  # a page or items of another type: none to take in
        return _metadata_of(data), iter(())
    except msgspec.DecodeError as err:
        raise ValueError(f"the API server answered a list that is not JSON: {err}") from None
    return page.metadata, (decode_item(item) for item in items)


def _metadata_of(data: bytes) -> Any:
    document = orjson.loads(data)
    if not isinstance(document, dict):
        raise ValueError("the API server answered a list with something other than an object")  # noqa: TRY004
    return document.get("metadata")
