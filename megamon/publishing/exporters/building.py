"""``build_exporters``: the exporters a configuration's ``Exporters`` key names.

The ``gcs`` exporter writes where ``megamon/stores/factory.py`` puts reports: beside the
history (the bucket, or ``EventsLocalDir`` without one), so a cluster without a bucket still
keeps its report archive; in simulation, in ``EventsLocalDir``.
"""

from __future__ import annotations

from typing import Any

from google.cloud.storage import Client as StorageClient

from megamon.config import (
    EXPORTER_CONFIGMAP,
    EXPORTER_GCS,
    EXPORTER_OTLP,
    EXPORTER_STDOUT,
    Config,
)
from megamon.errors import ConfigError
from megamon.publishing.exporters.archives import GcsReportExporter, LocalReportExporter
from megamon.publishing.exporters.base import Exporter
from megamon.publishing.exporters.configmap import ConfigMapExporter
from megamon.publishing.exporters.otlp import Collect, build_otlp_exporter
from megamon.publishing.exporters.streams import StdoutExporter
from megamon.stores.factory import Medium, gcs_client, reports_location
from megamon.telemetry import Instruments


def build_exporters(
    config: Config,
    *,
    api_client: Any = None,
    storage_client: StorageClient | None = None,
    instruments: Instruments | None = None,
    collect: Collect | None = None,
    version: str = "",
) -> list[Exporter]:
    """One exporter per name in ``config.Exporters``, in order (the configuration refuses a
    name listed twice).

    ``api_client`` (a ``kubernetes.client.ApiClient``) is required by ``configmap``;
    ``storage_client`` is built from the ambient credentials when ``gcs`` needs one;
    ``collect`` (the ``/metrics`` registry's) and megamon's ``version`` by ``otlp``.
    """
    exporters: list[Exporter] = []
    for name in config.Exporters:
        if name == EXPORTER_STDOUT:
            exporters.append(StdoutExporter())
        elif name == EXPORTER_CONFIGMAP:
            exporters.append(_configmap_exporter(config, api_client))
        elif name == EXPORTER_GCS:
            exporters.append(_report_exporter(config, storage_client, instruments))
        elif name == EXPORTER_OTLP:
            if collect is None:
                raise ConfigError(f"the {EXPORTER_OTLP} exporter needs the metrics registry")
            exporters.append(build_otlp_exporter(config, collect, version))
    return exporters


def _configmap_exporter(config: Config, api_client: Any) -> ConfigMapExporter:
    if api_client is None:
        raise ConfigError(f"the {EXPORTER_CONFIGMAP} exporter needs a Kubernetes API client")
    return ConfigMapExporter(api_client, config.ReportConfigMapRef)


def _report_exporter(
    config: Config, storage_client: StorageClient | None, instruments: Instruments | None
) -> GcsReportExporter | LocalReportExporter:
    location = reports_location(config)
    if location.medium is not Medium.GCS:
        return LocalReportExporter(location.directory)
    client = storage_client or gcs_client(location.project)
    return GcsReportExporter(client, location.bucket, location.path, instruments=instruments)
