"""One Kubernetes API call, with megamon's error type whatever went wrong.

The client raises ``ApiException`` for an HTTP error, but an unreachable or hung API server
surfaces as ``urllib3`` errors (``MaxRetryError``, ``ReadTimeoutError``, …) or a plain
``OSError``. A caller that catches only the first lets the others escape its loop's cycle and
lose what else the cycle did, so every write megamon makes goes through ``kube_call``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from megamon.errors import SourceError

T = TypeVar("T")

REQUEST_TIMEOUT = (5.0, 15.0)
"""Seconds to connect and to read: a hung API server must not hold a cycle forever."""


class ApiError(SourceError):
    """The API server answered with an HTTP error; ``status`` says which."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def kube_call(what: str, call: Callable[[], T]) -> T:
    """``call()``; an HTTP error becomes ``ApiError``, a transport error ``SourceError``,
    both naming ``what`` was attempted."""
    try:
        return call()
    except ApiException as err:
        raise ApiError(f"{what}: HTTP {err.status} {err.reason}", int(err.status or 0)) from err
    except (HTTPError, OSError) as err:
        raise SourceError(f"{what}: the Kubernetes API is unreachable: {err}") from err
