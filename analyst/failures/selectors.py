"""Reads for the failure pages: groups and their figures from their events (counts per day, users
and teams affected, versions seen), over the events the reader may see."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Max, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from lindy.redaction import redacted

from .. import permissions
from ..models import FailureEvent, FailureGroup

DAYS = 14


def group_rows(groups: QuerySet[FailureGroup], events: QuerySet[FailureEvent]) -> list[dict]:
    """Per group: its counts over `events` (those the reader may see). One query for the figures."""
    figures = {row["group"]: row for row in events.filter(group__in=groups).values("group").annotate(
        failures=Count("pk"), users=Count("user", distinct=True), teams=Count("team", distinct=True),
        last=Max("created_at"))}
    rows = []
    for group in groups:
        row = figures.get(group.pk)
        if row is None:
            continue
        rows.append({"group": group, "failures": row["failures"], "users": row["users"], "teams": row["teams"],
                     "last": row["last"]})
    return rows


def group_figures(events: QuerySet[FailureEvent], *, now=None) -> dict:
    now = now or timezone.now()
    since = (now - timedelta(days=DAYS - 1)).date()
    by_day = dict(events.filter(created_at__date__gte=since).annotate(day=TruncDate("created_at"))
                  .values_list("day").annotate(n=Count("pk")).values_list("day", "n"))
    days = [since + timedelta(days=i) for i in range(DAYS)]
    totals = events.aggregate(failures=Count("pk"), users=Count("user", distinct=True), teams=Count("team", distinct=True))
    versions = list(events.values("version").annotate(n=Count("pk"), last=Max("created_at")).order_by("-last"))
    return {**totals, "per_day": [{"day": d, "count": by_day.get(d, 0)} for d in days], "versions": versions}


def example_for(user, event: FailureEvent) -> FailureEvent:
    """The example as `user` may read it: its error text and log hidden when the failure is of a task
    (or a person's job) they may not open, since an exception's message quotes what it worked on."""
    if permissions.failure_log_readable(user, event):
        return event
    return redacted(event, ["message", "log"])
