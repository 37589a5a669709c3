"""The error tree. Library exceptions are wrapped with ``raise ... from`` into one of these so
that the CLI and the loops can tell a user's mistake (a clear one-line message) from a bug."""


class MegamonError(Exception):
    """Base of every error megamon raises on purpose."""


class ConfigError(MegamonError):
    """The configuration file or a command-line argument is invalid."""


class EventFileError(MegamonError):
    """An event file is not in the durable format; the message names file, key and event."""

    def __init__(self, source: str, reason: str, key: str | None = None, index: int | None = None):
        self.source = source
        self.reason = reason
        self.key = key
        self.index = index
        where = source
        if key is not None:
            where += f': key "{key}"'
        if index is not None:
            where += f", event {index}"
        super().__init__(f"{where}: {reason}")


class ObservationError(MegamonError):
    """A cluster object cannot be turned into an observation; the resource is skipped."""


class InvalidTopology(ObservationError):
    """A TPU topology string such as ``4x4x4`` is malformed."""


class InvalidMachineType(ObservationError):
    """A machine type does not say how many TPU chips one VM has."""


class StoreError(MegamonError):
    """The event store failed; history was not changed."""


class Conflict(StoreError):
    """Compare-and-swap lost: the stored version moved since it was read."""


class SourceError(MegamonError):
    """An input API (GKE, Kubernetes, the metadata server) failed; the previous observation
    is kept and the freshness gauge shows its age."""
