"""Reads of the channels app. The Slack hydration source reads memory_feeds_for_* (lindy.seams)."""

from __future__ import annotations

import math
from datetime import date, timedelta

from django.conf import settings
from django.db.models import Case, Count, IntegerField, QuerySet, Value, When
from django.utils import timezone

from lindy.seams import SlackMemoryChannel

from .images import Photo, photo_of
from .models import (
    InboundAttachment,
    InboundMessage,
    NumberDay,
    OptOut,
    RatioAlert,
    SendingNumber,
    SlackChannel,
    SlackChannelShare,
    TextingProfile,
    ratio_of,
)
from .services.pool import today


def memory_channels_for_team(team) -> QuerySet[SlackChannel]:
    """Public channels the bot is in that the team's admins switched on for team memory."""
    return SlackChannel.objects.filter(team=team, active=True, is_private=False, use_for_team_memory=True)


def memory_channels_for_user(user) -> QuerySet[SlackChannel]:
    """Private channels the user shares with the bot and switched on for their own memory."""
    return SlackChannel.objects.filter(
        active=True, is_private=True, shares__user=user, shares__use_for_memory=True,
        team__memberships__user=user,
    ).distinct()


def _rows(channels) -> list[SlackChannel]:
    return list(channels.select_related("installation").order_by("channel_id"))


def _feeds(rows: list[SlackChannel], members: dict[int, dict[str, int]]) -> list[SlackMemoryChannel]:
    return [SlackMemoryChannel(channel_id=c.channel_id, name=c.name, slack_team_id=c.slack_team_id,
                               installation_id=c.installation_id,
                               bot_token=c.installation.bot_token if c.installation else "",
                               members=members.get(c.pk, {}))
            for c in rows]


def memory_feeds_for_team(team) -> list[SlackMemoryChannel]:
    """What hydration reads for a team's memory (registered in lindy.seams by apps.py). A team
    memory's messages speak for the team: no members needed."""
    return _feeds(_rows(memory_channels_for_team(team)), {})


def memory_feeds_for_user(user) -> list[SlackMemoryChannel]:
    """What hydration reads for a user's memory, with who shares each channel (whose words)."""
    rows = _rows(memory_channels_for_user(user))
    if not rows:  # most people share none: one query, not two
        return []
    members: dict[int, dict[str, int]] = {}
    for channel_id, slack_id, user_id in (SlackChannelShare.objects.filter(channel__in=[c.pk for c in rows])
                                          .exclude(slack_user_id="").values_list("channel_id", "slack_user_id", "user_id")):
        members.setdefault(channel_id, {})[slack_id] = user_id
    return _feeds(rows, members)


def team_channels(team) -> QuerySet[SlackChannel]:
    """What a team admin manages: the team's channels (private ones listed, not switchable)."""
    return SlackChannel.objects.filter(team=team).order_by("-active", "is_private", "name")


def private_shares_for(user) -> QuerySet[SlackChannelShare]:
    return (
        SlackChannelShare.objects.filter(user=user, channel__is_private=True, channel__team__memberships__user=user)
        .select_related("channel", "channel__team").order_by("-channel__active", "channel__name")
    )


def has_texted(user) -> bool:
    """The first-minute step "text your number" is done once a text from the user was received."""
    return InboundMessage.objects.filter(profile__user=user).exists()


def assistant_in_slack_channel(user) -> bool:
    """The step "add the assistant to a Slack channel" is done once the assistant is in a channel
    of one of the user's teams (it joins only channels someone added it to)."""
    return SlackChannel.objects.filter(active=True, team__memberships__user=user).exists()


def texting_profile(user) -> TextingProfile | None:
    return TextingProfile.objects.select_related("number").filter(user=user).first()


def _json_ratio(value: float):
    return None if math.isinf(value) or math.isnan(value) else value


