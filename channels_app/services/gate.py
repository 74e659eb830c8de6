"""The pre-send gate: every send to a user, on every line, is checked here first, and the three
things that can stop it are checked together: the user's opt-out of the channel, the line's
send/receive ratio today, and the line's daily cap.

- Opted out: refused (the one consent confirmation is the only exception, and it does not come
  through here).
- The line over the critical ratio: an unprompted send is refused and support is alerted; a reply
  to a message the user just sent still goes (answering people does not make a line spammy).
- The line at its cap: not refused, the caller falls back to another line.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from ..models import (
    Channel,
    InboundMessage,
    NumberDay,
    OptOut,
    OutboundMessage,
    SendingNumber,
    TextingProfile,
    ratio_of,
)
from . import alerts, pool


@dataclass(frozen=True)
class SendVerdict:
    """What the gate says about one send on one line."""

    allowed: bool  # True: go; one send is reserved against the line's cap (give it back if it fails)
    refusal: str = ""  # OutboundMessage.Refusal when the send must not go anywhere
    capped: bool = False  # the line is at its cap: try another line
    reason: str = ""


ALLOWED = SendVerdict(allowed=True)


def opt_out_for(*, phone: str, channel: str) -> OptOut | None:
    """The phone's open opt-out of the channel, if it has one."""
    return OptOut.objects.filter(phone=phone, channel=channel, opted_in_at__isnull=True).first()


def opted_out_reason(opt_out: OptOut) -> str:
    label = Channel(opt_out.channel).label
    return (
        f"Not sent: the user opted out of {label} (texted {opt_out.keyword} on "
        f"{timezone.localtime(opt_out.opted_out_at):%Y-%m-%d %H:%M}). Nothing is sent to them on {label} "
        "until they text START."
    )


def is_reply(profile: TextingProfile) -> bool:
    """Is a send now a reply to a message the user just sent (within CHANNELS_REPLY_WINDOW_SECONDS)?"""
    since = timezone.now() - timedelta(seconds=settings.CHANNELS_REPLY_WINDOW_SECONDS)
    return InboundMessage.objects.filter(profile=profile, received_at__gte=since).exists()


def send_check(*, profile: TextingProfile, number: SendingNumber, channel: str, reply: bool) -> SendVerdict:
    """Opt-out, ratio and cap for one send to `profile` from `number`. When allowed, the send is
    counted against the cap already (a conditional update: two workers cannot both take the
    last slot)."""
    opt_out = opt_out_for(phone=profile.phone, channel=channel)
    if opt_out is not None:
        return SendVerdict(allowed=False, refusal=OutboundMessage.Refusal.OPTED_OUT, reason=opted_out_reason(opt_out))
    if not reply:
        day = NumberDay.objects.filter(number=number, day=pool.today()).first()
        ratio = ratio_of(day.sent, day.received) if day else 0.0
        if day is not None and ratio > settings.CHANNELS_RATIO_CRITICAL:
            alerts.ratio_alert_raise(row=day, level=alerts.CRITICAL)
            return SendVerdict(
                allowed=False, refusal=OutboundMessage.Refusal.LINE_CRITICAL,
                reason=(f"Not sent: the line {number.phone} is over its critical send/receive ratio today "
                        f"({ratio} > {settings.CHANNELS_RATIO_CRITICAL}). It only answers messages the user just "
                        "sent until support looks at it; support has been alerted."),
            )
    if not pool.cap_reserve(number=number):
        pool.stat_add(number=number, field="capped")
        return SendVerdict(allowed=False, capped=True, reason=f"The line {number.phone} is at its daily cap.")
    return ALLOWED
