"""Channels JSON API: Slack channel memory switches, texting onboarding, channel health."""

from __future__ import annotations

from datetime import datetime

from django.http import Http404
from ninja import Field, Query, Router, Schema

from lindy.api_errors import ApiError
from lindy.pagination import PageIn

from . import permissions, selectors, services
from .models import RatioAlert, SlackChannel, SlackChannelShare

router = Router(tags=["channels"])


class SlackChannelOut(Schema):
    id: int
    team_id: int
    channel_id: str
    name: str
    is_private: bool
    active: bool
    use_for_team_memory: bool


class ShareOut(Schema):
    id: int
    channel: SlackChannelOut
    use_for_memory: bool


class ChannelsOut(Schema):
    """Each list is one page (`limit`, `offset`); the counts say how many there are in all."""
    team_channels: list[SlackChannelOut]
    shared_private_channels: list[ShareOut]
    team_channels_count: int
    shared_private_channels_count: int


class SwitchIn(Schema):
    enabled: bool


@router.get("/slack", response=ChannelsOut, summary="Slack channels you manage or share with the assistant")
def slack_channels(request, page: Query[PageIn]):
    user = request.user
    if not permissions.can_view_channels(user):
        raise Http404("No channels here.")
    team_channels = (SlackChannel.objects.filter(team_id__in=permissions.workspace_admin_team_ids(user))
                     .order_by("team_id", "name", "pk"))
    shares = selectors.private_shares_for(user)
    return {"team_channels": list(team_channels[page.slice]), "shared_private_channels": list(shares[page.slice]),
            "team_channels_count": team_channels.count(), "shared_private_channels_count": shares.count()}


@router.post("/slack/{channel_id}/team-memory", response=SlackChannelOut, summary="Team admins: feed team memory")
def team_memory(request, channel_id: int, payload: SwitchIn):
    channel = permissions.get_visible_or_404(
        SlackChannel.objects.filter(team_id__in=permissions.workspace_admin_team_ids(request.user)), pk=channel_id
    )
    try:
        return services.slack_team_memory_set(channel=channel, enabled=payload.enabled, actor=request.user)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


@router.post("/slack/shares/{share_id}/memory", response=ShareOut, summary="Feed your own memory from a private channel")
def private_memory(request, share_id: int, payload: SwitchIn):
    share = permissions.get_visible_or_404(
        SlackChannelShare.objects.filter(user=request.user).select_related("channel"), pk=share_id
    )
    return services.slack_private_memory_set(share=share, enabled=payload.enabled, actor=request.user)


class TextingOut(Schema):
    phone: str
    lindy_number: str | None
    connected: bool
    first_texted_at: datetime | None


class TextingIn(Schema):
    phone: str = Field(..., min_length=3, max_length=40)


def _texting_out(profile) -> dict:
    return {
        "phone": profile.phone, "lindy_number": profile.number.phone if profile.number_id else None,
        "connected": profile.first_texted_at is not None, "first_texted_at": profile.first_texted_at,
    }


@router.get("/texting", response=TextingOut, summary="Your phone and the Lindy number to text")
def texting(request):
    if not permissions.can_text_assistant(request.user):
        raise Http404("Texting belongs to team members.")
    profile = selectors.texting_profile(request.user)
    if profile is None:
        raise Http404("No phone registered yet.")
    return _texting_out(profile)


@router.post("/texting", response=TextingOut, summary="Register your phone; get the Lindy number to text")
def texting_register(request, payload: TextingIn):
    if not permissions.can_text_assistant(request.user):
        raise Http404("Texting belongs to team members.")
    try:
        services.profile_register(user=request.user, phone=payload.phone)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    profile = selectors.texting_profile(request.user)
    return _texting_out(profile)


class NumberHealthOut(Schema):
    number: str
    label: str
    kind: str
    sent: int
    received: int
    ratio: float
    fallbacks: int
    capped: int
    cap: int
    cap_used_pct: int
    level: str


class OverOut(Schema):
    number: str
    sent: int
    received: int
    ratio: float
    level: str


class HealthOut(Schema):
    """Each list is one page (`limit`, `offset`); the counts say how many there are in all."""
    warn: float
    critical: float
    today: list[NumberHealthOut]
    over_threshold_7d: list[OverOut]
    today_count: int
    over_threshold_7d_count: int


@router.get("/health", response=HealthOut, summary="Support: send/receive ratio per number (counts only)")
def health(request, page: Query[PageIn]):
    from django.conf import settings

    if not permissions.can_view_channel_health(request.user):
        raise Http404("No such page.")
    today = [
        {**{k: v for k, v in row.items() if k != "number"}, "number": row["number"].phone,
         "label": row["number"].label, "kind": row["number"].kind}
        for row in selectors.numbers_today(page=page.slice)
    ]
    over_all = selectors.numbers_over_threshold()
    over = [{**{k: v for k, v in row.items() if k != "number"}, "number": row["number"].phone}
            for row in over_all[page.slice]]
    return {"warn": settings.CHANNELS_RATIO_WARN, "critical": settings.CHANNELS_RATIO_CRITICAL,
            "today": today, "over_threshold_7d": over,
            "today_count": selectors.active_numbers().count(), "over_threshold_7d_count": len(over_all)}


class AlertOut(Schema):
    id: int
    number: str
    line: str
    day: str
    level: str
    ratio: float
    sent: int
    received: int
    threshold: float
    acknowledged_at: datetime | None
    acknowledge_note: str


class AcknowledgeIn(Schema):
    note: str = Field("", max_length=500, description="What was done about it, or why it can wait")


@router.post("/alerts/{alert_id}/acknowledge", response=AlertOut, summary="Support: acknowledge a ratio alert")
def alert_acknowledge(request, alert_id: int, payload: AcknowledgeIn | None = None):
    if not permissions.can_view_channel_health(request.user):
        raise Http404("No such alert.")
    alert = permissions.get_visible_or_404(RatioAlert.objects.select_related("number"), pk=alert_id)
    services.ratio_alert_acknowledge(alert=alert, user=request.user, note=payload.note if payload else "")
    return {"id": alert.pk, "number": alert.number.phone, "line": alert.number.line_name, "day": alert.day.isoformat(),
            "level": alert.level, "ratio": alert.ratio, "sent": alert.sent, "received": alert.received,
            "threshold": alert.threshold, "acknowledged_at": alert.acknowledged_at,
            "acknowledge_note": alert.acknowledge_note}
