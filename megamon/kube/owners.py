"""The slice→owner map, kept in a ConfigMap (key ``slice-owner-map.json``) so that a slice
that vanished while its owner runs is still known to be down after megamon restarts."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import orjson

from megamon.kube.configmaps import ConfigMapKey
from megamon.observers.slices import SliceOwner

log = logging.getLogger("megamon.kube")

OWNER_MAP_KEY = "slice-owner-map.json"
_FIELDS = ("kind", "name", "namespace", "accelerator", "topology")


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


class OwnerMapStore:
    """Load and save the map; saves only when it changed."""

    def __init__(self, key: ConfigMapKey) -> None:
        self._key = key
        self._saved: dict[str, SliceOwner] | None = None

    def load(self) -> dict[str, SliceOwner]:
        text = self._key.read()
        owners = decode(text, self._key.describe()) if text else {}
        self._saved = dict(owners)
        return owners

    def save(self, owners: Mapping[str, SliceOwner]) -> None:
        if self._saved is not None and dict(owners) == self._saved:
            return
        self._key.write(encode(owners))
        self._saved = dict(owners)
