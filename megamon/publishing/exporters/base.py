"""What an exporter is, and running them all so that one broken exporter stops no other.

Exporters raise ``MegamonError``s whose one-line message names their target (a bucket
object, a ConfigMap key, a stream); ``export_all`` is the boundary that catches them, logs one
line per failure and carries on with the next exporter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from megamon.domain.reports import Report
from megamon.errors import MegamonError

log = logging.getLogger(__name__)


class ExportError(MegamonError):
    """An exporter could not deliver the report; the message names the target."""


class Exporter(Protocol):
    """Delivers each report somewhere; ``name`` is its name in the ``Exporters`` key."""

    @property
    def name(self) -> str: ...

    def export(self, report: Report) -> None:
        """Deliver ``report``; a ``MegamonError`` naming the target when that fails."""
        ...


def export_all(exporters: Iterable[Exporter], report: Report) -> list[str]:
    """Run every exporter on ``report``; returns one ``"<name>: <reason>"`` per failure.

    An expected failure (a ``MegamonError``) is one warning line; anything else is a bug in
    the exporter and is logged with its traceback. Neither stops the exporters after it.
    """
    failures: list[str] = []
    for exporter in exporters:
        try:
            exporter.export(report)
        except MegamonError as err:
            log.warning("exporter %s failed: %s", exporter.name, err)
            failures.append(f"{exporter.name}: {err}")
        except Exception as err:  # the exporters' boundary: one bug must not stop the rest
            log.exception("exporter %s failed unexpectedly", exporter.name)
            failures.append(f"{exporter.name}: unexpected {type(err).__name__}: {err}")
    return failures
