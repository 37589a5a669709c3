"""Where a history and its reports live: the one place that decides it.

- In simulation (``EnableSimulation``) the history is in memory and the reports go to
  ``EventsLocalDir``: a simulated fleet never writes into a production bucket.
- With ``EventsBucketName``, both are in the bucket under ``EventsBucketPath``.
- Otherwise both are in the local directory ``EventsLocalDir`` (the embedded default).

The commands that read history (``events``, ``summarize``, ``report``) may override the
configuration with ``--events-dir DIR`` or ``--bucket B [--path P]``; ``Overrides`` carries
those, and the same resolution applies to the history and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from google.auth import exceptions as auth_exceptions
from google.cloud.storage import Client as StorageClient

from megamon.config import Config, bucket_prefix
from megamon.errors import ConfigError, StoreError
from megamon.stores.base import EventStore, ObjectBackend
from megamon.stores.gcs import GcsEventStore, GcsObjects
from megamon.stores.local import LocalEventStore, LocalObjects
from megamon.stores.memory import MemoryEventStore
from megamon.stores.readonly import ReadOnlyObjects
from megamon.telemetry import Instruments


class Medium(StrEnum):
    MEMORY = "memory"
    LOCAL = "local"
    GCS = "gcs"


@dataclass(frozen=True)
class Location:
    """A place for history or reports: memory, a directory, or a bucket and a path."""

    medium: Medium
    directory: str = ""
    bucket: str = ""
    path: str = ""
    project: str = ""

    def describe(self) -> str:
        if self.medium is Medium.GCS:
            return f"gs://{self.bucket}/{self.path}".rstrip("/")
        if self.medium is Medium.LOCAL:
            return self.directory
        return "memory"


@dataclass(frozen=True)
class Overrides:
    """A command's ``--events-dir`` or ``--bucket``/``--path``, which win over the file."""

    events_dir: str | None = None
    bucket: str | None = None
    path: str | None = None

    def check(self) -> None:
        if self.events_dir and self.bucket:
            raise ConfigError("give --events-dir or --bucket, not both")
        if self.path is not None and not self.bucket:
            raise ConfigError("--path needs --bucket")
        if self.events_dir and not Path(self.events_dir).is_dir():
            raise ConfigError(f"--events-dir {self.events_dir}: no such directory")


NO_OVERRIDES = Overrides()


def _override(config: Config, overrides: Overrides) -> Location | None:
    overrides.check()
    if overrides.events_dir:
        return Location(Medium.LOCAL, directory=overrides.events_dir)
    if overrides.bucket:
        path = bucket_prefix(overrides.path) if overrides.path is not None else config.events_path
        return Location(
            Medium.GCS, bucket=overrides.bucket, path=path, project=config.GKE.ProjectID
        )
    return None


def history_location(config: Config, overrides: Overrides = NO_OVERRIDES) -> Location:
    """Where the history of ``config`` (or the overrides) lives."""
    found = _override(config, overrides)
    if found is not None:
        return found
    if config.EnableSimulation:
        return Location(Medium.MEMORY)
    if config.EventsBucketName:
        return Location(
            Medium.GCS,
            bucket=config.EventsBucketName,
            path=config.events_path,
            project=config.GKE.ProjectID,
        )
    return Location(Medium.LOCAL, directory=config.EventsLocalDir)


def reports_location(config: Config, overrides: Overrides = NO_OVERRIDES) -> Location:
    """Where the reports of ``config`` (``<location>/reports/``) live: beside the history,
    except in simulation, whose in-memory history keeps its reports in ``EventsLocalDir``."""
    found = history_location(config, overrides)
    if found.medium is Medium.MEMORY:
        return Location(Medium.LOCAL, directory=config.EventsLocalDir)
    return found


def gcs_client(project: str | None) -> StorageClient:
    """A storage client with the ambient credentials (``STORAGE_EMULATOR_HOST`` honoured)."""
    try:
        return StorageClient(project=project or None)
    except auth_exceptions.DefaultCredentialsError as err:
        raise StoreError(f"no Google Cloud credentials for the events bucket: {err}") from err


def store_at(
    location: Location, instruments: Instruments | None = None, *, read_only: bool = False
) -> EventStore:
    """The event store at ``location``; ``read_only`` for the commands that only read (they
    never write, not even to quarantine a corrupt file: ``megamon/stores/readonly.py``)."""
    if location.medium is Medium.GCS:
        client = gcs_client(location.project)
        return GcsEventStore(
            client, location.bucket, location.path, instruments=instruments, read_only=read_only
        )
    if location.medium is Medium.LOCAL:
        return LocalEventStore(location.directory, instruments=instruments, read_only=read_only)
    return MemoryEventStore(instruments=instruments)


def objects_at(
    location: Location, instruments: Instruments | None = None
) -> tuple[ObjectBackend, str]:
    """The objects at a bucket or directory ``location``, read only, and the path inside
    it (the report reads ``reports/latest.json`` there)."""
    if location.medium is Medium.GCS:
        client = gcs_client(location.project)
        backend = GcsObjects(client, location.bucket, instruments=instruments or _quiet())
        return ReadOnlyObjects(backend), location.path
    if location.medium is Medium.LOCAL:
        return ReadOnlyObjects(LocalObjects(Path(location.directory), locking=False)), ""
    raise StoreError("an in-memory history keeps no objects to read back")


def _quiet() -> Instruments:
    return Instruments.unregistered()


def open_store(config: Config, instruments: Instruments | None = None) -> EventStore:
    """The event store ``config`` describes."""
    return store_at(history_location(config), instruments)
