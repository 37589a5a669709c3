"""The Kubernetes emulator and a client configured from the kubeconfig it writes."""

from internal.fakekube.fixtures import fake_kube, kube_api_client

__all__ = ["fake_kube", "kube_api_client"]
