"""Who sees the analyst's page: staff see every team; a team admin sees their teams' scores and
the candidates they may review. The numbers of every run are the admin's to watch, but a task's
title and the analyst's why (which names actions and recipients) only for tasks the admin may open,
as with the validator's decisions: a member's private task stays private."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.permissions import is_content_staff, is_support, visible_tasks, workspace_admin_team_ids
from validator.permissions import can_review_eval_candidates, reviewable_candidates

from .models import FailureEvent, FailureGroup, TaskScore

__all__ = ["can_manage_failures", "can_review_eval_candidates", "can_view_analyst", "can_view_failures",
           "failure_log_readable", "failures_counts_only", "readable_task_ids", "reviewable_candidates",
           "task_score_visible", "visible_failure_events", "visible_failure_groups", "visible_scores"]


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


# --- Failure groups ------------------------------------------------------------------------------
# Content staff see every group; a team admin the groups that touched their teams (of each, their
# teams' failures, and the log only of tasks they may open); support staff counts only; members
# nothing. Filing, triaging and changing a group's status are the staff's (engineering's) work.

def can_view_failures(user) -> bool:
    return is_content_staff(user) or bool(workspace_admin_team_ids(user)) or is_support(user)


def failures_counts_only(user) -> bool:
    return not is_content_staff(user) and is_support(user)


def can_manage_failures(user) -> bool:
    return is_content_staff(user)


def visible_failure_events(user) -> QuerySet[FailureEvent]:
    if is_content_staff(user) or failures_counts_only(user):
        return FailureEvent.objects.all()
    return FailureEvent.objects.filter(team_id__in=workspace_admin_team_ids(user))


def visible_failure_groups(user) -> QuerySet[FailureGroup]:
    if is_content_staff(user) or failures_counts_only(user):
        return FailureGroup.objects.all()
    return FailureGroup.objects.filter(pk__in=visible_failure_events(user).values("group_id"))


def failure_log_readable(user, event: FailureEvent) -> bool:
    """The example's error text and log (and the triage written from them): a task's only to those who
    may open it; a job of one person's (their drafts, their memory's hydration) only to that person."""
    if is_content_staff(user):
        return True
    if event.team_id not in workspace_admin_team_ids(user):
        return False
    if event.task_id is None:
        return event.user_id in (None, user.pk)
    return visible_tasks(user).filter(pk=event.task_id).exists()