def ratio_series(*, days: int = 14, end: date | None = None) -> dict:
    """Per line and day: sent, received, ratio, fallbacks. Counts only, never a message body."""
    end = end or today()
    start = end - timedelta(days=days - 1)
    labels = [(start + timedelta(days=i)) for i in range(days)]
    numbers = list(SendingNumber.objects.filter(active=True))
    rows = {
        (r.number_id, r.day): r for r in NumberDay.objects.filter(day__gte=start, day__lte=end, number__in=numbers)
    }
    series = []
    for number in numbers:
        points = [rows.get((number.pk, d)) for d in labels]
        series.append({
            "number": number.phone, "label": number.line_name, "kind": number.kind,
            "sent": [p.sent if p else 0 for p in points],
            "received": [p.received if p else 0 for p in points],
            "ratio": [_json_ratio(p.ratio) if p else None for p in points],
            "fallbacks": [p.fallbacks if p else 0 for p in points],
        })
    return {"labels": [d.isoformat() for d in labels], "series": series}


def ratio_level(ratio: float) -> str:
    """"critical", "warn" or "" for a send/receive ratio, against the configured thresholds."""
    if ratio > settings.CHANNELS_RATIO_CRITICAL:
        return "critical"
    if ratio > settings.CHANNELS_RATIO_WARN:
        return "warn"
    return ""


def lines_ordered() -> QuerySet[SendingNumber]:
    """The active lines in the order support reads them (a page of them is sliced from this)."""
    return SendingNumber.objects.filter(active=True).order_by("kind", "phone", "pk")


def line_day_grid(numbers: list[SendingNumber], *, days: int, end: date | None = None) -> dict:
    """Lines × days: each cell's sent, received, ratio, level and the line-day's alert (if any).
    Two queries whatever the number of lines: callers pass one page of lines."""
    end = end or today()
    labels = [end - timedelta(days=days - 1 - i) for i in range(days)]
    ids = [number.pk for number in numbers]
    rows = {(r.number_id, r.day): r for r in NumberDay.objects.filter(number_id__in=ids, day__gte=labels[0],
                                                                       day__lte=end)}
    alerted = {(number_id, day): (level, acknowledged is not None) for number_id, day, level, acknowledged in
               RatioAlert.objects.filter(number_id__in=ids, day__gte=labels[0], day__lte=end)
               .values_list("number_id", "day", "level", "acknowledged_at")}
    grid = []
    for number in numbers:
        cells = []
        for day in labels:
            row = rows.get((number.pk, day))
            sent, received = (row.sent, row.received) if row else (0, 0)
            ratio = ratio_of(sent, received)
            alert = alerted.get((number.pk, day))
            cells.append({"day": day, "sent": sent, "received": received, "ratio": ratio if row else None,
                          "level": ratio_level(ratio) if row else "", "alert_level": alert[0] if alert else "",
                          "alert_open": bool(alert and not alert[1])})
        grid.append({"number": number, "cells": cells})
    return {"days": labels, "rows": grid}


OPEN_ALERTS_LIMIT = 50


def open_alerts(limit: int = OPEN_ALERTS_LIMIT) -> tuple[list[RatioAlert], int]:
    """The alerts nobody acknowledged yet, critical first, then the newest day: at most `limit`
    of them, and how many there are."""
    pending = RatioAlert.objects.filter(acknowledged_at__isnull=True)
    rank = Case(When(level=RatioAlert.Level.CRITICAL, then=Value(0)), default=Value(1), output_field=IntegerField())
    rows: list[RatioAlert] = list(pending.select_related("number")
                                  .order_by(rank, "-day", "-created_at", "-pk")[:limit])
    count = len(rows) if len(rows) < limit else pending.count()
    return rows, count


def acknowledged_alerts(limit: int = 20) -> QuerySet[RatioAlert]:
    return (RatioAlert.objects.filter(acknowledged_at__isnull=False).select_related("number", "acknowledged_by")
            .order_by("-acknowledged_at", "-pk")[:limit])


