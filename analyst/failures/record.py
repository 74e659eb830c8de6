"""Writes: a captured failure into its group (by fingerprint), a group's status, its alert.

A group seen again after it was resolved, in a version other than the one it was resolved in,
reopens as regressed: a new episode, which alerts once when it hits more than
ANALYST_FAILURE_ALERT_USERS users in an hour (so does a new group's first episode)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from lindy import failures, queue
from lindy.models import AgentTask, TaskEvent

from ..models import FailureEvent, FailureGroup
from . import alerts

logger = logging.getLogger(__name__)

TRIAGE_TASK = "analyst.tasks.failure_triage"
Status = FailureGroup.Status


def _culprit(failure: failures.Failure) -> str:
    """The innermost named function of the product (a comprehension or lambda names its caller)."""
    frames = failure.product_frames or failure.frames
    named = [f for f in frames if not f.function.startswith("<")] or frames
    return f"{named[-1].module}.{named[-1].function}"[:300] if named else ""


def failure_record(failure: failures.Failure) -> FailureEvent:
    """The recorder lindy.failures calls (subscribed in AppConfig.ready)."""
    now = timezone.now()
    user_id, team_id = failure.user_id, failure.team_id
    if failure.task_id and not (user_id and team_id):
        owner = AgentTask.objects.filter(pk=failure.task_id).values("owner_id", "team_id").first()
        if owner is None:
            failure.task_id = None
        else:
            user_id, team_id = user_id or owner["owner_id"], team_id or owner["team_id"]
    if failure.task_id and failure.through_seq is None:  # the events before the failure: all there are now
        failure.through_seq = TaskEvent.objects.filter(task_id=failure.task_id).order_by("-seq") \
            .values_list("seq", flat=True).first()
    with transaction.atomic():
        group, created = FailureGroup.objects.get_or_create(fingerprint=failure.fingerprint, defaults={
            "kind": failure.kind, "exc_type": failure.exc_type[:200], "culprit": _culprit(failure), "count": 1,
            "first_seen": now, "last_seen": now, "first_version": failure.version[:100],
            "last_version": failure.version[:100], "episode_started_at": now,
        })
        regressed = False
        if not created:
            group = FailureGroup.objects.select_for_update().get(pk=group.pk)
            fields = {"count": F("count") + 1, "last_seen": now, "last_version": failure.version[:100]}
            if group.status == Status.RESOLVED and failure.version != group.resolved_in_version:
                regressed = True
                fields.update(status=Status.REGRESSED, regressed_at=now, episode_started_at=now)
            FailureGroup.objects.filter(pk=group.pk).update(**fields)
        event = FailureEvent.objects.create(
            group=group, kind=failure.kind, exc_type=failure.exc_type[:200], message=failure.message,
            frames=[f.as_dict() for f in failure.frames], version=failure.version[:100], route=failure.route[:60],
            target=failure.target[:200], task_id=failure.task_id, through_seq=failure.through_seq,
            run=failure.run[:200], log=failure.log, user_id=user_id, team_id=team_id, created_at=now,
        )
    alerts.failure_alert_check(group_id=group.pk, now=now)
    if created or regressed:
        # The model's triage is background work: a broker that is down leaves it to the page's button.
        transaction.on_commit(lambda: queue.enqueue_or_log(TRIAGE_TASK, group.pk, then="triage it from its page"))
    return event


def group_status_set(*, group: FailureGroup, status: str) -> FailureGroup:
    """Acknowledge, resolve or reopen a group. Resolving remembers the version it was last seen
    in: the same failure in another version regresses it."""
    if status not in Status.values:
        raise ValueError(f"{status!r} is not a status of a failure group.")
    fields: dict = {"status": status}
    if status == Status.RESOLVED:
        fields.update(resolved_at=timezone.now(), resolved_in_version=group.last_version)
    FailureGroup.objects.filter(pk=group.pk).update(**fields)
    group.refresh_from_db()
    return group
