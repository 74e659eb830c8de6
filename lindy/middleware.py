"""Request middleware of the core."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.datastructures import MultiValueDict

from . import json_input
from .api_errors import error_body
from .bounded import BadParameter


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


MESSAGES_EVENT = "lindy:messages"
_CLIENT_SIDE_NAVIGATION = ("HX-Redirect", "HX-Location", "HX-Refresh")


def htmx_messages(get_response):
    """An htmx request's messages (django.contrib.messages) travel in its own response, as an
    `HX-Trigger` event the page shows in its message area (static/js/messages.js), so none is
    left in the session to reappear on the next page (another decision, the Django admin).

    Left in the session: messages of a redirect (the request that follows it shows them), of a
    response that sends the browser elsewhere (HX-Redirect, HX-Location, HX-Refresh: that page
    shows them), and of a response whose template showed them already (a boosted full page).
    Must come after MessageMiddleware, whose response pass then saves what is left."""

    def middleware(request):
        response = get_response(request)
        if request.headers.get("HX-Request") != "true" or 300 <= response.status_code < 400:
            return response
        if any(header in response for header in _CLIENT_SIDE_NAVIGATION):
            return response
        storage = getattr(request, "_messages", None)
        if storage is None or storage.used:
            return response
        pending = [{"level": message.level_tag or "info", "text": str(message)} for message in storage]
        if not pending:
            return response
        triggers: dict = {}
        existing = response.get("HX-Trigger", "")
        if existing:
            try:
                parsed = json.loads(existing)
                triggers = parsed if isinstance(parsed, dict) else {}
            except ValueError:
                triggers = {name.strip(): None for name in existing.split(",") if name.strip()}
        triggers[MESSAGES_EVENT] = {"messages": pending}
        response["HX-Trigger"] = json.dumps(triggers)  # ASCII: json escapes the rest
        return response

    return middleware


def accepts_large_form(view):
    """Mark a view whose form may carry more than DATA_UPLOAD_MAX_MEMORY_SIZE (a long paste into
    an editor): `large_form_bodies` reads its body up to LARGE_FORM_MAX_BYTES, so the view can
    refuse the text itself, in its own form, with the text kept."""
    view.accepts_large_form = True
    return view


def large_form_bodies(get_response):
    """For a signed-in user's form POST to a view marked `accepts_large_form`, larger than
    DATA_UPLOAD_MAX_MEMORY_SIZE: the body is parsed here (up to LARGE_FORM_MAX_BYTES) rather than
    refused by Django with an error page that loses the text; beyond that bound, a 413 page that
    says so. Every other request keeps Django's bound."""

    def middleware(request):
        if request.method != "POST" or request.content_type != "application/x-www-form-urlencoded":
            return get_response(request)
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return get_response(request)
        if declared <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE or not request.user.is_authenticated:
            return get_response(request)
        try:
            view = resolve(request.path_info).func
        except Resolver404:
            return get_response(request)
        if not getattr(view, "accepts_large_form", False):
            return get_response(request)
        if declared > settings.LARGE_FORM_MAX_BYTES:
            return render(request, "lindy/too_large.html", {"size": declared, "limit": settings.LARGE_FORM_MAX_BYTES},
                          status=413)
        request._post = QueryDict(request.read(declared), encoding="utf-8")
        request._files = MultiValueDict()
        return get_response(request)

    return middleware


def bad_parameters(get_response):
    """A query parameter out of its range (lindy.bounded.BadParameter, raised by a view) is a 400
    naming it: in the API's error shape under /api/, as plain text elsewhere."""

    def middleware(request):
        return get_response(request)

    def process_exception(request, exception):
        if not isinstance(exception, BadParameter):
            return None
        if request.path.startswith("/api/"):
            return _refuse(400, str(exception))
        return HttpResponse(f"Bad request: {exception}", status=400, content_type="text/plain; charset=utf-8")

    middleware.process_exception = process_exception
    return middleware


def styled_error_pages(get_response):
    """With DEBUG on (the demo), a page that is not found or not allowed answers with the
    product's own 404 and 403 pages, as in production, not Django's technical page listing every
    URL pattern. The API keeps its JSON errors. Inside CommonMiddleware (a missing trailing slash
    still redirects) and after the user and messages are known (the page shows the menu)."""
    from django.core.exceptions import PermissionDenied
    from django.http import Http404
    from django.views import defaults

    def _styled(request) -> bool:
        return settings.DEBUG and not request.path_info.startswith("/api/")

    def middleware(request):
        if _styled(request):
            try:
                resolve(request.path_info)
            except Resolver404 as exc:
                return defaults.page_not_found(request, exc)
        return get_response(request)

    def process_exception(request, exception):
        if not _styled(request):
            return None
        if isinstance(exception, Http404):
            return defaults.page_not_found(request, exception)
        if isinstance(exception, PermissionDenied):
            return defaults.permission_denied(request, exception)
        return None

    middleware.process_exception = process_exception
    return middleware
