"""Send/receive ratio alerts, raised by the beat job when a line crosses a threshold."""

from __future__ import annotations

from datetime import date

from django.conf import settings

from ..models import NumberDay, RatioAlert
from . import pool

CRITICAL, WARN = RatioAlert.Level.CRITICAL, RatioAlert.Level.WARN


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
            alert = ratio_alert_raise(row=row, level=level)
            if alert is not None:
                raised.append(alert)
    return raised


def ratio_alert_raise(*, row: NumberDay, level: str) -> RatioAlert | None:
    """Raise the line's alert for the day at `level`; None when it was raised already."""
    threshold = dict(thresholds())[level]
    alert, created = RatioAlert.objects.get_or_create(
        number_id=row.number_id, day=row.day, level=level,
        defaults={"ratio": row.ratio, "sent": row.sent, "received": row.received, "threshold": threshold},
    )
    return alert if created else None
