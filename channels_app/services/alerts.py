"""Send/receive ratio alerts, raised by the beat job when a line crosses a threshold."""

from __future__ import annotations

from datetime import date

from django.conf import settings

from ..models import NumberDay, RatioAlert
from . import pool


def thresholds() -> list[tuple[str, float]]:
    return [
        (RatioAlert.Level.CRITICAL, settings.CHANNELS_RATIO_CRITICAL),
        (RatioAlert.Level.WARN, settings.CHANNELS_RATIO_WARN),
    ]


def ratio_alerts_check(*, day: date | None = None) -> list[RatioAlert]:
    """One alert per line, day and level: running the job again raises nothing new."""
    day = day or pool.today()
    raised = []
    for row in NumberDay.objects.filter(day=day, number__active=True).select_related("number"):
        ratio = row.ratio
        for level, threshold in thresholds():
            if ratio <= threshold:
                continue
            alert, created = RatioAlert.objects.get_or_create(
                number=row.number, day=day, level=level,
                defaults={"ratio": ratio, "sent": row.sent, "received": row.received, "threshold": threshold},
            )
            if created:
                raised.append(alert)
    return raised
