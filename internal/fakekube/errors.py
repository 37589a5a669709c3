"""API errors shaped like the real API server's `kind: Status` failure bodies.

Clients (and megamon) branch on `code` and `reason`, and log `message`; the python client turns
the body into `ApiException.body`. Building every error here keeps the wording and the
`details` block identical to what kube-apiserver sends, so code tested against the emulator
parses real errors too.
"""

from __future__ import annotations

from typing import Any

from internal.fakekube.resources import ResourceType

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A failed API call; `status()` is the JSON body the server sends."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        continue_token: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else REASONS.get(code, "")
        self.details = details
        self.continue_token = continue_token

    def status(self) -> dict[str, Any]:
        """The `kind: Status` body, in the field order the API server uses."""
        metadata: dict[str, Any] = {}
        if self.continue_token is not None:
            metadata["continue"] = self.continue_token
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": metadata,
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, f'{rt.qualified} "{name}" not found', details=_details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        f'{rt.qualified} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(rt, name),
    )


def conflict(rt: ResourceType, name: str, why: str | None = None) -> ApiError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}',
        reason="Conflict",
        details=_details(rt, name),
    )


def invalid(rt: ResourceType, name: str, field: str, problem: str) -> ApiError:
    details = _details(rt, name)
    details["causes"] = [{"reason": "FieldValueInvalid", "message": problem, "field": field}]
    return ApiError(422, f'{rt.kind} "{name}" is invalid: {field}: {problem}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def route_not_found() -> ApiError:
    return ApiError(404, "the server could not find the requested resource", details={})


def too_old(requested: int, oldest: int) -> ApiError:
    """The 410 a watch or list gets when its resourceVersion fell out of the history."""
    return ApiError(410, f"too old resource version: {requested} ({oldest})", reason="Expired")


def too_large(requested: int, current: int) -> ApiError:
    """What the API server answers for a resourceVersion it has not reached yet."""
    return ApiError(
        504,
        f"Timeout: Too large resource version: {requested}, current: {current}",
        reason="Timeout",
        details={"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large"}]},
    )


def continue_expired(continue_token: str) -> ApiError:
    return ApiError(
        410,
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter, or use the continue token "
        "in this response to retrieve the remainder of the results. Continuing with the "
        "provided token results in an inconsistent list - objects that were created, modified, "
        "or deleted between the time the first chunk was returned and now may show up in the "
        "list.",
        reason="Expired",
        continue_token=continue_token,
    )


def for_status(code: int, message: str | None = None, retry_after: int | None = None) -> ApiError:
    """A generic error for an HTTP status, as fault injection produces."""
    reason = REASONS.get(code, "")
    text = message or f"injected fault ({code} {reason})"
    return ApiError(code, text, reason=reason, retry_after=retry_after)


def success_status(rt: ResourceType, name: str, uid: str) -> dict[str, Any]:
    """The `Status` a DELETE of an immediately removed object answers with."""
    details = _details(rt, name)
    details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
