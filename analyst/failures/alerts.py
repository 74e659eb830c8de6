"""A new group, or a regression, that hits more than ANALYST_FAILURE_ALERT_USERS users in an hour
alerts through the channels of the other alerts (support's emails, the alert Slack channel), once
per episode. The text holds counts and the code's names only: no message, no log."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from channels_app.services.alerts import slack_configured, support_emails
from lindy.slack_client import web_client

from ..models import FailureEvent, FailureGroup

logger = logging.getLogger(__name__)
HOUR = timedelta(hours=1)


def users_in_last_hour(group: FailureGroup, *, now) -> int:
    since = max(group.episode_started_at, now - HOUR)
    return (FailureEvent.objects.filter(group=group, created_at__gte=since, user__isnull=False)
            .values("user").distinct().count())


def alert_text(group: FailureGroup, users: int) -> tuple[str, str]:
    what = "Regression" if group.status == FailureGroup.Status.REGRESSED else "New failure"
    subject = f"[Lindy] {what} #{group.pk}: {group.title} hit {users} users in an hour"
    body = (f"{what}: failure group #{group.pk} ({group.title}, {group.get_status_display().lower()}) hit {users} "
            f"users in the last hour ({group.count} failures since {group.first_seen:%Y-%m-%d %H:%M} UTC; seen in "
            f"version {group.last_version}).\nIts log, code and suggested fix: /analyst/failures/{group.pk}/")
    return subject, body


def failure_alert_check(*, group_id: int, now=None) -> bool:
    """Alert when the group's episode crosses the threshold and has not alerted yet. Never raises:
    it runs where the failure is captured. Returns whether it alerted."""
    now = now or timezone.now()
    group = FailureGroup.objects.filter(pk=group_id).first()
    if group is None or group.status not in (FailureGroup.Status.NEW, FailureGroup.Status.REGRESSED):
        return False
    episode = group.episode_started_at
    if group.alerted_episode_at == episode:
        return False
    users = users_in_last_hour(group, now=now)
    if users <= settings.ANALYST_FAILURE_ALERT_USERS:
        return False
    previous = group.alerted_episode_at
    # The claim: of two workers crossing the threshold at once, one alerts.
    if not FailureGroup.objects.filter(pk=group.pk, alerted_episode_at=previous, episode_started_at=episode) \
            .update(alerted_episode_at=episode):
        return False
    subject, body = alert_text(group, users)
    try:
        recipients = support_emails()
        if recipients:
            send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
        if slack_configured():
            web_client(settings.CHANNELS_ALERT_SLACK_TOKEN).chat_postMessage(
                channel=settings.CHANNELS_ALERT_SLACK_CHANNEL, text=f"*{subject}*\n{body}")
        if not recipients and not slack_configured():
            logger.warning("Failure alert for group %s: no support email and no Slack channel configured", group.pk)
    except Exception:
        logger.exception("could not send the alert of failure group %s; the next failure tries again", group.pk)
        FailureGroup.objects.filter(pk=group.pk, alerted_episode_at=episode).update(alerted_episode_at=previous)
        return False
    return True
