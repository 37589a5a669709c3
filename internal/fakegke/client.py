"""The real GKE client, wired to a fake GKE endpoint.

Why: the client must be built in one specific way to reach the fake over plain HTTP without
looking for Google credentials; keeping that recipe in one function avoids subtle copies
(``api_endpoint`` must carry the ``http://`` scheme, otherwise the REST transport prepends
``https://``; anonymous credentials keep google-auth from searching for ADC).

Kept apart from ``server`` so the server stays standard-library only.
"""

from __future__ import annotations

from google.auth.credentials import AnonymousCredentials
from google.cloud.container_v1 import ClusterManagerClient


def rest_client(endpoint: str) -> ClusterManagerClient:
    """A ``ClusterManagerClient`` using the REST transport against ``endpoint``."""
    return ClusterManagerClient(
        transport="rest",
        client_options={"api_endpoint": endpoint},
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
