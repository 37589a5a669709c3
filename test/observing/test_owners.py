"""The slice→owner map between cycles: loaded once, saved only when it changed, and a store
that fails neither stops the cycle nor loses the map."""

from __future__ import annotations

from collections.abc import Mapping

from megamon.domain.owners import SliceOwner
from megamon.errors import SourceError
from megamon.observing.owners import MemoryOwnerMapStore, SliceOwners

TRAIN = SliceOwner("JobSet", "train", "team", "tpu7x", "4x4x4")


class FlakyStore(MemoryOwnerMapStore):
    """Fails loads or saves while told to."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_load = False
        self.fail_save = False
        self.loads = 0

    def load(self) -> dict[str, SliceOwner]:
        self.loads += 1
        if self.fail_load:
            raise SourceError("configmap unreachable")
        return super().load()

    def save(self, owners: Mapping[str, SliceOwner]) -> None:
        if self.fail_save:
            raise SourceError("configmap unreachable")
        super().save(owners)


def test_the_map_is_loaded_once_and_saved_only_when_it_changes() -> None:
    store = FlakyStore()
    store.owners = {"a": TRAIN}
    owners = SliceOwners(store)
    assert owners.current() == {"a": TRAIN}
    owners.update({"a": TRAIN})
    owners.update({"a": TRAIN, "b": TRAIN})
    owners.update({"a": TRAIN, "b": TRAIN})
    assert owners.current() == {"a": TRAIN, "b": TRAIN}
    assert store.loads == 1 and store.saves == 1


def test_an_unreadable_store_starts_empty_and_the_next_change_is_saved() -> None:
    store = FlakyStore()
    store.fail_load = True
    owners = SliceOwners(store)
    assert owners.current() == {}
    store.fail_load = False
    owners.update({"a": TRAIN})
    assert store.owners == {"a": TRAIN} and store.loads == 1


def test_a_failed_save_keeps_the_map_and_is_retried_until_it_lands() -> None:
    store = FlakyStore()
    owners = SliceOwners(store)
    owners.current()
    store.fail_save = True
    owners.update({"a": TRAIN})  # raises nothing: the cycle goes on
    assert owners.current() == {"a": TRAIN} and store.saves == 0
    store.fail_save = False
    owners.update({"a": TRAIN})  # unchanged, but not saved yet
    assert store.owners == {"a": TRAIN} and store.saves == 1
