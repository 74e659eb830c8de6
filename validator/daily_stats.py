"""The admins' decision statistics, kept bounded by a daily roll-up.

Past days live in DecisionDay (one row per team, tool and day), written by `rollup()` from beat
once a day has ended and SETTLE has passed (a decision stamped 23:59:59 may commit a moment after
midnight). DecisionRollup.through says which days are complete; later days (today, and any day
beat has not reached yet) are aggregated from the decisions live. So a page of 30 days reads at
most 30 summary rows per team and tool, plus today's decisions, whatever the history holds.

Decisions are never re-dated or re-judged after they are stored (a status moves between validated
states; `approved` and `validator_failure` are set once), so a rolled-up day stays right. A team
deleted takes its summaries with it; a user deleted takes their decisions but not the team's past
counts, which stay a record of what the validator judged.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Count, Min, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from .models import Decision, DecisionDay, DecisionRollup

# Every status that means the validator judged the action (exempt ones were never validated).
VALIDATED = ("allowed", "executed", "execution_failed", "blocked", "authorized", "dismissed", "suggestion_followed")
# How long after midnight a day is taken as complete: longer than any transaction that stamps a decision.
SETTLE = timedelta(hours=1)
# Days rolled up per call: a first run over a long history catches up over several beat ticks.
MAX_DAYS = 31
# The longest period the page shows: days before it are never read, so never rolled up.
MAX_PERIOD_DAYS = 365
ROLLUP_PK = 1


def _start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def _aggregate(queryset):
    """(team_id, tool, day, total, blocked, failures) of the validated decisions in `queryset`."""
    return (queryset.filter(status__in=VALIDATED).annotate(day=TruncDate("created_at"))
            .values("team_id", "tool", "day")
            .annotate(total=Count("id"), blocked=Count("id", filter=Q(approved=False)),
                      failures=Count("id", filter=Q(validator_failure=True)))
            .order_by())


def rolled_up_through() -> date | None:
    return DecisionRollup.objects.filter(pk=ROLLUP_PK).values_list("through", flat=True).first()


def rollup(*, now: datetime | None = None, max_days: int = MAX_DAYS) -> int:
    """Roll up the settled days after the last one, at most `max_days` of them, in one transaction.
    Returns the days rolled up (0: nothing to do). Safe to run twice at once: the row lock orders them."""
    now = timezone.now() if now is None else now
    last_settled = timezone.localdate(now - SETTLE) - timedelta(days=1)
    with transaction.atomic():
        mark, _ = DecisionRollup.objects.select_for_update().get_or_create(pk=ROLLUP_PK)
        if mark.through is not None:
            first = mark.through + timedelta(days=1)
        else:
            oldest = Decision.objects.aggregate(oldest=Min("created_at"))["oldest"]
            if oldest is None:
                return 0
            first = max(timezone.localdate(oldest), last_settled - timedelta(days=MAX_PERIOD_DAYS))
        last = min(last_settled, first + timedelta(days=max_days - 1))
        if last < first:
            return 0
        rows = _aggregate(Decision.objects.filter(created_at__gte=_start(first),
                                                  created_at__lt=_start(last + timedelta(days=1))))
        DecisionDay.objects.bulk_create([DecisionDay(**row) for row in rows], batch_size=1000)
        mark.through = last
        mark.save(update_fields=["through", "updated_at"])
    return (last - first).days + 1


def day_rows(team_ids: list[int], first_day: date) -> list[dict]:
    """(team_id, tool, day, total, blocked, failures) per day from `first_day` to now: summaries
    for the rolled-up days, a live aggregate (from the (team, created_at) index) for the rest."""
    through = rolled_up_through()
    rows: list[dict] = []
    live_from = first_day
    if through is not None and through >= first_day:
        rows += [dict(row) for row in DecisionDay.objects.filter(
            team_id__in=team_ids, day__gte=first_day, day__lte=through).values(
            "team_id", "tool", "day", "total", "blocked", "failures")]
        live_from = through + timedelta(days=1)
    rows += _aggregate(Decision.objects.filter(team_id__in=team_ids, created_at__gte=_start(live_from)))
    return rows
