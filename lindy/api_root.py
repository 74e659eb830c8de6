"""The JSON API root at /api/ (composition root): every app's router is mounted here, and every
error is answered in the one shape of lindy.api_errors."""

import logging

from django.core.exceptions import BadRequest, PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, UnreadablePostError
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from . import json_input
from .api_auth import AUTH
from .api_errors import error_body

logger = logging.getLogger(__name__)

class BoundedJsonParser(Parser):
    """Size and nesting are checked before json.loads (the middleware did too, for JSON content
    types; a body sent under another content type is still parsed as JSON by ninja)."""

    def parse_body(self, request):
        return json_input.loads(request.body)


api = NinjaAPI(
    parser=BoundedJsonParser(),
    title="Lindy API",
    version="1.0",
    description="The back office of the Lindy assistant. Authenticate with the browser session or `Authorization: Bearer <token>` (see `manage.py create_api_token`).",
    auth=AUTH,
    urls_namespace="api",
)


def error_response(request, status: int, message: str, details=None):
    return api.create_response(request, error_body(status, message, details), status=status)


@api.exception_handler(ValidationError)
def on_validation_error(request, exc):
    details = [
        {"loc": [str(part) for part in err.get("loc", [])], "msg": err.get("msg", ""), "type": err.get("type", "")}
        for err in exc.errors
    ]
    # Name the first field at fault in the message itself ("query.limit: Input should be less than or
    # equal to 100"), so a client sees what to fix without reading the details.
    first = details[0] if details else None
    message = "The request is not valid."
    if first:
        where = ".".join(first["loc"]) or "body"
        message = f"The request is not valid: {where}: {first['msg']}."
    return error_response(request, 422, message, details)


@api.exception_handler(AuthenticationError)
def on_auth_error(request, exc):
    return error_response(request, 401, "Authentication required: sign in or send a bearer token.")


@api.exception_handler(HttpError)
def on_http_error(request, exc):
    return error_response(request, exc.status_code, exc.message, getattr(exc, "details", None))


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return error_response(request, 404, str(exc) or "Not found.")


@api.exception_handler(PermissionDenied)
def on_forbidden(request, exc):
    return error_response(request, 403, str(exc) or "You may not do that.")


@api.exception_handler(RequestDataTooBig)
def on_too_big(request, exc):
    return error_response(request, 413, "The request body is too large.")


@api.exception_handler(MultiPartParserError)
@api.exception_handler(BadRequest)
@api.exception_handler(SuspiciousOperation)
@api.exception_handler(UnreadablePostError)
def on_unreadable_body(request, exc):
    # A body Django can't read as what its Content-Type says (a multipart body without a boundary,
    # a truncated upload): the client's fault, as Django's own views answer it.
    return error_response(request, 400, f"The request body can't be read as its Content-Type says: {exc}"[:300])


# Each app's ninja Router, mounted under /api/.
from agent.api import router as agent_router  # noqa: E402
from channels_app.api import router as channels_router  # noqa: E402
from drafting.api import router as drafting_router  # noqa: E402
from hydration.api import router as hydration_router  # noqa: E402
from memory.api import router as memory_router  # noqa: E402
from router.api import router as router_router  # noqa: E402
from validator.api import router as validator_router  # noqa: E402

from .api import router as core_router  # noqa: E402

api.add_router("", core_router)
api.add_router("/memory", memory_router)
api.add_router("/hydration", hydration_router)
api.add_router("/validator", validator_router)
api.add_router("/validator", agent_router)  # the outbox, at /api/validator/outbox as it always was
api.add_router("/router", router_router)
api.add_router("/channels", channels_router)
api.add_router("/drafting", drafting_router)
