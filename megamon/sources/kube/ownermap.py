"""The slice→owner map in a ConfigMap (key ``slice-owner-map.json``), so that a slice that
vanished while its owner runs is still known to be down after megamon restarts. The real
``OwnerMapStore`` of ``megamon/observing/owners.py``."""

from __future__ import annotations

from collections.abc import Mapping

from megamon.codec.owners import OWNER_MAP_KEY, decode, encode
from megamon.domain.owners import SliceOwner
from megamon.sources.kube.configmaps import ConfigMapKey

__all__ = ["OWNER_MAP_KEY", "ConfigMapOwnerMap"]


class ConfigMapOwnerMap:
    """Reads and writes the whole map under one ConfigMap key."""

    def __init__(self, key: ConfigMapKey) -> None:
        self._key = key

    def describe(self) -> str:
        return self._key.describe()

    def load(self) -> dict[str, SliceOwner]:
        text = self._key.read()
        return decode(text, self._key.describe()) if text else {}

    def save(self, owners: Mapping[str, SliceOwner]) -> None:
        self._key.write(encode(owners))
