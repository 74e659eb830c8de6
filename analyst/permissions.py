"""Who sees the analyst's page: staff see every team; a team admin sees their teams' scores
(numbers and the analyst's one-line why, which names actions) and the candidates they may review."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.permissions import admin_team_ids, is_superuser
from validator.permissions import can_review_eval_candidates, reviewable_candidates

from .models import TaskScore

__all__ = ["can_review_eval_candidates", "can_view_analyst", "reviewable_candidates", "visible_scores"]


def _is_staff(user) -> bool:
    return bool(getattr(user, "is_authenticated", False) and (user.is_staff or is_superuser(user)))


def can_view_analyst(user) -> bool:
    return _is_staff(user) or bool(admin_team_ids(user))


def visible_scores(user) -> QuerySet[TaskScore]:
    if _is_staff(user):
        return TaskScore.objects.all()
    return TaskScore.objects.filter(team_id__in=admin_team_ids(user))
