"""Opt-out and consent. A person who texts STOP, STOPALL, UNSUBSCRIBE, CANCEL, END or QUIT (any
case, alone in the message) is opted out of the channel they texted on; START or UNSTOP opts them
back in. Each change gets one confirmation, and nothing else is sent to them on that channel
while they are out (the pre-send gate, gate.opt_out_for): carriers and Apple score a line on
every send after an opt-out."""

from __future__ import annotations

import logging
import re
from enum import StrEnum

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Channel, InboundMessage, OptOut
from . import outbound, queue
from .gate import opt_out_for

logger = logging.getLogger(__name__)

OPT_OUT_KEYWORDS = frozenset({"stop", "stopall", "unsubscribe", "cancel", "end", "quit"})
OPT_IN_KEYWORDS = frozenset({"start", "unstop"})
# The keyword alone: surrounding spaces and one closing full stop or exclamation mark allowed
# ("Stop." is still STOP; "stop sending me the weather" is a message for the agent).
_ALONE = re.compile(r"\s*([A-Za-z]+)\s*[.!]?\s*")

OUT_NOTICE = "You're unsubscribed from Lindy on {channel}: nothing more will be sent here. Reply START to resubscribe."
IN_NOTICE = "You're resubscribed to Lindy on {channel}. Reply STOP at any time to unsubscribe."


class Direction(StrEnum):
    OUT = "out"
    IN = "in"


def keyword_of(text: str) -> tuple[Direction, str] | None:
    """(direction, KEYWORD) when the message is a consent keyword alone, else None."""
    match = _ALONE.fullmatch(text or "")
    if match is None:
        return None
    word = match.group(1).lower()
    if word in OPT_OUT_KEYWORDS:
        return Direction.OUT, word.upper()
    if word in OPT_IN_KEYWORDS:
        return Direction.IN, word.upper()
    return None


def consent_keyword_apply(*, message: InboundMessage, direction: Direction, keyword: str) -> OptOut | None:
    """Record what an inbound keyword says (inside the caller's transaction, with the stored
    message) and queue its one confirmation. A repeated STOP, or START from someone who is not
    out, changes nothing and is not confirmed again. Returns the opt-out it opened or closed."""
    phone, channel = message.from_phone, message.channel
    if direction is Direction.OUT:
        if opt_out_for(phone=phone, channel=channel) is not None:
            return None
        try:
            with transaction.atomic():
                opt_out = OptOut.objects.create(
                    phone=phone, channel=channel, profile=message.profile, number=message.number, keyword=keyword,
                    opted_out_at=message.received_at,
                )
        except IntegrityError:  # a concurrent STOP opened it first
            return None
    else:
        open_one = OptOut.objects.select_for_update().filter(
            phone=phone, channel=channel, opted_in_at__isnull=True
        ).first()
        if open_one is None:
            return None
        opt_out = open_one
        OptOut.objects.filter(pk=opt_out.pk).update(opted_in_at=message.received_at, opt_in_keyword=keyword)
    opt_out_id = opt_out.pk
    transaction.on_commit(lambda: queue.task_send_or_log(queue.CONSENT_CONFIRM, opt_out_id, direction.value))
    return opt_out


def consent_confirm(*, opt_out_id: int, direction: str) -> bool:
    """Send the one confirmation of an opt-out ("out") or opt-in ("in"). Claimed first, so a
    retried or duplicated task sends nothing more; a send that fails gives the claim back and
    raises (the task retries). Returns whether a confirmation went out."""
    direction = Direction(direction)
    field = "out_confirmed_at" if direction is Direction.OUT else "in_confirmed_at"
    # An opt-out confirmation only while still out; an opt-in one only once back in.
    still = {"opted_in_at__isnull": direction is Direction.OUT}
    claimed = OptOut.objects.filter(pk=opt_out_id, **{f"{field}__isnull": True}, **still).update(
        **{field: timezone.now()}
    )
    if not claimed:
        return False
    opt_out = OptOut.objects.select_related("profile__user", "profile__number", "profile__sms_number", "number").get(
        pk=opt_out_id
    )
    if opt_out.profile is None:
        # A phone no user registered: nothing is ever sent to it, so nothing is recorded either.
        return False
    label = Channel(opt_out.channel).label
    body = (OUT_NOTICE if direction is Direction.OUT else IN_NOTICE).format(channel=label)
    try:
        outbound.consent_notice_send(profile=opt_out.profile, number=opt_out.number, channel=opt_out.channel, body=body)
    except Exception:
        OptOut.objects.filter(pk=opt_out_id).update(**{field: None})
        raise
    return True
