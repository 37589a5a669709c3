"""fakekube: an honest, in-process emulator of the Kubernetes API for megamon's tests.

megamon talks to GKE clusters only through the official `kubernetes` python client. Mocking
that client would test our assumptions about it; this package instead serves the real HTTP API
on 127.0.0.1 (CRUD, status subresources, selectors, paginated lists, watches with bookmarks
and 410s, TokenReview/SubjectAccessReview, fault injection, restarts) so the real client, with
a real kubeconfig, exercises the same code paths it does against GKE. It is sized for fleet
scale (65k nodes): objects are immutable dicts, serialized with orjson, listed in pages.

Served: nodes, pods, configmaps (v1); jobs (batch/v1); leases (coordination.k8s.io/v1);
jobsets (jobset.x-k8s.io/v1alpha2); leaderworkersets (leaderworkerset.x-k8s.io/v1);
slices (accelerator.gke.io/v1beta1, cluster-scoped); trainjobs (trainer.kubeflow.org/v1alpha1);
workloads (kueue.x-k8s.io/v1beta1); tokenreviews; subjectaccessreviews; and
customresourcedefinitions (apiextensions.k8s.io/v1): creating one serves its resource, one per
served version, with a status subresource when it declares one; deleting it stops serving it.
"""

from internal.fakekube.auth import AccessRequest, Identity
from internal.fakekube.errors import ApiError
from internal.fakekube.fakekube import FakeKube
from internal.fakekube.faults import Fault

__all__ = ["AccessRequest", "ApiError", "FakeKube", "Fault", "Identity"]
