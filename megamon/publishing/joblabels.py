"""Job labelling: mark each JobSet leader Job with the node pool it runs on
(``megamon.tbd/scheduled-node-pool``), when ``DisableNodePoolJobLabelling`` is false.

A merge patch of one label, never a read-modify-write of the Job; each (Job, pool) pair is
patched once per process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from megamon.domain import labels
from megamon.sources.kube.projections import NodeView, PodView

log = logging.getLogger(__name__)


class JobLabeler:
    def __init__(self, api: Any) -> None:
        self._batch = k8s.BatchV1Api(api)
        self._done: set[tuple[str, str, str]] = set()

    def label(self, pods: Mapping[str, PodView], nodes: Mapping[str, NodeView]) -> int:
        """Patch every leader Job not yet labelled with its pool; returns how many were."""
        nodes_by_name = {node.name: node for node in nodes.values()}
        patched = 0
        for pod in pods.values():
            node = nodes_by_name.get(pod.node_name)
            if node is None or not node.nodepool or not pod.job_name:
                continue
            target = (pod.namespace, pod.job_name, node.nodepool)
            if target in self._done:
                continue
            body = {"metadata": {"labels": {labels.SCHEDULED_NODE_POOL: node.nodepool}}}
            try:
                self._batch.patch_namespaced_job(pod.job_name, pod.namespace, body)
            except ApiException as err:
                log.warning(
                    "cannot label job %s/%s with node pool %s: HTTP %s %s",
                    pod.namespace,
                    pod.job_name,
                    node.nodepool,
                    err.status,
                    err.reason,
                )
                continue
            self._done.add(target)
            patched += 1
        return patched
