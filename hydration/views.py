"""Hydration pages: sources and runs of each memory, Run now with progress, provenance, and
the Gmail connection. Every page works without JavaScript; htmx only polls a live run's
progress."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from google_workspace import oauth
from google_workspace import services as google_services
from google_workspace.errors import GoogleError
from google_workspace.models import GmailAccount
from memory import diffs
from memory import selectors as memory_selectors
from memory.models import FileSystem

from . import permissions, selectors, services
from .models import Run
from .sources import SOURCES

RUNS_PAGE_SIZE = 20
ITEMS_PAGE_SIZE = 50


def _memory_user(request):
    if not permissions.can_use_memory(request.user):
        raise Http404("Memory belongs to team members.")


def _fs(request, fs_id) -> FileSystem:
    _memory_user(request)
    return memory_selectors.filesystem_get(request.user, fs_id)


def _runnable(request, fs_id) -> FileSystem:
    fs = _fs(request, fs_id)
    if not permissions.can_run_hydration(request.user, fs):
        raise PermissionDenied("You may read this memory's runs but not run or configure it.")
    return fs


@login_required
def home(request):
    _memory_user(request)
    rows = []
    for fs in memory_selectors.filesystems_for(request.user):
        rows.append({"fs": fs, "last": selectors.last_run(fs), "can_run": permissions.can_run_hydration(request.user, fs),
                     "states": selectors.source_states(fs)})
    return render(request, "hydration/home.html", {"rows": rows})


@login_required
def filesystem(request, fs_id):
    fs = _fs(request, fs_id)
    states = selectors.source_states(fs)
    page = Paginator(selectors.runs_for(fs), RUNS_PAGE_SIZE).get_page(request.GET.get("page"))
    gmail_account = None
    if fs.kind == FileSystem.Kind.USER and fs.owner_id == request.user.pk:
        gmail_account = GmailAccount.objects.filter(user=request.user).first()
    context = {
        "fs": fs, "sources": selectors.source_rows(fs, states), "page": page,
        "can_run": permissions.can_run_hydration(request.user, fs), "active": selectors.active_run(fs),
        "gmail_account": gmail_account, "gmail_configured": oauth.configured(),
        "show_gmail": fs.kind == FileSystem.Kind.USER and fs.owner_id == request.user.pk,
    }
    if request.htmx and request.GET.get("page"):
        return render(request, "hydration/filesystem.html#runs", context)
    return render(request, "hydration/filesystem.html", context)


@login_required
@require_POST
def source_toggle(request, fs_id, source):
    fs = _runnable(request, fs_id)
    if source not in SOURCES or not SOURCES[source].applies_to(fs):
        raise Http404("No such source for this memory.")
    enabled = request.POST.get("enabled") == "on"
    services.source_set_enabled(filesystem=fs, source=source, enabled=enabled, actor=request.user)
    messages.success(request, f"{SOURCES[source].kind.title()} {'on' if enabled else 'off'} for {fs.title}.")
    return redirect("hydration:filesystem", fs.pk)


@login_required
@require_POST
def run_now(request, fs_id):
    fs = _runnable(request, fs_id)
    run, created = services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, user=request.user)
    if run.status == Run.Status.ENQUEUE_FAILED:
        messages.error(request, f"Run {run.pk} could not be queued: the task queue is unreachable. Try again "
                                "in a moment; it is also re-queued automatically once the queue is back.")
    elif created:
        messages.success(request, f"Run {run.pk} started for {fs.title}.")
    else:
        messages.info(request, f"Run {run.pk} is already in progress for {fs.title}.")
    return redirect("hydration:run", run.pk)


def _revision_changes(run: Run, style: str):
    revision = run.revision
    if revision is None:
        return []
    changes = list(revision.changes.all())
    for change in changes:
        change.diff = (diffs.side_by_side if style == "split" else diffs.unified)(change.before, change.after)
    return changes


LIVE_PARTS = ("live", "progress")  # "progress": the name older pages poll with


@login_required
def run_detail(request, run_id):
    """A run and everything it changed. While the run is active the page polls one partial
    holding every part that changes (status, sources, items, the revision and its diff); the
    partial of a finished run carries no trigger, so polling stops there."""
    _memory_user(request)
    run = selectors.run_get(request.user, run_id)
    style = "split" if request.GET.get("view") == "split" else "unified"
    items = Paginator(selectors.run_items(run), ITEMS_PAGE_SIZE).get_page(request.GET.get("page"))
    query = {"part": "live", "view": style}
    if items.number > 1:
        query["page"] = items.number
    context = {
        "run": run, "fs": run.filesystem, "facts": selectors.run_facts(run), "items": items,
        "changes": _revision_changes(run, style), "style": style,
        "file_sources": selectors.file_sources(run),
        "sources": [(SOURCES[k].kind, v) for k, v in (run.sources or {}).items() if k in SOURCES],
        "poll_url": f"{reverse('hydration:run', args=[run.pk])}?{urlencode(query)}",
    }
    if request.htmx and request.GET.get("part") in LIVE_PARTS:
        return render(request, "hydration/run.html#live", context)
    return render(request, "hydration/run.html", context)


@login_required
def revision_why(request, fs_id, revision_id):
    fs = _fs(request, fs_id)
    revision = memory_selectors.revision_get(fs, revision_id)
    run = selectors.run_for_revision(revision)
    context = {"fs": fs, "revision": revision, "run": run}
    if run is not None:
        context.update({"facts": selectors.run_facts(run), "file_sources": selectors.file_sources(run),
                        "items": selectors.run_items(run)})
    return render(request, "hydration/revision_why.html", context)


@login_required
def file_why(request, fs_id, path):
    fs = _fs(request, fs_id)
    file = memory_selectors.file_get(fs, path)
    lines = selectors.blame(fs, file)
    try:
        chosen = int(request.GET.get("line", 0))
    except ValueError:
        chosen = 0
    context = {"fs": fs, "file": file, "lines": lines, "chosen": chosen,
               "chosen_line": next((line for line in lines if line.number == chosen), None)}
    return render(request, "hydration/file_why.html", context)


# --- Gmail ------------------------------------------------------------------------------------

def _redirect_uri(request) -> str:
    return request.build_absolute_uri(reverse("hydration:gmail-callback"))


def _own_fs_url(user) -> str:
    fs = FileSystem.objects.filter(owner=user).first()
    return reverse("hydration:filesystem", args=[fs.pk]) if fs else reverse("hydration:home")


@login_required
@require_POST
def gmail_connect(request):
    if not permissions.can_connect_gmail(request.user):
        raise Http404("Memory belongs to team members.")
    if not oauth.configured():
        messages.error(request, "Gmail is not set up on this server (GMAIL_CLIENT_ID and GMAIL_CLIENT_SECRET).")
        return redirect(_own_fs_url(request.user))
    purpose = request.POST.get("purpose", "read")
    if purpose not in oauth.PURPOSES:
        return HttpResponseBadRequest("Unknown Google permission.")
    return redirect(google_services.gmail_connect_start(user=request.user, redirect_uri=_redirect_uri(request),
                                                 purpose=purpose))


@login_required
def gmail_callback(request):
    if not permissions.can_connect_gmail(request.user):
        raise Http404("Memory belongs to team members.")
    if request.GET.get("error"):
        messages.error(request, f"Gmail was not connected: {request.GET['error'][:100]}.")
        return redirect(_own_fs_url(request.user))
    try:
        account = google_services.gmail_account_connect(
            user=request.user, state=request.GET.get("state", ""), code=request.GET.get("code", ""),
            redirect_uri=_redirect_uri(request))
    except GoogleError as exc:
        messages.error(request, str(exc))
        return redirect(_own_fs_url(request.user))
    messages.success(request, f"Gmail connected ({account.email}).")
    return redirect(_own_fs_url(request.user))


@login_required
@require_POST
def gmail_disconnect(request):
    if not permissions.can_connect_gmail(request.user):
        raise Http404("Memory belongs to team members.")
    google_services.gmail_account_disconnect(user=request.user)
    messages.success(request, "Gmail disconnected: its tokens were deleted.")
    return redirect(_own_fs_url(request.user))


@login_required
@require_POST
def gmail_actions_off(request):
    """Turn off "let the assistant act in Gmail" (or calendar actions): back to recorded-only."""
    if not permissions.can_connect_gmail(request.user):
        raise Http404("Memory belongs to team members.")
    purpose = request.POST.get("purpose", "")
    if purpose not in ("gmail_actions", "calendar_actions"):
        return HttpResponseBadRequest("Unknown Google permission.")
    google_services.gmail_actions_turn_off(user=request.user, purpose=purpose)
    messages.success(request, "The assistant no longer acts there: its actions are recorded, not sent.")
    return redirect(_own_fs_url(request.user))
