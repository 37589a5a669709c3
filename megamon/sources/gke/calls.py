"""What a Google API call of the GKE source retries and what counts as its failure, shared by
the node pool lister (Container API) and the workload policy reader (Compute API): both go
through google-api-core's retry, over HTTP, and fail the same ways."""

from __future__ import annotations

from typing import Final

import requests
from google.api_core import exceptions as api_exceptions
from google.api_core import retry as api_retry

RETRYABLE: Final = api_retry.if_exception_type(
    api_exceptions.ServiceUnavailable,
    api_exceptions.TooManyRequests,
    api_exceptions.InternalServerError,
    api_exceptions.BadGateway,
    api_exceptions.GatewayTimeout,
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
)
"""Transient answers and transport errors: asked again, with backoff, within the deadline."""

FAILURES: Final = (api_exceptions.GoogleAPIError, requests.exceptions.RequestException)
"""Every error a call can end with once its retries are spent."""
