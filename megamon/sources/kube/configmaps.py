"""One key of one ConfigMap, read and written through the kubernetes client.

Used for the slice→owner map (which must survive restarts) and the report exporter. Writes
replace the whole key and create the ConfigMap when it is missing; a write that races with
another writer is retried from a fresh read, so it never fails on a stale resourceVersion.
Every call has a request timeout and fails with ``SourceError``, an unreachable API server
included (``megamon/sources/kube/calls.py``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from kubernetes import client as k8s

from megamon.config import ConfigMapRef
from megamon.errors import SourceError
from megamon.sources.kube.calls import REQUEST_TIMEOUT, ApiError, kube_call

NOT_FOUND = 404
CONFLICT = 409
_ATTEMPTS = 3


class ConfigMapKey:
    """The value stored under ``key`` in the ConfigMap ``ref``."""

    def __init__(self, api: Any, ref: ConfigMapRef, key: str) -> None:
        self._core = k8s.CoreV1Api(api)
        self._ref = ref
        self._key = key

    def describe(self) -> str:
        return f"configmap {self._ref.Namespace}/{self._ref.Name} key {self._key}"

    def _get(self) -> Any | None:
        try:
            return kube_call(
                f"{self.describe()}: read",
                lambda: self._core.read_namespaced_config_map(
                    self._ref.Name, self._ref.Namespace, _request_timeout=REQUEST_TIMEOUT
                ),
            )
        except ApiError as err:
            if err.status == NOT_FOUND:
                return None
            raise

    def read(self) -> str | None:
        """The value, or ``None`` when the ConfigMap or the key does not exist."""
        found = self._get()
        if found is None or not found.data:
            return None
        value = found.data.get(self._key)
        return str(value) if value is not None else None

    def write(self, value: str) -> None:
        """Set the value, creating the ConfigMap if needed."""
        for _ in range(_ATTEMPTS):
            found = self._get()
            try:
                kube_call(f"{self.describe()}: write", partial(self._put, found, value))
                return
            except ApiError as err:
                if err.status == CONFLICT:
                    continue  # someone else wrote (or created) it: read again
                raise
        raise SourceError(f"{self.describe()}: write kept conflicting with other writers")

    def _put(self, found: Any | None, value: str) -> None:
        if found is None:
            body = k8s.V1ConfigMap(
                metadata=k8s.V1ObjectMeta(name=self._ref.Name, namespace=self._ref.Namespace),
                data={self._key: value},
            )
            self._core.create_namespaced_config_map(
                self._ref.Namespace, body, _request_timeout=REQUEST_TIMEOUT
            )
        else:
            found.data = {**(found.data or {}), self._key: value}
            self._core.replace_namespaced_config_map(
                self._ref.Name, self._ref.Namespace, found, _request_timeout=REQUEST_TIMEOUT
            )
