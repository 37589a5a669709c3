"""The ``gcs`` exporter: ``reports/latest.json`` every cycle plus an hourly archive.

Layout, under the event store's location (``gs://<bucket>/<EventsBucketPath>``, or
``EventsLocalDir`` when no bucket is named)::

    reports/latest.json                 the latest report, replaced every cycle
    reports/YYYY/MM/DD/HHMMSSZ.json     the first report of each UTC hour

**Archive rule.** The archive of an hour is the first report exported in that hour, named
for its ``generated_at`` (UTC). Before archiving in an hour it has not archived yet, the
exporter lists ``reports/YYYY/MM/DD/HH``; an object there means the hour is done (by an
earlier run of this process or by another replica), so a restart within an hour writes no
second archive. The hour is then remembered, so steady state costs one upload per cycle and
one listing per hour. Archives are created with ``if_generation_match=0`` and never
replaced. A report whose ``latest.json`` upload fails is not archived; the next cycle's is.

Both backends are the event store's object backends (``megamon.stores``): GCS uploads carry a
generation precondition, which makes the library's retries safe, with per-call timeouts and
an overall deadline; local writes are atomic (temporary file, fsync, rename).
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path

from google.api_core.retry import Retry
from google.cloud.storage import Client as StorageClient
from google.cloud.storage.retry import DEFAULT_RETRY

from megamon.codec import report as report_codec
from megamon.config import EXPORTER_GCS
from megamon.domain.reports import Report
from megamon.domain.timestamps import NANOS_PER_SECOND
from megamon.errors import Conflict, StoreError
from megamon.stores.base import ObjectBackend
from megamon.stores.gcs import GcsObjects
from megamon.stores.local import LocalObjects
from megamon.telemetry import Instruments

REPORTS_DIR = "reports"
LATEST_NAME = "latest.json"
ARCHIVE_SUFFIX = "Z.json"
_HOUR_FORMAT = "%Y/%m/%d/%H"
_SECOND_OF_HOUR_FORMAT = "%M%S"
_REPLACE_ATTEMPTS = 3

REPORT_TIMEOUT = (5.0, 10.0)
"""Seconds to connect and to wait for each read of one call."""
REPORT_DEADLINE = 10.0
"""Seconds one upload may take, retries included: the next cycle brings a newer report, so
retrying an old one for long only holds up the aggregation loop."""


def _utc(generated_at: int) -> datetime:
    return datetime.fromtimestamp(generated_at // NANOS_PER_SECOND, UTC)


def hour_prefix(generated_at: int) -> str:
    """``reports/YYYY/MM/DD/HH``: the prefix every archive of that UTC hour starts with."""
    return f"{REPORTS_DIR}/{_utc(generated_at).strftime(_HOUR_FORMAT)}"


def archive_name(generated_at: int) -> str:
    """``reports/YYYY/MM/DD/HHMMSSZ.json`` for a report generated at ``generated_at`` (ns)."""
    seconds = _utc(generated_at).strftime(_SECOND_OF_HOUR_FORMAT)
    return f"{hour_prefix(generated_at)}{seconds}{ARCHIVE_SUFFIX}"


class ObjectReportExporter:
    """The report layout over an object backend rooted at ``path``.

    Not thread-safe: one aggregation loop exports one report at a time.
    """

    name = EXPORTER_GCS

    def __init__(self, backend: ObjectBackend, path: str = "") -> None:
        self._backend = backend
        self._path = path.strip("/")
        self._latest_generation: int | None = None
        self._archived_hour: str | None = None

    def _name(self, relative: str) -> str:
        return f"{self._path}/{relative}" if self._path else relative

    def describe(self) -> str:
        return self._backend.describe(self._name(REPORTS_DIR))

    def export(self, report: Report) -> None:
        data = report_codec.encode_report(report)
        self._replace(self._name(f"{REPORTS_DIR}/{LATEST_NAME}"), data)
        self._archive(report.generated_at, data)

    def _replace(self, name: str, data: bytes) -> None:
        """Overwrite ``name``, compare-and-swap against the generation last written or seen."""
        for _ in range(_REPLACE_ATTEMPTS):
            if self._latest_generation is None:
                self._latest_generation = self._backend.generation(name) or 0
            try:
                self._latest_generation = self._backend.upload(name, data, self._latest_generation)
            except Conflict:
                self._latest_generation = None  # written elsewhere (or a retry landed): re-stat
            else:
                return
        raise StoreError(f"{self._backend.describe(name)} kept changing while being replaced")

    def _archive(self, generated_at: int, data: bytes) -> None:
        """Archive the report if its UTC hour has no archive yet (see the module docstring)."""
        hour = self._name(hour_prefix(generated_at))
        if hour == self._archived_hour:
            return
        if not self._backend.list(hour):
            # Conflict: another replica archived a report of this very second.
            with contextlib.suppress(Conflict):
                self._backend.upload(self._name(archive_name(generated_at)), data, 0)
        self._archived_hour = hour


class GcsReportExporter(ObjectReportExporter):
    """Reports at ``gs://<bucket>/<path>/reports/``."""

    def __init__(
        self,
        client: StorageClient,
        bucket: str,
        path: str,
        *,
        instruments: Instruments | None = None,
        timeout: tuple[float, float] = REPORT_TIMEOUT,
        deadline: float = REPORT_DEADLINE,
        retry: Retry = DEFAULT_RETRY,
    ) -> None:
        """``retry`` says which errors to retry and how to back off (the library's policy by
        default); ``deadline`` bounds the retries of one call."""
        objects = GcsObjects(
            client,
            bucket,
            instruments=instruments or Instruments.unregistered(),
            timeout=timeout,
            deadline=deadline,
            retry=retry,
        )
        super().__init__(objects, path)


class LocalReportExporter(ObjectReportExporter):
    """Reports at ``<directory>/reports/``, written atomically; ``directory`` is the local
    event store's (``EventsLocalDir``)."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__(LocalObjects(Path(directory)))
