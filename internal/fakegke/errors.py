"""Google-style API errors for the fake GKE server.

Why: the real client turns a non-2xx reply into a ``google.api_core`` exception by reading
the HTTP status code and ``{"error": {"message": ...}}``; replying in exactly Google's error
shape keeps that code path (and the messages megamon logs) identical to production.
"""

from __future__ import annotations

from typing import Any

# HTTP status -> google.rpc.Code name, as Google's REST front end pairs them.
GOOGLE_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class ApiError(Exception):
    """An error the fake answers with; carries the HTTP code and Google's status name."""

    def __init__(self, code: int, message: str) -> None:
        if code not in GOOGLE_STATUS:
            raise ValueError(f"unsupported error code {code}; use one of {sorted(GOOGLE_STATUS)}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> str:
        """The google.rpc.Code name matching ``code`` (e.g. ``NOT_FOUND``)."""
        return GOOGLE_STATUS[self.code]

    def body(self) -> dict[str, Any]:
        """The JSON body Google's REST front end sends for this error."""
        return {"error": {"code": self.code, "message": self.message, "status": self.status}}


def not_found(resource: str) -> ApiError:
    """A 404 worded like GKE's own (``Not found: projects/p/.../nodePools/np.``)."""
    return ApiError(404, f"Not found: {resource}.")


def invalid_argument(message: str) -> ApiError:
    """A 400 for malformed admin input."""
    return ApiError(400, message)
