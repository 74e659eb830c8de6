"""Reads for the analyst's page: scores, trends per route and target, the candidate queue."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Avg, Count, Q, QuerySet
from django.utils import timezone

from validator.models import EvalCandidate

from .models import ScoredCall, TaskScore

TREND_DAYS = 7


def trends(scores: QuerySet[TaskScore], *, now=None) -> list[dict]:
    """Per (route, target): scored runs and the mean score this week and the week before."""
    now = now or timezone.now()
    recent, before = now - timedelta(days=TREND_DAYS), now - timedelta(days=2 * TREND_DAYS)
    rows = (ScoredCall.objects.filter(task_score__in=scores.values("pk"), created_at__gte=before)
            .values("route", "target")
            .annotate(runs=Count("task_score", distinct=True),
                      this_week=Avg("task_score__score", filter=Q(created_at__gte=recent)),
                      last_week=Avg("task_score__score", filter=Q(created_at__lt=recent)),
                      this_week_runs=Count("task_score", distinct=True, filter=Q(created_at__gte=recent)))
            .order_by("route", "target"))
    out = []
    for row in rows:
        change = None
        if row["this_week"] is not None and row["last_week"] is not None:
            change = row["this_week"] - row["last_week"]
        out.append({**row, "change": change})
    return out


def analyst_candidates(reviewable: QuerySet[EvalCandidate]) -> QuerySet[EvalCandidate]:
    return (reviewable.filter(source=EvalCandidate.Source.ANALYST, status=EvalCandidate.Status.CANDIDATE)
            .select_related("team", "proposed_by").order_by("-created_at", "-pk"))


def latest_task_score(scores: QuerySet[TaskScore], task_id: int) -> dict | None:
    """The latest run's score of one task among `scores` (those the reader may see), as the task's
    page and API show it; None when there is none. One query."""
    row = (scores.filter(task_id=task_id).order_by("-through_seq", "-pk")
           .values("pk", "score", "summary", "did_what_asked", "blocked_attempts", "looped", "rogue",
                   "validator_miss", "from_seq", "through_seq", "provider", "created_at").first())
    if row is None:
        return None
    data = {key: value for key, value in row.items() if key != "pk"}
    return {"id": row["pk"], **data, "created_at": row["created_at"].isoformat(timespec="seconds")}


def summary(scores: QuerySet[TaskScore]) -> dict:
    return scores.aggregate(runs=Count("pk"), mean=Avg("score"), rogue=Count("pk", filter=Q(rogue=True)),
                            misses=Count("pk", filter=Q(validator_miss=True)),
                            offline=Count("pk", filter=Q(provider="offline")))


# What a run's score says about a private task in words: only its owner and staff read it; a team
# admin sees the numbers (issue 29: the error text once leaked where the title and why did not).
PRIVATE_SCORE_FIELDS = ("summary", "error", "false_claims")


def scores_for_viewer(user, scores) -> list:
    """The scores as `user` may read them: `readable` set, and a private task's words hidden."""
    from lindy.redaction import redacted

    from . import permissions

    scores = list(scores)
    readable = permissions.readable_task_ids(user, {score.task_id for score in scores})
    out = []
    for score in scores:
        if readable is None or score.task_id in readable:
            score.readable = True
            out.append(score)
            continue
        hidden = redacted(score, PRIVATE_SCORE_FIELDS)
        hidden.task = redacted(score.task, ("title",))
        hidden.readable = False
        out.append(hidden)
    return out
