"""``ConfigMapExporter``: the latest report under key ``report`` of ``ReportConfigMapRef``.

In-cluster readers (dashboards, other controllers) get the report without bucket credentials.
The ConfigMap is created on first export and replaced afterwards (``ConfigMapKey``); a report
too large for a ConfigMap is refused with a message that says so, rather than the API
server's generic 422.
"""

from __future__ import annotations

from typing import Any

from megamon.codec import report as report_codec
from megamon.config import EXPORTER_CONFIGMAP, ConfigMapRef
from megamon.domain.reports import Report
from megamon.publishing.exporters.base import ExportError
from megamon.sources.kube.configmaps import ConfigMapKey

REPORT_KEY = "report"
CONFIGMAP_MAX_BYTES = 1024 * 1024
"""Kubernetes refuses a ConfigMap whose data exceeds 1 MiB."""


class ConfigMapExporter:
    """Writes each report's JSON to key ``report`` of the ConfigMap ``ref``."""

    name = EXPORTER_CONFIGMAP

    def __init__(self, api_client: Any, ref: ConfigMapRef) -> None:
        """``api_client`` is a ``kubernetes.client.ApiClient``."""
        self._key = ConfigMapKey(api_client, ref, REPORT_KEY)

    def export(self, report: Report) -> None:
        data = report_codec.encode_report(report)
        if len(data) > CONFIGMAP_MAX_BYTES:
            raise ExportError(
                f"{self._key.describe()}: the report is {len(data)} bytes, more than a "
                f"ConfigMap holds ({CONFIGMAP_MAX_BYTES} bytes)"
            )
        self._key.write(data.decode())  # a SourceError naming the key, reachable or not
