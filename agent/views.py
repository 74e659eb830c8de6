"""The outbox page: everything the assistant executed for the user."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from lindy.permissions import team_ids

from . import permissions, resend, selectors, tools
from .models import OutboxEntry

PAGE_SIZE = 20
CHANNEL_WORDS = {"sms": "by SMS", "imessage": "by iMessage"}
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
    for entry in page:
        # A message that did not reach the user offers the other channel, once.
        entry.resend_channel = CHANNEL_WORDS[resend.other_channel(entry)] if resend.resendable(entry) else ""
        entry.resent_as = (entry.response or {}).get("resent_as")
    template = "agent/outbox.html#outbox-rows" if request.htmx else "agent/outbox.html"
    return render(request, template, {
        "page": page, "show": show, "filters": OUTBOX_FILTERS, "integrations": tools.integrations(team_ids(request.user), request.user),
    })


@login_required
@require_POST
def outbox_resend(request, entry_id: int):
    """A message that did not reach the user, sent again over the other channel; the outcome is
    said at the top of the outbox."""
    if not permissions.can_view_outbox(request.user):
        raise Http404("The outbox belongs to team members.")
    try:
        entry = resend.user_message_resend(entry_id=entry_id, user=request.user)
    except OutboxEntry.DoesNotExist:
        raise Http404("No such message to you.") from None
    except resend.NotResendable as exc:
        messages.error(request, str(exc))
    else:
        how = CHANNEL_WORDS["sms" if entry.tool == resend.SMS_TOOL else "imessage"]
        if entry.status == OutboxEntry.Status.SENT:
            messages.success(request, f"Sent again {how}.")
        else:
            messages.error(request, f"Sending it {how} failed too: {entry.error}")
    return redirect("outbox")
