"""Who owned a slice: remembered across restarts so that a vanished slice whose owner
still runs is known to be down."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SliceOwner:
    """The owner of a slice, and the slice's TPU shape, as remembered in the owner map."""

    kind: str
    name: str
    namespace: str
    accelerator: str = ""
    topology: str = ""
    uid: str = ""
    """The slice's own UID (the report's ``sliceUID``), kept so a vanished slice keeps it."""
