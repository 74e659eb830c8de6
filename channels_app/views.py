"""Pages (channels, texting onboarding, channel health) and the inbound endpoints
(/slack/*, the iMessage and SMS webhooks)."""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from slack_sdk.signature import SignatureVerifier

from lindy import json_input
from lindy.bounded import clamped_choice, clamped_int
from lindy.models import Team

from . import permissions, selectors, services, slack_app
from .models import RatioAlert, SlackChannel, SlackChannelShare, SlackInstallation
from .providers import sms, webhook_schemes
from .services import alerts
from .slack_stores import callback_state, install_started_by

logger = logging.getLogger(__name__)

TRUE_VALUES = {"1", "true", "on", "yes"}


# --- Slack ---------------------------------------------------------------------------------------

def _slack_closed(status: int = 404) -> HttpResponse:
    return HttpResponse("Slack is not configured on this server.", status=status, content_type="text/plain")


def _slack_not_configured_page(request) -> HttpResponse:
    """A person following an Install link gets a page that says why, not a plain-text 404."""
    return render(request, "channels_app/slack_not_configured.html", status=404)


@login_required
@require_GET
def slack_install(request):
    """Starts Slack's OAuth flow for a team the signed-in user administers."""
    if not slack_app.configured():
        return _slack_not_configured_page(request)
    admin_teams = permissions.workspace_admin_team_ids(request.user)
    try:
        team_id = int(request.GET.get("team") or (sorted(admin_teams)[0] if admin_teams else 0))
    except ValueError:
        raise Http404("No such team.") from None
    if team_id not in admin_teams:
        raise Http404("Only a team admin can connect Slack for the team.")
    with install_started_by(team_id=team_id, user_id=request.user.pk):
        return slack_app.handler().handle(request)


@require_GET
def slack_oauth_redirect(request):
    if not slack_app.configured():
        return _slack_closed()
    with callback_state(request.GET.get("state")):
        return slack_app.handler().handle(request)


# Slack retries a delivery 3 times (api.slack.com/apis/events-api#retries); the bound leaves room.
SLACK_MAX_RETRY_NUM = 100
SLACK_RETRY_REASONS = frozenset({"", "http_timeout", "too_many_redirects", "ssl_error", "http_error",
                                 "connection_failed", "unknown_error"})


# What Slack sends: a Unix time in ASCII digits and "v0=" with a hex digest. slack-sdk's verifier
# calls int() on the timestamp (a 500 for "abc") and compare_digest on the signature (a 500 for
# non-ASCII text): anything else is answered 401 before it gets there.
_SLACK_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SLACK_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


def _slack_headers_well_formed(request) -> bool:
    timestamp = request.headers.get("X-Slack-Request-Timestamp") or ""
    signature = request.headers.get("X-Slack-Signature") or ""
    return bool(_SLACK_TIMESTAMP.fullmatch(timestamp) and _SLACK_SIGNATURE.fullmatch(signature))


@csrf_exempt
@require_POST
def slack_events(request):
    if not slack_app.configured():
        return HttpResponse("Slack is not configured.", status=401, content_type="text/plain")
    if not _slack_headers_well_formed(request):
        return HttpResponse("invalid or missing signature", status=401, content_type="text/plain")
    # Interactive payloads come form-encoded with the JSON in `payload` (JSON bodies were
    # checked by lindy.middleware): the same bound before slack-bolt parses it.
    payload = None
    if request.content_type == "application/x-www-form-urlencoded":
        request.body  # noqa: B018 - read first: slack-bolt reads the raw body after the form is parsed
        payload = request.POST.get("payload")
    if payload:
        try:
            json_input.check(payload)
        except json_input.BodyRefused as exc:
            return HttpResponse(str(exc), status=exc.status, content_type="text/plain")
    if request.content_type == "application/json":
        return _slack_event_callback(request) or slack_app.handler().handle(request)
    return slack_app.handler().handle(request)


def _slack_event_callback(request) -> HttpResponse | None:
    """An Events API delivery: verified, stored and answered at once (Slack wants its 200 within
    3 seconds; a Celery task processes it). None for anything else (url_verification...): slack-bolt
    answers those as before."""
    raw = request.body
    if not SignatureVerifier(settings.SLACK_SIGNING_SECRET).is_valid_request(raw, dict(request.headers)):
        return HttpResponse("invalid or stale signature", status=401, content_type="text/plain")
    try:
        payload = json_input.loads(raw)
    except json_input.BodyRefused as exc:
        return HttpResponse(str(exc), status=exc.status, content_type="text/plain")
    except (ValueError, UnicodeDecodeError):
        return HttpResponse("body is not JSON", status=400, content_type="text/plain")
    if not isinstance(payload, dict) or payload.get("type") != "event_callback":
        return None
    event = payload.get("event")
    if not isinstance(event, dict) or event.get("type") not in slack_app.HANDLED_EVENTS:
        return HttpResponse(status=200)  # nothing we act on (channel messages are read from the history)
    # Unsigned headers: a replayed delivery may carry anything, and Slack would only retry an
    # error, so both are clamped rather than refused (lindy.bounded).
    retry_num = clamped_int(request.headers.get("X-Slack-Retry-Num"), low=0, high=SLACK_MAX_RETRY_NUM, default=0)
    retry_reason = clamped_choice(request.headers.get("X-Slack-Retry-Reason") or "", allowed=SLACK_RETRY_REASONS,
                                  other="other")
    try:
        services.slack_event_receive(body=raw.decode(), payload=payload, retry_num=retry_num,
                                     retry_reason=retry_reason)
    except ValueError as exc:
        return HttpResponse(f"malformed event: {exc}", status=400, content_type="text/plain")
    return HttpResponse(status=200)


