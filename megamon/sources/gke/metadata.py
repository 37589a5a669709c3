"""The GKE cluster megamon runs in, from the GCE metadata server, for config that leaves the
project, location or cluster name out. ``GCE_METADATA_HOST`` points elsewhere (tests)."""

from __future__ import annotations

import os

import requests

from megamon.config import GKEConfig
from megamon.errors import SourceError

METADATA_HOST_ENV = "GCE_METADATA_HOST"
DEFAULT_METADATA_HOST = "metadata.google.internal"
_PATHS = {
    "ProjectID": "project/project-id",
    "ClusterLocation": "instance/attributes/cluster-location",
    "ClusterName": "instance/attributes/cluster-name",
}


def _fetch(host: str, path: str, timeout: float) -> str:
    url = f"http://{host}/computeMetadata/v1/{path}"
    try:
        response = requests.get(url, headers={"Metadata-Flavor": "Google"}, timeout=timeout)
        response.raise_for_status()
    except requests.RequestException as err:
        raise SourceError(f"metadata server {url}: {err}") from err
    return response.text.strip()


def resolve(gke: GKEConfig, timeout: float = 3.0) -> GKEConfig:
    """``gke`` with its empty project, location and cluster name filled in."""
    missing = {key: path for key, path in _PATHS.items() if not getattr(gke, key)}
    if not missing:
        return gke
    host = os.environ.get(METADATA_HOST_ENV, DEFAULT_METADATA_HOST)
    found = {}
    for key, path in missing.items():
        try:
            found[key] = _fetch(host, path, timeout)
        except SourceError as err:
            raise SourceError(f"GKE.{key} is not configured and {err}") from err
    return gke.model_copy(update=found)
