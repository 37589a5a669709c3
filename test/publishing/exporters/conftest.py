"""Fixtures for the exporter tests: the Kubernetes API emulator and a client bound to it.

The GCS fixtures (``gcs_emulator``, ``gcs_bucket``, ``gcs_client``, ``gcs_proxy``) come from
the root conftest's ``internal.gcsemu.fixtures`` plugin.
"""

from internal.fakekube.fixtures import fake_kube, kube_api_client

__all__ = ["fake_kube", "kube_api_client"]
