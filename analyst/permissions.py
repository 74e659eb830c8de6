"""Who sees the analyst's page: staff see every team; a team admin sees their teams' scores and
the candidates they may review. The numbers of every run are the admin's to watch, but a task's
title and the analyst's why (which names actions and recipients) only for tasks the admin may open,
as with the validator's decisions: a member's private task stays private."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.permissions import is_content_staff, visible_tasks, workspace_admin_team_ids
from validator.permissions import can_review_eval_candidates, reviewable_candidates

from .models import TaskScore

__all__ = ["can_review_eval_candidates", "can_view_analyst", "readable_task_ids", "reviewable_candidates",
           "task_score_visible", "visible_scores"]


# Scores link to their tasks and quote what the agent did: bodies, so the one rule of
# lindy.permissions (support staff read none, whatever teams they administer).
def can_view_analyst(user) -> bool:
    return is_content_staff(user) or bool(workspace_admin_team_ids(user))


def visible_scores(user) -> QuerySet[TaskScore]:
    if is_content_staff(user):
        return TaskScore.objects.all()
    return TaskScore.objects.filter(team_id__in=workspace_admin_team_ids(user))


def task_score_visible(user, task) -> bool:
    """The analyst's score of a task, on the task's page and in the API: the analyst page's rule
    for that task's team (content staff, or a workspace admin of the team; never support)."""
    return is_content_staff(user) or task.team_id in workspace_admin_team_ids(user)


def readable_task_ids(user, task_ids) -> set[int] | None:
    """Of `task_ids`, the tasks whose title and why this user may read (None: all of them)."""
    if is_content_staff(user):
        return None
    return set(visible_tasks(user).filter(pk__in=list(task_ids)).values_list("pk", flat=True))
