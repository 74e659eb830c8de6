"""Request middleware of the core."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse

from . import json_input
from .api_errors import error_body


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or content_type.endswith("+json")


def _refuse(status: int, message: str) -> JsonResponse:
    return JsonResponse(error_body(status, message), status=status)


def bounded_json_bodies(get_response):
    """Every JSON body is checked for size (413) and nesting depth (400) before any view, parser
    or signature check reads it (lindy.json_input), in the API's one error shape."""

    def middleware(request):
        if request.method in ("GET", "HEAD", "OPTIONS") or not _is_json(request.content_type or ""):
            return get_response(request)
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _refuse(400, "The Content-Length header is not a number.")
        if declared > json_input.max_bytes():
            return _refuse(413, f"The JSON body is larger than {json_input.max_bytes():,} bytes.")
        try:
            json_input.check(request.body)
        except RequestDataTooBig:
            return _refuse(413, "The request body is too large.")
        except json_input.BodyRefused as exc:
            return _refuse(exc.status, str(exc))
        return get_response(request)

    return middleware
