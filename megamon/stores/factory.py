"""Which event store a configuration means: memory in simulation, GCS when a bucket is
named, otherwise the local directory (the embedded default)."""

from __future__ import annotations

from google.auth import exceptions as auth_exceptions
from google.cloud.storage import Client as StorageClient

from megamon.config import Config
from megamon.errors import StoreError
from megamon.stores.base import EventStore
from megamon.stores.gcs import GcsEventStore
from megamon.stores.local import LocalEventStore
from megamon.stores.memory import MemoryEventStore
from megamon.telemetry import Instruments


def gcs_client(project: str | None) -> StorageClient:
    """A storage client with the ambient credentials (``STORAGE_EMULATOR_HOST`` honoured)."""
    try:
        return StorageClient(project=project or None)
    except auth_exceptions.DefaultCredentialsError as err:
        raise StoreError(f"no Google Cloud credentials for the events bucket: {err}") from err


def open_store(config: Config, instruments: Instruments | None = None) -> EventStore:
    """The event store ``config`` describes."""
    if config.EnableSimulation:
        return MemoryEventStore(instruments=instruments)
    if config.EventsBucketName:
        client = gcs_client(config.GKE.ProjectID)
        return GcsEventStore(
            client, config.EventsBucketName, config.events_path, instruments=instruments
        )
    return LocalEventStore(config.EventsLocalDir, instruments=instruments)
