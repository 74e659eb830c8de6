"""Core pages: the home page, tasks, meetings and the health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db import connection
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from . import permissions, selectors

PAGE_SIZE = 25


def _page(request, queryset):
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))


@login_required
def home(request):
    user = request.user
    context = {"memberships": selectors.memberships_of(user)}
    if permissions.can_use_workspace(user):
        context["recent_tasks"] = selectors.task_list(user)[:5]
        context["recent_meetings"] = selectors.meeting_list(user)[:5]
    return render(request, "lindy/home.html", context)


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
    return render(request, "lindy/task_detail.html", {"task": task, "events": task.events.all()})


@login_required
def meeting_list(request):
    _workspace_only(request)
    page = _page(request, selectors.meeting_list(request.user))
    template = "lindy/meetings.html#meeting-rows" if request.htmx else "lindy/meetings.html"
    return render(request, template, {"page": page})


@login_required
def meeting_detail(request, meeting_id: int):
    return render(request, "lindy/meeting_detail.html", {"meeting": selectors.meeting_detail(request.user, meeting_id)})


@require_GET
def healthz(request):
    """Liveness for load balancers and `make run`: database, cache and the last beat."""
    status = {"database": "ok", "cache": "ok", "last_beat": selectors.last_heartbeat()}
    try:
        connection.ensure_connection()
    except Exception as exc:  # report, don't raise: this page exists to say what is down
        status["database"] = f"error: {exc}"
    try:
        cache.set("lindy:healthz", 1, 5)
    except Exception as exc:
        status["cache"] = f"error: {exc}"
    healthy = status["database"] == "ok" and status["cache"] == "ok"
    return JsonResponse(status, status=200 if healthy else 503)