# --- iMessage and SMS webhooks -------------------------------------------------------------------

@csrf_exempt
@require_POST
def imessage_webhook(request):
    raw = request.body
    if not webhook_schemes.verify_request(raw_body=raw, headers=request.headers):
        return JsonResponse({"error": "invalid or stale signature"}, status=401)
    try:
        payload = json_input.loads(raw)
    except json_input.BodyRefused as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"error": "body is not JSON"}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"error": "body must be a JSON object"}, status=400)
    try:
        outcome = services.linq_event_process(payload=payload)
    except (ValueError, TypeError, AttributeError) as exc:
        return JsonResponse({"error": f"malformed event: {exc}"}, status=400)
    return JsonResponse({"status": outcome})


def _twilio_url(request) -> str:
    if settings.TWILIO_WEBHOOK_PUBLIC_BASE:
        return settings.TWILIO_WEBHOOK_PUBLIC_BASE.rstrip("/") + request.get_full_path()
    return request.build_absolute_uri()


TWIML_EMPTY = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'


@csrf_exempt
@require_POST
def sms_webhook(request):
    params = {key: request.POST.get(key) for key in request.POST}
    if not sms.verify_webhook(url=_twilio_url(request), params=params,
                              signature=request.headers.get("X-Twilio-Signature")):
        # 401 like every webhook here: the request did not prove who sent it.
        return HttpResponse("invalid or missing signature", status=401, content_type="text/plain")
    try:
        services.twilio_inbound_process(params=params)
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    return HttpResponse(TWIML_EMPTY, content_type="text/xml")


# --- Pages ---------------------------------------------------------------------------------------

def _require(allowed: bool, what: str) -> None:
    if not allowed:
        raise Http404(what)


@login_required
@require_GET
def channel_list(request):
    user = request.user
    _require(permissions.can_view_channels(user), "No channels here.")
    admin_teams = Team.objects.filter(pk__in=permissions.workspace_admin_team_ids(user)).order_by("name")
    context = {
        "team_sections": [{"team": team, "channels": selectors.team_channels(team),
                           "workspaces": _workspaces(team)} for team in admin_teams],
        "shares": selectors.private_shares_for(user),
        "profile": selectors.texting_profile(user) if permissions.can_text_assistant(user) else None,
        "can_text": permissions.can_text_assistant(user),
        "slack_installed": SlackInstallation.objects.filter(team__memberships__user=user).exists(),
        "can_view_health": permissions.can_view_channel_health(user),
        "slack_configured": slack_app.configured(),
    }
    return render(request, "channels_app/channels.html", context)


def _workspaces(team) -> dict[str, list[str]]:
    """The Slack workspaces installed for `team`, by name, the one Slack state every page shows: split
    by whether the assistant still holds their bot token (without one it reads nothing there)."""
    names: dict[str, set[str]] = {"connected": set(), "tokenless": set()}
    for installation in SlackInstallation.objects.filter(team=team).only("slack_team_name", "bot_token"):
        names["connected" if installation.bot_token else "tokenless"].add(
            installation.slack_team_name or "a Slack workspace")
    return {state: sorted(found) for state, found in names.items()}


def _enabled(request) -> bool:
    return (request.POST.get("enabled") or "").lower() in TRUE_VALUES


@login_required
@require_POST
def team_memory_toggle(request, channel_id: int):
    channel = permissions.get_visible_or_404(
        SlackChannel.objects.filter(team_id__in=permissions.workspace_admin_team_ids(request.user)), pk=channel_id
    )
    try:
        services.slack_team_memory_set(channel=channel, enabled=_enabled(request), actor=request.user)
    except ValueError as exc:
        # Said where the person acted: with htmx the row stays as it was and the message comes
        # with the response (lindy.middleware.htmx_messages); a 4xx would swap nothing and say nothing.
        messages.error(request, str(exc))
        channel.refresh_from_db()
        if request.htmx:
            return render(request, "channels_app/channels.html#team-channel-row", {"channel": channel})
        return redirect("channels")
    messages.success(request, f"#{channel.name}: team memory {'on' if channel.use_for_team_memory else 'off'}.")
    if request.htmx:
        return render(request, "channels_app/channels.html#team-channel-row", {"channel": channel})
    return redirect("channels")


