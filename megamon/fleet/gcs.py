"""The cache's view of a Cloud Storage bucket (``megamon.fleet.cache.Objects``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from google.api_core import exceptions as api_exceptions
from google.cloud.storage import Client

from megamon.errors import StoreError
from megamon.fleet.cache import ObjectInfo


class GcsObjects:
    """Listing (with generations) and generation-pinned downloads of one bucket."""

    def __init__(self, client: Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def describe(self, name: str) -> str:
        return f"gs://{self._bucket}/{name}"

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        try:
            for blob in self._client.list_blobs(self._bucket, prefix=prefix):
                yield ObjectInfo(blob.name, int(blob.generation), int(blob.size or 0))
        except api_exceptions.GoogleAPIError as err:
            raise StoreError(f"listing {self.describe(prefix)}: {err}") from err

    def download(self, name: str, generation: int, path: Path) -> None:
        blob = self._client.bucket(self._bucket).blob(name, generation=generation)
        try:
            blob.download_to_filename(str(path))
        except api_exceptions.GoogleAPIError as err:
            raise StoreError(f"downloading {self.describe(name)}#{generation}: {err}") from err
