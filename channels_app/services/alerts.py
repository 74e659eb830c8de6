"""Send/receive ratio alerts: one per line and day, raised when a send is counted that takes a line
over a threshold (the beat job checks again, for what it missed; the pre-send gate raises one when
it refuses a critical line's send), escalated from warning
to critical, told to support staff by email (Django's email backend) and in a configured Slack
channel, and acknowledged by support. Counts and ratios only: never a message body."""

from __future__ import annotations

import logging
from datetime import date, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from lindy.links import absolute_reverse
from lindy.models import User
from lindy.slack_client import web_client

from ..models import NumberDay, RatioAlert
from . import queue

logger = logging.getLogger(__name__)

CRITICAL, WARN = RatioAlert.Level.CRITICAL, RatioAlert.Level.WARN
RANK: dict[str, int] = {WARN: 1, CRITICAL: 2}


def thresholds() -> list[tuple[str, float]]:
    return [
        (RatioAlert.Level.CRITICAL, settings.CHANNELS_RATIO_CRITICAL),
        (RatioAlert.Level.WARN, settings.CHANNELS_RATIO_WARN),
    ]


def level_of(ratio: float) -> str | None:
    """The highest level the ratio is over, if any."""
    return next((level for level, threshold in thresholds() if ratio > threshold), None)


# The beat job looks back this many days: a day whose last sends were counted by a worker that
# died before raising its alert (or statistics written whole, number_day_record) is still alerted.
CHECK_DAYS = 2
# Support writes why it was acknowledged, or what was done about it.
MAX_NOTE = 500


def ratio_alerts_check(*, day: date | None = None, days: int = CHECK_DAYS) -> list[RatioAlert]:
    """The beat job: raise or escalate each line's alert for each of the `days` days up to `day`
    (one alert per line-day over a threshold). Running it again raises nothing new. Returns the
    alerts raised or escalated."""
    day = day or timezone.localdate()  # the pool's day (pool.today)
    raised = []
    rows = NumberDay.objects.filter(day__gt=day - timedelta(days=max(days, 1)), day__lte=day, number__active=True)
    for row in rows.select_related("number").order_by("day", "number_id"):
        level = level_of(row.ratio)
        if level is None:
            continue
        alert = ratio_alert_raise(row=row, level=level)
        if alert is not None:
            raised.append(alert)
    return raised


def ratio_alert_on_write(*, row_id: int) -> RatioAlert | None:
    """A line's counters were just written: raise (or escalate) its alert now if it is over a
    threshold. A line already alerted at that level today is left alone (no duplicate, nobody
    told twice)."""
    row = NumberDay.objects.filter(pk=row_id, number__active=True).first()
    level = level_of(row.ratio) if row is not None else None
    if row is None or level is None:
        return None
    at_or_above = [name for name, rank in RANK.items() if rank >= RANK[level]]
    if RatioAlert.objects.filter(number_id=row.number_id, day=row.day, level__in=at_or_above).exists():
        return None
    return ratio_alert_raise(row=row, level=level)


def ratio_alert_raise(*, row: NumberDay, level: str) -> RatioAlert | None:
    """The line's one alert for the day, raised at `level` or escalated to it (never lowered: a
    critical line that calms down in the afternoon was still critical that day). An escalation
    needs acknowledging again. Returns the alert when it was raised or escalated (support is told,
    once the caller's transaction commits), else None."""
    threshold = dict(thresholds())[level]
    figures = {"ratio": row.ratio, "sent": row.sent, "received": row.received, "threshold": threshold}
    with transaction.atomic():
        try:
            with transaction.atomic():
                alert = RatioAlert.objects.create(number_id=row.number_id, day=row.day, level=level, **figures)
        except IntegrityError:
            current = RatioAlert.objects.select_for_update().get(number_id=row.number_id, day=row.day)
            if RANK[level] <= RANK[current.level]:
                return None
            RatioAlert.objects.filter(pk=current.pk).update(
                level=level, escalated_at=timezone.now(), acknowledged_at=None, acknowledged_by=None, **figures
            )
            alert = RatioAlert.objects.get(pk=current.pk)
        alert_id = alert.pk
        transaction.on_commit(lambda: queue.task_send_or_log(queue.RATIO_ALERT_NOTIFY, alert_id))
    return alert


def ratio_alert_acknowledge(*, alert: RatioAlert, user, note: str = "") -> bool:
    """Support has seen it, with an optional note (what was done, why it can wait). False when it
    was acknowledged already (nothing changes). ValueError for a note over MAX_NOTE characters."""
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise ValueError(f"The note may be at most {MAX_NOTE} characters; it has {len(note)}.")
    now = timezone.now()
    done = RatioAlert.objects.filter(pk=alert.pk, acknowledged_at__isnull=True).update(
        acknowledged_at=now, acknowledged_by=user, acknowledge_note=note
    )
    if done:
        alert.acknowledged_at, alert.acknowledged_by, alert.acknowledge_note = now, user, note
    return bool(done)


