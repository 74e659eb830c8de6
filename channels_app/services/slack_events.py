"""Slack's Events API off the request path. The endpoint verifies a delivery, stores it here
(`slack_event_receive`, de-duplicated by event id, Slack's retries counted) and answers 200 at once;
a Celery task claims it (`slack_event_process`) and hands its body to the slack-bolt listeners
(channels_app.slack_app), once. A worker that died mid-event leaves a claim that expires; the
recovery sweep (`slack_events_recover`) queues what is still waiting."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from ..models import SlackEvent
from ..providers.events import MalformedEvent, text
from . import queue

logger = logging.getLogger(__name__)

# A claim older than this belongs to a dead worker (the task's hard time limit is 60 s).
CLAIM_LEASE_SECONDS = 120
# Waiting longer than this with no task at it: the task was lost (broker down); queue it again.
PENDING_GRACE_SECONDS = 30
MAX_ATTEMPTS = 5


def slack_event_receive(*, body: str, payload: dict, retry_num: int = 0, retry_reason: str = "") -> tuple[SlackEvent, bool]:
    """Store one verified event_callback and queue its processing. Returns (event, created): a
    retry of a stored event is counted, not stored or processed again (it is queued again only if
    its first task looks lost). Raises MalformedEvent without an event id."""
    # The column is a 32-bit integer; callers clamp the header already (a second guard here).
    retry_num = max(0, min(int(retry_num), 2_147_483_647))
    event_id = text(payload.get("event_id"), "event_id")
    if not event_id or len(event_id) > 64:
        raise MalformedEvent("event_id is required")
    inner = payload.get("event")
    event: dict = inner if isinstance(inner, dict) else {}
    fields = {
        "slack_team_id": text(payload.get("team_id") or "", "team_id")[:32],
        "event_type": text(event.get("type") or "", "event.type")[:60],
    }
    with transaction.atomic():
        try:
            with transaction.atomic():
                stored = SlackEvent.objects.create(event_id=event_id, body=body, retries=retry_num,
                                                   retry_reason=retry_reason[:60], **fields)
            created = True
        except IntegrityError:
            SlackEvent.objects.filter(event_id=event_id).update(
                retries=Greatest(F("retries"), retry_num), retry_reason=retry_reason[:60]
            )
            stored = SlackEvent.objects.get(event_id=event_id)
            created = False
        lost = stored.status == SlackEvent.Status.PENDING and (
            created or stored.received_at < timezone.now() - timedelta(seconds=PENDING_GRACE_SECONDS)
        )
        if lost:
            pk = stored.pk
            transaction.on_commit(lambda: queue.task_send_or_log(queue.SLACK_EVENT_PROCESS, pk))
    return stored, created


def _claimable(now) -> Q:
    stale = now - timedelta(seconds=CLAIM_LEASE_SECONDS)
    return Q(status=SlackEvent.Status.PENDING) | Q(status=SlackEvent.Status.PROCESSING, started_at__lt=stale)


def slack_event_process(*, event_pk: int, handle: Callable[[str], object]) -> str:
    """Claim the stored event and run `handle(body)` on it (the slack-bolt listeners). Returns
    "done", or "already" when another run has it or had it. When `handle` raises, the event is
    pending again (failed after MAX_ATTEMPTS) and the error propagates for the task to retry."""
    now = timezone.now()
    claimed = SlackEvent.objects.filter(_claimable(now), pk=event_pk).update(
        status=SlackEvent.Status.PROCESSING, started_at=now, attempts=F("attempts") + 1
    )
    if not claimed:
        return "already"
    event = SlackEvent.objects.get(pk=event_pk)
    try:
        handle(event.body)
    except Exception as exc:
        status = SlackEvent.Status.FAILED if event.attempts >= MAX_ATTEMPTS else SlackEvent.Status.PENDING
        SlackEvent.objects.filter(pk=event_pk).update(status=status, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    # Done: the body (which may quote people) is not kept; the event id still de-duplicates.
    SlackEvent.objects.filter(pk=event_pk).update(
        status=SlackEvent.Status.DONE, processed_at=timezone.now(), body="", error=""
    )
    return "done"


def slack_events_recover() -> int:
    """Queue every event still waiting past the grace period, or held by a dead worker."""
    now = timezone.now()
    waiting = SlackEvent.objects.filter(_claimable(now), received_at__lt=now - timedelta(seconds=PENDING_GRACE_SECONDS))
    queued = 0
    for pk in waiting.order_by("received_at").values_list("pk", flat=True)[:500]:
        queue.task_send(queue.SLACK_EVENT_PROCESS, pk)
        queued += 1
    return queued