@login_required
@require_POST
def private_memory_toggle(request, share_id: int):
    share = permissions.get_visible_or_404(
        SlackChannelShare.objects.filter(user=request.user).select_related("channel"), pk=share_id
    )
    services.slack_private_memory_set(share=share, enabled=_enabled(request), actor=request.user)
    messages.success(request, f"#{share.channel.name}: your memory {'on' if share.use_for_memory else 'off'}.")
    if request.htmx:
        return render(request, "channels_app/channels.html#share-row", {"share": share})
    return redirect("channels")


@login_required
@require_http_methods(["GET", "POST"])
def texting(request):
    """Onboarding: the user gives their phone, gets the number to text and a contact card."""
    user = request.user
    _require(permissions.can_text_assistant(user), "Texting belongs to team members.")
    error = ""
    if request.method == "POST":
        try:
            services.profile_register(user=user, phone=request.POST.get("phone", ""))
        except ValueError as exc:
            error = str(exc)
        else:
            messages.success(request, "Saved. Now text the number below to start.")
            return redirect("channels-texting")
    profile = selectors.texting_profile(user)
    status = 400 if error else 200
    phone = request.POST.get("phone", "") if error else (profile.phone if profile else "")
    return render(request, "channels_app/texting.html",
                  {"profile": profile, "error": error, "phone": phone}, status=status)


def vcard_text(phone: str, name: str = "Lindy") -> str:
    lines = [
        "BEGIN:VCARD", "VERSION:3.0", f"FN:{name}", f"N:;{name};;;", "ORG:Lindy",
        f"TEL;TYPE=CELL,VOICE,pref:{phone}", "NOTE:Your Lindy assistant. Text this number to talk to it.",
        "END:VCARD",
    ]
    return "\r\n".join(lines) + "\r\n"


@login_required
@require_GET
def texting_vcard(request):
    profile = selectors.texting_profile(request.user)
    if profile is None or profile.number is None:
        raise Http404("Add your phone first to get Lindy's number.")
    response = HttpResponse(vcard_text(profile.number.phone), content_type="text/vcard; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="lindy.vcf"'
    return response


GRID_DAYS = (7, 14)
GRID_LINES_PER_PAGE = 20


@login_required
@require_GET
def channel_health(request):
    """Support staff, across teams: what to act on first (the open alerts, each with its next
    step), then each line's ratio per day, the charts and today. Counts and ratios only, never a
    message body. A bounded number of queries however many lines and alerts there are."""
    _require(permissions.can_view_channel_health(request.user), "No such page.")
    days = clamped_choice(request.GET.get("days") or "", allowed=frozenset(str(d) for d in GRID_DAYS), other="14")
    lines = Paginator(selectors.lines_ordered(), GRID_LINES_PER_PAGE).get_page(request.GET.get("lines"))
    open_alerts, open_count = selectors.open_alerts()
    for alert in open_alerts:
        alert.next_step = alerts.next_step(alert.level)
    context = {
        "open_alerts": open_alerts, "open_count": open_count,
        "grid": selectors.line_day_grid(list(lines.object_list), days=int(days)), "lines": lines,
        "grid_days": int(days), "grid_day_choices": GRID_DAYS,
        "chart": selectors.ratio_series(days=14),
        "today_rows": selectors.numbers_today(),
        "over": selectors.numbers_over_threshold(days=7),
        "alerts": selectors.acknowledged_alerts(),
        "warn": settings.CHANNELS_RATIO_WARN,
        "critical": settings.CHANNELS_RATIO_CRITICAL,
        "note_max": alerts.MAX_NOTE,
    }
    return render(request, "channels_app/health.html", context)


OPT_OUTS_PAGE_SIZE = 50


@login_required
@require_GET
def opt_outs(request):
    """Support staff: who texted STOP (or START again) on which channel, and when."""
    _require(permissions.can_view_channel_health(request.user), "No such page.")
    page = Paginator(selectors.opt_outs(), OPT_OUTS_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "channels_app/opt_outs.html", {"page": page})


@login_required
@require_POST
def alert_acknowledge(request, alert_id: int):
    """Support staff: I have seen this alert, and here is what I did (an escalation asks again)."""
    _require(permissions.can_view_channel_health(request.user), "No such page.")
    alert = permissions.get_visible_or_404(
        RatioAlert.objects.select_related("number", "acknowledged_by"), pk=alert_id
    )
    name = f"{alert.number.line_name} on {alert.day:%b} {alert.day.day}"
    try:
        done = services.ratio_alert_acknowledge(alert=alert, user=request.user, note=request.POST.get("note", ""))
    except ValueError as exc:
        if request.htmx:
            return HttpResponse(str(exc), status=400, content_type="text/plain")
        messages.error(request, f"{name}: not acknowledged. {exc}")
        return redirect(reverse("channel-health") + f"#alert-{alert.pk}")
    alert.next_step = alerts.next_step(alert.level)
    if request.htmx:
        return render(request, "channels_app/health.html#open-alert",
                      {"alert": alert, "note_max": alerts.MAX_NOTE, "just_done": done})
    if done:
        messages.success(request, f"Acknowledged the {alert.get_level_display().lower()} alert on {name}.")
    else:
        messages.info(request, f"The alert on {name} was already acknowledged.")
    return redirect(reverse("channel-health") + "#open-alerts")