def next_step(level: str) -> str:
    """What support does next about an alert at `level`, in words."""
    if level == CRITICAL:
        return ("The line's unprompted sends are stopped. Find what sent them (a campaign, a loop of follow-ups) "
                "and pause it; move users off the line if it stays critical tomorrow. Acknowledge with what you did.")
    return (f"Look at what the line sent today and slow unprompted follow-ups before it reaches "
            f"{settings.CHANNELS_RATIO_CRITICAL} sent per received, where its unprompted sends stop.")


# --- Telling people -------------------------------------------------------------------------------

def support_emails() -> list[str]:
    """Support staff, and any address configured on top (CHANNELS_ALERT_EMAILS)."""
    staff = User.objects.filter(is_support=True, is_active=True).exclude(email="").order_by("email")
    return sorted({*staff.values_list("email", flat=True), *settings.CHANNELS_ALERT_EMAILS})


def alert_text(alert: RatioAlert) -> tuple[str, str]:
    """Subject and body: the line, its figures, what the gate does about it. No message content."""
    number = alert.number
    name = f"{number.line_name} ({number.phone})"
    level = alert.get_level_display()
    subject = f"[Lindy] {level}: {name} at {alert.ratio} sent per received on {alert.day}"
    consequence = (
        "Unprompted sends from this line are stopped; replies to people who just texted still go."
        if alert.level == CRITICAL else
        f"At {settings.CHANNELS_RATIO_CRITICAL} the line stops unprompted sends."
    )
    body = (
        f"{level}: the line {name} has sent {alert.sent} messages and received {alert.received} on {alert.day}, "
        f"a send/receive ratio of {alert.ratio} (the {level.lower()} threshold is {alert.threshold}).\n"
        f"{consequence}\nNext step: {next_step(alert.level)}\n"
        f"Acknowledge it on the channel health page: {absolute_reverse('channel-health', fragment=f'alert-{alert.pk}')}"
    )
    return subject, body


def _claim(alert_id: int, field: str, level: str) -> str | None:
    """Take the delivery of `level` on one way of telling (field), so two runs never both send.
    Returns the previous value (to give the claim back), or None when there is nothing to send."""
    alert = RatioAlert.objects.filter(pk=alert_id).values(field).first()
    if alert is None:
        return None
    previous = alert[field]
    taken = RatioAlert.objects.filter(pk=alert_id, level=level).filter(~Q(**{field: level})).update(**{field: level})
    return previous if taken else None


def email_support(subject: str, body: str) -> bool:
    """Email support staff (and CHANNELS_ALERT_EMAILS). False when there is nobody to email. Also
    registered as the "email" way of lindy.ops_alerts, so other apps' alerts reach the same people."""
    recipients = support_emails()
    if not recipients:
        return False
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
    return True


def post_to_ops_slack(subject: str, body: str) -> bool:
    """Post in the configured ops Slack channel. False when none is configured. Also the "slack"
    way of lindy.ops_alerts."""
    if not slack_configured():
        return False
    web_client(settings.CHANNELS_ALERT_SLACK_TOKEN).chat_postMessage(
        channel=settings.CHANNELS_ALERT_SLACK_CHANNEL, text=f"*{subject}*\n{body}"
    )
    return True


def ratio_alert_notify(*, alert_id: int) -> dict:
    """Tell support about the alert at its current level, by email and on Slack, each once.
    A delivery that fails gives its claim back and raises (the task retries). Returns what was sent."""
    alert = RatioAlert.objects.select_related("number").filter(pk=alert_id).first()
    if alert is None:
        return {"email": False, "slack": False}
    subject, body = alert_text(alert)
    sent = {"email": False, "slack": False}
    recipients = support_emails()
    if recipients and (previous := _claim(alert.pk, "emailed_level", alert.level)) is not None:
        try:
            email_support(subject, body)
        except Exception:
            RatioAlert.objects.filter(pk=alert.pk).update(emailed_level=previous)
            raise
        sent["email"] = True
    if slack_configured() and (previous := _claim(alert.pk, "slacked_level", alert.level)) is not None:
        try:
            post_to_ops_slack(subject, body)
        except Exception:  # SlackApiError, or the network
            RatioAlert.objects.filter(pk=alert.pk).update(slacked_level=previous)
            raise
        sent["slack"] = True
    if not recipients and not slack_configured():
        logger.warning("Ratio alert %s: no support email and no Slack channel configured to tell", alert.pk)
    return sent


def slack_configured() -> bool:
    return bool(settings.CHANNELS_ALERT_SLACK_TOKEN and settings.CHANNELS_ALERT_SLACK_CHANNEL)
