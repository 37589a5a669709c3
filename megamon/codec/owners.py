"""The slice→owner map's JSON: ``{slice name: {kind, name, namespace, accelerator,
topology}}``, keys sorted. Entries that are not owner objects are dropped with a warning."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import orjson

from megamon.domain.owners import SliceOwner

log = logging.getLogger(__name__)

OWNER_MAP_KEY = "slice-owner-map.json"
_FIELDS = ("kind", "name", "namespace", "accelerator", "topology", "uid")


def encode(owners: Mapping[str, SliceOwner]) -> str:
    return orjson.dumps(
        {name: {f: getattr(o, f) for f in _FIELDS} for name, o in sorted(owners.items())}
    ).decode()


def decode(text: str, source: str) -> dict[str, SliceOwner]:
    """The map in ``text``; entries that are not owner objects are dropped with a warning."""
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        log.warning("%s is not JSON (%s); starting with an empty slice owner map", source, err)
        return {}
    if not isinstance(document, dict):
        log.warning("%s is not a JSON object; starting with an empty slice owner map", source)
        return {}
    owners = {}
    for name, raw in document.items():
        if isinstance(raw, dict) and all(isinstance(raw.get(f, ""), str) for f in _FIELDS):
            owners[name] = SliceOwner(**{f: raw.get(f, "") for f in _FIELDS})
        else:
            log.warning("%s: entry %r is not an owner; dropped", source, name)
    return owners
