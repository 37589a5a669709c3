"""Exporters: where each cycle's report goes besides ``/metrics`` (the ``Exporters`` key).

- ``stdout``: one JSON report per line, for ``kubectl logs`` and log pipelines;
- ``configmap``: key ``report`` of ``ReportConfigMapRef``, for in-cluster readers;
- ``gcs``: ``<event store>/reports/latest.json`` every cycle plus one archive per UTC hour,
  in the event store's location (the bucket, or ``EventsLocalDir`` without one).

Exporters only read the report and format it with ``megamon.codec.report`` (the Go
megamon's report JSON). ``export_all`` runs them all and isolates their failures, so a
broken ConfigMap never keeps a report out of GCS.
"""

from megamon.publishing.exporters.archives import (
    GcsReportExporter,
    LocalReportExporter,
    ObjectReportExporter,
    archive_name,
    hour_prefix,
)
from megamon.publishing.exporters.base import Exporter, ExportError, export_all
from megamon.publishing.exporters.building import build_exporters
from megamon.publishing.exporters.configmap import REPORT_KEY, ConfigMapExporter
from megamon.publishing.exporters.streams import StdoutExporter

__all__ = [
    "REPORT_KEY",
    "ConfigMapExporter",
    "ExportError",
    "Exporter",
    "GcsReportExporter",
    "LocalReportExporter",
    "ObjectReportExporter",
    "StdoutExporter",
    "archive_name",
    "build_exporters",
    "export_all",
    "hour_prefix",
]