def active_numbers() -> QuerySet[SendingNumber]:
    return SendingNumber.objects.filter(active=True)


def numbers_today(*, page: slice | None = None) -> list[dict]:
    """Every active line (or one page of them) with today's traffic, cap use and its level."""
    day = today()
    ordered = active_numbers().annotate(user_count=Count("profiles")).order_by("kind", "phone", "pk")
    numbers = list(ordered if page is None else ordered[page])
    rows = {r.number_id: r for r in NumberDay.objects.filter(day=day, number__in=[n.pk for n in numbers])}
    result = []
    for number in numbers:
        row = rows.get(number.pk)
        sent, received = (row.sent, row.received) if row else (0, 0)
        ratio = ratio_of(sent, received)
        level = ratio_level(ratio)
        result.append({
            "number": number, "sent": sent, "received": received, "ratio": ratio,
            "fallbacks": row.fallbacks if row else 0, "capped": row.capped if row else 0,
            "cap": number.daily_cap, "cap_used_pct": round(100 * sent / max(number.daily_cap, 1)),
            "level": level, "users": number.user_count,
        })
    return result


def numbers_over_threshold(*, days: int = 7) -> list[dict]:
    """Lines whose ratio over the last `days` days is above the warning threshold, worst first."""
    since = today() - timedelta(days=days - 1)
    totals: dict[int, list[int]] = {}
    for number_id, sent, received in NumberDay.objects.filter(day__gte=since, number__active=True).values_list(
        "number_id", "sent", "received"
    ):
        total = totals.setdefault(number_id, [0, 0])
        total[0] += sent
        total[1] += received
    numbers = SendingNumber.objects.in_bulk(list(totals))
    over = []
    for number_id, (sent, received) in totals.items():
        ratio = ratio_of(sent, received)
        if ratio > settings.CHANNELS_RATIO_WARN:
            level = "critical" if ratio > settings.CHANNELS_RATIO_CRITICAL else "warn"
            over.append({"number": numbers[number_id], "sent": sent, "received": received, "ratio": ratio, "level": level})
    return sorted(over, key=lambda item: -item["ratio"])


def recent_alerts(limit: int = 20) -> QuerySet[RatioAlert]:
    return RatioAlert.objects.select_related("number", "acknowledged_by").order_by("-created_at")[:limit]


def opt_outs() -> QuerySet[OptOut]:
    """Who opted out of which channel and when, newest first (support's page: no message body)."""
    return OptOut.objects.select_related("profile__user", "number").order_by("-opted_out_at", "-pk")


def recent_photos(user, *, days: int, limit: int) -> list[Photo]:
    """The photos `user` texted in the last `days` days, newest `limit` of them, oldest first, as
    the model reads them (channels_app.images): so the assistant can refer back to a photo after
    the conversation's task has changed."""
    since = timezone.now() - timedelta(days=days)
    attachments = (
        InboundAttachment.objects.select_related("message")
        .filter(message__profile__user=user, message__received_at__gte=since, mime_type__istartswith="image/")
        .order_by("-message__received_at", "-pk")[:limit]
    )
    return [photo_of(a) for a in reversed(list(attachments))]


HOME_LIMIT = 5


def home_tile(user) -> dict:
    """Support's home page: the alerts nobody has acknowledged yet (count and the newest few) and
    the lines whose send/receive ratio over the last 7 days is above the warning threshold.
    Numbers and ratios only. Four bounded queries."""
    open_alerts = RatioAlert.objects.filter(acknowledged_at__isnull=True)
    over = numbers_over_threshold(days=7)
    return {
        "open_count": open_alerts.count(),
        "open_alerts": list(open_alerts.select_related("number").order_by("-created_at", "-pk")[:HOME_LIMIT]),
        "over_count": len(over), "over": over[:HOME_LIMIT],
        "warn": settings.CHANNELS_RATIO_WARN, "critical": settings.CHANNELS_RATIO_CRITICAL,
    }
