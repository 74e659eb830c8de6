"""The failure pages: the list of groups, and a group's page (the latest example's log beside the
code of its frames, the analyst's triage, the report to copy or file). Members get 403; support
staff the list's counts only; a team admin the groups that touched their teams."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from lindy import failures as core_failures
from router import gateway

from .. import permissions
from ..models import FailureGroup
from . import code, github, log, record, report, selectors, triage

PAGE_SIZE = 25


def _viewer(request):
    if not permissions.can_view_failures(request.user):
        raise PermissionDenied("The failure groups are for staff, team admins (their teams) and support (counts).")


@login_required
def failures_page(request):
    _viewer(request)
    user = request.user
    groups = permissions.visible_failure_groups(user)
    status = request.GET.get("status", "")
    if status and status not in FailureGroup.Status.values:
        return HttpResponseBadRequest(f"Unknown status {status!r}.")
    if status:
        groups = groups.filter(status=status)
    page = Paginator(groups.order_by("-last_seen", "-pk"), PAGE_SIZE).get_page(request.GET.get("page"))
    rows = selectors.group_rows(FailureGroup.objects.filter(pk__in=[g.pk for g in page]).order_by("-last_seen", "-pk"),
                                permissions.visible_failure_events(user))
    return render(request, "analyst/failures.html", {
        "rows": rows, "page": page, "counts_only": permissions.failures_counts_only(user), "status": status,
        "statuses": FailureGroup.Status.choices,
    })


def _group_context(request, group_id: int) -> dict:
    _viewer(request)
    user = request.user
    if permissions.failures_counts_only(user):
        raise PermissionDenied("Support staff see the failure groups' counts only.")
    group = get_object_or_404(permissions.visible_failure_groups(user), pk=group_id)
    events = permissions.visible_failure_events(user).filter(group=group)
    example = events.order_by("-created_at", "-pk").first()
    if example is None:
        raise Http404("No such failure group.")
    readable = permissions.failure_log_readable(user, example)
    example = selectors.example_for(user, example)
    example_log = log.example_log(example) if readable else None
    frames = code.product_frames_with_code(example.frames)
    stored = group.triage or {}
    example_id = stored.get("example_id")
    triage_example = group.events.filter(pk=int(example_id)).first() if isinstance(example_id, int) else None
    triage_shown = stored if triage_example is not None and permissions.failure_log_readable(user, triage_example) \
        else ({} if not stored else None)
    figures = selectors.group_figures(events)
    title, body = report.issue_markdown(
        group=group, example=example, frames=frames,
        steps=log.repro_steps(example_log) if example_log is not None else None,
        triage=triage_shown, users=figures["users"], teams=figures["teams"])
    return {
        "group": group, "example": example, "readable": readable, "log": example_log, "frames": frames,
        "triage": triage_shown, "figures": figures, "issue_title": title, "issue_body": body,
        "running_version": core_failures.product_version(), "can_manage": permissions.can_manage_failures(user),
        "github": github.configured(), "offline": gateway.offline_mode(), "statuses": FailureGroup.Status.choices,
        "task_readable": readable and example.task_id is not None,
    }


@login_required
def failure_page(request, group_id: int):
    return render(request, "analyst/failure.html", _group_context(request, group_id))


@login_required
def failure_issue(request, group_id: int):
    """Copy as issue: the report as markdown."""
    context = _group_context(request, group_id)
    return HttpResponse(f"# {context['issue_title']}\n\n{context['issue_body']}\n",
                        content_type="text/markdown; charset=utf-8")


def _manager(request, group_id: int) -> FailureGroup:
    _viewer(request)
    if not permissions.can_manage_failures(request.user):
        raise PermissionDenied("Changing, triaging and filing failure groups is staff's work.")
    return get_object_or_404(FailureGroup, pk=group_id)


@login_required
@require_POST
def failure_status(request, group_id: int):
    group = _manager(request, group_id)
    status = request.POST.get("status", "")
    if status not in FailureGroup.Status.values:
        return HttpResponseBadRequest(f"Unknown status {status!r}: one of {', '.join(FailureGroup.Status.values)}.")
    record.group_status_set(group=group, status=status)
    messages.success(request, f"Failure group #{group.pk} is now {group.get_status_display().lower()}.")
    return redirect("analyst:failure", group_id=group.pk)


@login_required
@require_POST
def failure_triage(request, group_id: int):
    group = _manager(request, group_id)
    result = triage.group_triage(group=group)
    if result.get("error"):
        messages.error(request, result["error"])
    return redirect("analyst:failure", group_id=group.pk)


@login_required
@require_POST
def failure_file(request, group_id: int):
    group = _manager(request, group_id)
    context = _group_context(request, group_id)
    try:
        url = github.issue_file(group=group, title=context["issue_title"], body=context["issue_body"])
    except github.FilingError as exc:
        messages.error(request, str(exc))
        return redirect("analyst:failure", group_id=group.pk)
    messages.success(request, f"Filed: {url}")
    return redirect("analyst:failure", group_id=group.pk)
