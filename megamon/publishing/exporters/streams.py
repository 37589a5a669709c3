"""``StdoutExporter``: each report as one line of JSON on a stream, for log pipelines.

One line per report (JSON Lines) so that ``kubectl logs`` piped to ``jq`` and log agents see
whole reports; the line is written in one call and flushed, so a report is never left half
in a buffer when the process stops.
"""

from __future__ import annotations

import sys
from typing import TextIO

from megamon.codec import report as report_codec
from megamon.config import EXPORTER_STDOUT
from megamon.domain.reports import Report
from megamon.publishing.exporters.base import ExportError


class StdoutExporter:
    """Writes each report to ``stream`` (standard output by default) as one JSON line."""

    name = EXPORTER_STDOUT

    def __init__(self, stream: TextIO | None = None) -> None:
        """``None`` means ``sys.stdout`` at the time of each export (tests replace it)."""
        self._stream = stream

    def export(self, report: Report) -> None:
        stream = self._stream if self._stream is not None else sys.stdout
        line = report_codec.encode_report(report).decode() + "\n"
        try:
            stream.write(line)
            stream.flush()
        except (OSError, ValueError) as err:  # a closed pipe, a closed file, an encoding
            where = getattr(stream, "name", "stream")
            raise ExportError(f"{where}: cannot write the report: {err}") from err
