"""Job labelling: mark each JobSet leader Job with the node pool it runs on
(``megamon.tbd/scheduled-node-pool``), when ``DisableNodePoolJobLabelling`` is false.

An exporter of the report's scheduling map (node pool → leader Job), which the observers have
already joined from pods and nodes: labelling only acts on it. A merge patch of one label,
never a read-modify-write of the Job; each (Job, pool) pair is patched once per process. A
Job that cannot be patched (the API server unreachable, the Job gone) is retried with the next
report; the failures of one report are raised together, so ``export_all`` logs them as this
exporter's and the other exporters still run.
"""

from __future__ import annotations

import logging
from typing import Any

from kubernetes import client as k8s

from megamon.domain import labels
from megamon.domain.reports import Report
from megamon.errors import SourceError
from megamon.publishing.exporters.base import ExportError
from megamon.sources.kube.calls import REQUEST_TIMEOUT, kube_call

log = logging.getLogger(__name__)

EXPORTER_JOB_LABELS = "job-labels"


class JobLabeler:
    """Patches the leader Job of each scheduled node pool with the pool's name."""

    name = EXPORTER_JOB_LABELS

    def __init__(self, api: Any) -> None:
        self._batch = k8s.BatchV1Api(api)
        self._done: set[tuple[str, str, str]] = set()

    def export(self, report: Report) -> None:
        """Patch every scheduled Job not yet labelled with its pool."""
        failures = []
        for pool, job in sorted(report.scheduling.items()):
            target = (job.namespace, job.job_name, pool)
            if not job.job_name or target in self._done:
                continue
            try:
                self._patch(job.namespace, job.job_name, pool)
            except SourceError as err:
                failures.append(str(err))
                continue
            self._done.add(target)
        if failures:
            raise ExportError(f"{len(failures)} job(s) not labelled: " + "; ".join(failures))

    def _patch(self, namespace: str, job: str, pool: str) -> None:
        body = {"metadata": {"labels": {labels.SCHEDULED_NODE_POOL: pool}}}
        kube_call(
            f"label job {namespace}/{job} with node pool {pool}",
            lambda: self._batch.patch_namespaced_job(
                job, namespace, body, _request_timeout=REQUEST_TIMEOUT
            ),
        )
