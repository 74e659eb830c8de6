"""The sending-number pool: daily caps, sticky assignment, per-day traffic counters."""

from __future__ import annotations

import re
from datetime import date, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone

from ..models import Channel, NumberDay, SendingNumber, TextingProfile, ratio_of
from . import alerts

PHONE_RE = re.compile(r"^\+[1-9]\d{6,14}$")


def phone_normalize(value: str) -> str:
    """E.164 from what people type: '+1 (415) 555-0100' -> '+14155550100'. Raises ValueError."""
    raw = (value or "").strip()
    digits = re.sub(r"\D", "", raw)
    if raw.startswith("00"):
        digits = digits[2:]
    elif not raw.startswith("+") and len(digits) == 10:
        digits = "1" + digits  # a bare 10-digit number is North American
    phone = "+" + digits
    if not PHONE_RE.match(phone):
        raise ValueError("Enter a phone number in international form, e.g. +1 415 555 0100.")
    return phone


def today() -> date:
    return timezone.localdate()


def _day_row(number: SendingNumber, day: date) -> NumberDay:
    try:
        with transaction.atomic():
            row, _ = NumberDay.objects.get_or_create(number=number, day=day)
    except IntegrityError:  # another process created it between our read and write
        row = NumberDay.objects.get(number=number, day=day)
    return row


def stat_add(*, number: SendingNumber | None, field: str, amount: int = 1, day: date | None = None) -> None:
    if number is None:
        return
    if field not in {"sent", "received", "fallbacks", "capped"}:
        raise ValueError(f"unknown counter {field}")
    row = _day_row(number, day or today())
    NumberDay.objects.filter(pk=row.pk).update(**{field: F(field) + amount})
    if field == "sent" and amount > 0:
        _alert_on_write(row.pk)


def number_day_record(*, number: SendingNumber, day: date, sent: int, received: int, fallbacks: int = 0,
                      capped: int = 0) -> NumberDay:
    """Write a line's statistics for a whole day at once (a day's figures from the provider's
    records, the demo's two weeks): the row takes these counts, and the line-day's alert is raised
    (or escalated) at once when they put it over a threshold, so a line critical for nine days has
    nine alerts, not one for the day the beat job happened to look at."""
    for name, value in (("sent", sent), ("received", received), ("fallbacks", fallbacks), ("capped", capped)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number of messages, not {value!r}")
    row = _day_row(number, day)
    NumberDay.objects.filter(pk=row.pk).update(sent=sent, received=received, fallbacks=fallbacks, capped=capped)
    row.sent, row.received, row.fallbacks, row.capped = sent, received, fallbacks, capped
    _alert_on_write(row.pk)
    return row


def _alert_on_write(row_id: int) -> None:
    """Only a send can raise a line's ratio: the line's alert is raised as the send is counted,
    not 15 minutes later at the beat job's next check (which stays, for days it missed).
    ratio_alert_raise keeps one alert per line and day, so a line that stays over its threshold
    is alerted once per episode."""
    alerts.ratio_alert_on_write(row_id=row_id)


def cap_reserve(*, number: SendingNumber) -> bool:
    """Count one send against today's cap, or say no: a conditional update, so two workers
    cannot both take the last slot."""
    row = _day_row(number, today())
    reserved = bool(NumberDay.objects.filter(pk=row.pk, sent__lt=number.daily_cap).update(sent=F("sent") + 1))
    if reserved:
        _alert_on_write(row.pk)
    return reserved


def cap_release(*, number: SendingNumber) -> None:
    """The reserved send did not happen."""
    NumberDay.objects.filter(number=number, day=today(), sent__gt=0).update(sent=F("sent") - 1)


def _health(numbers: list[SendingNumber], days: int = 7) -> dict[int, tuple[float, float, int]]:
    since = today() - timedelta(days=days - 1)
    totals = {
        row["number_id"]: row
        for row in NumberDay.objects.filter(number__in=numbers, day__gte=since)
        .values("number_id").annotate(s=Sum("sent"), r=Sum("received"))
    }
    sent_today = dict(NumberDay.objects.filter(number__in=numbers, day=today()).values_list("number_id", "sent"))
    assigned: dict[int, int] = {}
    for number_id in TextingProfile.objects.filter(number__in=numbers).values_list("number_id", flat=True):
        assigned[number_id] = assigned.get(number_id, 0) + 1
    health = {}
    for number in numbers:
        load = sent_today.get(number.pk, 0) / max(number.daily_cap, 1)
        week = totals.get(number.pk) or {"s": 0, "r": 0}
        health[number.pk] = (round(load, 4), ratio_of(week["s"] or 0, week["r"] or 0), assigned.get(number.pk, 0))
    return health


def healthiest_number(kind: str = Channel.IMESSAGE) -> SendingNumber | None:
    """Lowest load (today's share of the cap), then lowest 7-day ratio, then fewest users."""
    numbers = list(SendingNumber.objects.filter(kind=kind, active=True))
    if not numbers:
        return None
    health = _health(numbers)
    under_cap = [n for n in numbers if health[n.pk][0] < 1] or numbers
    return min(under_cap, key=lambda n: (*health[n.pk], n.pk))


def profile_register(*, user, phone: str) -> TextingProfile:
    """The user tells us their phone; they get the healthiest line to text (kept once they do)."""
    phone = phone_normalize(phone)
    with transaction.atomic():
        taken = TextingProfile.objects.filter(phone=phone).exclude(user=user).exists()
        if taken:
            raise ValueError("That phone number belongs to another account.")
        profile = TextingProfile.objects.filter(user=user).first()
        if profile is None:
            profile = TextingProfile.objects.create(user=user, phone=phone, number=healthiest_number())
        elif profile.phone != phone:
            if profile.first_texted_at is not None:
                raise ValueError("Your number is already verified by a text; contact support to change it.")
            profile.phone = phone
            profile.save(update_fields=["phone"])
        if profile.number is None:
            profile.number = healthiest_number()
            profile.save(update_fields=["number"])
    return profile
