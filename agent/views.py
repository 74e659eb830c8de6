"""The outbox page: everything the assistant executed for the user."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from lindy.permissions import team_ids

from . import permissions, selectors, tools
from .models import OutboxEntry

PAGE_SIZE = 20
OUTBOX_FILTERS = {"all": None, **{value: value for value in OutboxEntry.Status.values}}


@login_required
def outbox(request):
    """Everything the assistant executed for the user, through which adapter, and whether it
    really left the system: actions with no live integration are recorded here, not sent."""
    if not permissions.can_view_outbox(request.user):
        raise Http404("The outbox belongs to team members.")
    show = request.GET.get("show", "all")
    if show not in OUTBOX_FILTERS:
        show = "all"
    page = Paginator(selectors.outbox_list(request.user, OUTBOX_FILTERS[show]), PAGE_SIZE).get_page(
        request.GET.get("page"))
    template = "agent/outbox.html#outbox-rows" if request.htmx else "agent/outbox.html"
    return render(request, template, {
        "page": page, "show": show, "filters": OUTBOX_FILTERS, "integrations": tools.integrations(team_ids(request.user), request.user),
    })
