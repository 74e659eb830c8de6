"""Core pages: the home page, tasks, meetings, the audit log, liveness and readiness."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db import DatabaseError
from django.http import Http404, HttpResponseServerError, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.templatetags.static import static
from django.views.decorators.http import require_GET

from . import home as home_tiles
from . import outages, permissions, queue, readiness, selectors, services, task_annotations

logger = logging.getLogger(__name__)

PAGE_SIZE = 25


def _page(request, queryset):
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))


@login_required
def home(request):
    """What needs this person now: the tiles each app registered for their role (lindy/home.py)."""
    user = request.user
    context = {"memberships": selectors.memberships_of(user), "tiles": home_tiles.tiles_for(user),
               "checklist": home_tiles.checklist_for(user)}
    if permissions.can_use_workspace(user):
        context["recent_tasks"] = selectors.recent_tasks(user, 5)
        context["recent_meetings"] = selectors.recent_meetings(user, 5)
    return render(request, "lindy/home.html", context)


@login_required
def profile(request):
    """The signed-in person's own profile: the display name the product shows for them."""
    user = request.user
    error, name = "", user.name
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            services.user_display_name_set(user=user, name=name)
        except ValueError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Saved. You appear as {user.display_name}.")
            return redirect("profile")
    return render(request, "lindy/profile.html", {"error": error, "name": name}, status=400 if error else 200)


def _workspace_only(request):
    if not permissions.can_use_workspace(request.user):
        raise Http404("Tasks and meetings belong to team members.")


@login_required
def task_list(request):
    _workspace_only(request)
    page = _page(request, selectors.task_list(request.user))
    template = "lindy/tasks.html#task-rows" if request.htmx else "lindy/tasks.html"
    return render(request, template, {"page": page})


@login_required
def task_detail(request, task_id: int):
    task = selectors.task_detail(request.user, task_id)
    return render(request, "lindy/task_detail.html", {
        "task": task, "events": task.events.all(), "annotations": task_annotations.for_task(request.user, task)})


@login_required
def meeting_list(request):
    _workspace_only(request)
    page = _page(request, selectors.meeting_list(request.user))
    template = "lindy/meetings.html#meeting-rows" if request.htmx else "lindy/meetings.html"
    return render(request, template, {"page": page})


@login_required
@require_GET
def audit_log(request):
    """Who changed what, with each field before and after (lindy.audit)."""
    if not permissions.can_view_audit(request.user):
        raise Http404("The audit log belongs to team admins.")
    page = _page(request, selectors.audit_entries(request.user))
    template = "lindy/audit.html#audit-rows" if request.htmx else "lindy/audit.html"
    return render(request, template, {"page": page})


@login_required
def meeting_detail(request, meeting_id: int):
    return render(request, "lindy/meeting_detail.html", {"meeting": selectors.meeting_detail(request.user, meeting_id)})


def _check(part: str, probe, errors: tuple[type[BaseException], ...]) -> str:
    try:
        probe()
    except errors as exc:  # report, don't raise: this page exists to say what is down
        logger.warning("readyz: %s is down (%s: %s)", part, type(exc).__name__, exc)
        # Only our own message is shown: a driver's may name hosts and users.
        return f"error: {type(exc).__name__}" + (f": {exc}" if isinstance(exc, readiness.NotMigrated) else "")
    return "ok"


def _last_beat() -> str | None:
    try:
        return selectors.last_heartbeat()
    except outages.CACHE_ERRORS:
        return None


@require_GET
def healthz(request):
    """Liveness, for a process supervisor: this process answers requests. It asks nothing of the
    database, the cache or the broker, so an outage of theirs never gets a healthy process killed."""
    return JsonResponse({"status": "alive"})


@require_GET
def readyz(request):
    """Readiness, for a load balancer: 200 when this process can serve (the database answers with
    every migration applied, the cache and the broker answer), else 503 naming the parts that don't
    ("failing"). Always JSON, never the error page."""
    status: dict = {
        "database": _check("database", readiness.database_ready, (DatabaseError, readiness.NotMigrated)),
        "cache": _check("cache", lambda: cache.set("lindy:readyz", 1, 5), outages.CACHE_ERRORS),
        "broker": _check("broker", queue.broker_check, outages.BROKER_ERRORS),
    }
    status["failing"] = [part for part, state in status.items() if state != "ok"]
    status["last_beat"] = _last_beat() if status["cache"] == "ok" else None
    return JsonResponse(status, status=503 if status["failing"] else 200)


@require_GET
def favicon(request):
    """Browsers ask /favicon.ico of every site whatever the page links: the static icon."""
    return redirect(static("favicon.svg"), permanent=True)


def server_error(request, template_name: str = "500.html"):
    """The 500 page, rendered from a static template without the request or context processors
    (the database, the session or a context processor may be what failed)."""
    try:
        body = loader.get_template(template_name).render()
    except Exception:  # noqa: BLE001 (the last resort must answer whatever broke)
        logger.exception("The 500 page itself failed to render")
        body = "<!doctype html><title>Server error</title><h1>Something went wrong</h1>"
    return HttpResponseServerError(body)
