"""The API's one error shape, a leaf every app's API imports (the API root mounts the apps, so
they cannot import it): {"error": {"status": int, "message": str, "details": [...]?}}."""

from __future__ import annotations

from ninja.errors import HttpError


class ApiError(HttpError):
    """A 4xx with optional structured details (e.g. the verifier's violations)."""

    def __init__(self, status_code: int, message: str, details=None):
        super().__init__(status_code, message)
        self.details = details


def error_body(status: int, message: str, details=None) -> dict:
    body: dict = {"error": {"status": status, "message": message}}
    if details is not None:
        body["error"]["details"] = details
    return body
