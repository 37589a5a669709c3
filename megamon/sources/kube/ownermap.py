"""The slice→owner map, kept in a ConfigMap (key ``slice-owner-map.json``) so that a slice
that vanished while its owner runs is still known to be down after megamon restarts."""

from __future__ import annotations

from collections.abc import Mapping

from megamon.codec.owners import OWNER_MAP_KEY, decode, encode
from megamon.domain.owners import SliceOwner
from megamon.sources.kube.configmaps import ConfigMapKey

__all__ = ["OWNER_MAP_KEY", "OwnerMapStore"]


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
