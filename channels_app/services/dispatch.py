"""Handing a claimed bundle to the agent (at most once), and recovering what a dead worker left
behind. The agent is reached through the hook it registers (lindy.seams.inbound_handler)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db.models import Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from lindy import jobs, seams
from lindy.models import TaskEvent

from ..models import Conversation, InboundBundle, InboundMessage, OutboundMessage
from . import media, outbound, queue

logger = logging.getLogger(__name__)

# After this many failed hand-overs a bundle is left FAILED for a person to look at.
MAX_DISPATCH_ATTEMPTS = 6
# The dispatch task runs the agent synchronously: its time limits (tasks.bundle_dispatch).
DISPATCH_SOFT_TIME_LIMIT = 540
DISPATCH_TIME_LIMIT = 600
# While the agent runs on a bundle a thread beats its row. A worker killed whole (SIGKILL, a lost
# machine) stops beating: the sweep takes the bundle over after the stale window instead of after
# the lease, which must outlast the task's 10-minute time limit. A live run never goes stale, however
# slow its model calls: the beat comes from its own thread.
DISPATCH_HEARTBEAT_SECONDS = 5
DISPATCH_STALE_SECONDS = 30


def bundles_in_flight(conversation_id: int):
    """Bundles of the conversation the agent has, or will have again (a retry is due)."""
    return InboundBundle.objects.filter(conversation_id=conversation_id).filter(
        Q(status=InboundBundle.Status.DISPATCHING)
        | Q(status=InboundBundle.Status.CLAIMED, attempts__lt=MAX_DISPATCH_ATTEMPTS)
    )


def _fire_pending(conversation_id: int) -> None:
    """A bundle left the agent: messages that came in meanwhile are next."""
    if not InboundMessage.objects.filter(conversation_id=conversation_id, bundle__isnull=True).exists():
        return
    deadline = Conversation.objects.filter(pk=conversation_id).values_list("deadline", flat=True).first()
    delay = max(0.0, (deadline - timezone.now()).total_seconds()) if deadline else 0.0
    queue.task_send_or_log(queue.DEBOUNCE_FIRE, conversation_id, countdown=delay)


def _message_payload(message: InboundMessage) -> dict:
    item: dict[str, object] = {"text": message.text, "received_at": message.received_at.isoformat()}
    attachments = [a.as_reference() for a in message.attachments.all()]
    if attachments:
        item["attachments"] = attachments
    if message.reaction:
        item["reaction"] = message.reaction
    return item


def _agent_started(bundle: InboundBundle) -> bool:
    """Did the agent act since it was handed this bundle (an event of its own on one of the user's
    tasks, a message to them)? If so, running it again could answer the user twice. The user's own
    texts recorded on their task are no action: the handler records each once, however often it runs."""
    if bundle.handed_over_at is None:
        return False
    profile = bundle.conversation.profile
    if TaskEvent.objects.filter(task__owner_id=profile.user_id, pk__gt=bundle.task_event_mark or 0).exclude(
            actor=TaskEvent.Actor.USER).exists():
        return True
    return OutboundMessage.objects.filter(user_id=profile.user_id, created_at__gte=bundle.handed_over_at).exists()


def dispatch_lease_seconds() -> float:
    """How long a DISPATCHING bundle may stay so before the sweep calls it abandoned: always past
    the dispatch task's hard time limit, so a slow run that is still alive is never taken for dead."""
    return max(float(settings.CHANNELS_DISPATCH_LEASE_SECONDS), DISPATCH_TIME_LIMIT + 60)


def _release_or_fail(bundle: InboundBundle, *, error: str) -> str:
    """After a dispatch that did not finish: back to CLAIMED (dispatched again) when the agent left
    no trace, otherwise FAILED for a person to look at; never re-run an agent that already acted."""
    live = InboundBundle.objects.filter(pk=bundle.pk, status=InboundBundle.Status.DISPATCHING)
    if _agent_started(bundle):
        live.update(status=InboundBundle.Status.FAILED, error=error[:2000])
        return "failed"
    live.update(status=InboundBundle.Status.CLAIMED, handed_over_at=None, task_event_mark=None, heartbeat_at=None,
                error=error[:2000])
    return "released"


def _release_to_resume(bundle: InboundBundle) -> None:
    """A hand-over whose worker died is handed over again, even when the agent had started: the
    agent resumes from its last recorded step (agent.loop.resume), executing a proposed action
    once by its execution key and never repeating one it ran. The attempt cap is the sweep's
    (lindy.jobs.recover): past MAX_DISPATCH_ATTEMPTS it is FAILED for a person to look at."""
    InboundBundle.objects.filter(pk=bundle.pk, status=InboundBundle.Status.DISPATCHING).update(
        status=InboundBundle.Status.CLAIMED, handed_over_at=None, task_event_mark=None, heartbeat_at=None,
        error="The worker stopped while dispatching this bundle (killed or past its time limit).")


def bundle_dispatch(*, bundle_id: int, task_id: str = "") -> str:
    """Hand a claimed bundle to the agent, at most once. The typing bubble starts here.

    Returns "dispatched", "already" (someone else has or had it) or "failed" (the agent failed
    after it had started acting: recorded, not re-run). Raises when the hand-over failed before the
    agent did anything: the bundle is CLAIMED again and the caller may retry."""
    now = timezone.now()
    # The claim (lindy.jobs) also marks where the agent's traces would start (_agent_started): the
    # newest task event and now. A mark taken a moment before the agent is called only errs on the
    # safe side (a failure is less likely to be retried, never more), and costs no statement of its
    # own. A DISPATCHING bundle is never taken over here: only the sweep may, once it knows the
    # agent left no trace.
    bundle = jobs.claim(
        InboundBundle.objects.select_related("conversation__profile__user"), bundle_id, task_id=task_id,
        waiting=Q(status=InboundBundle.Status.CLAIMED), running=Q(pk__in=[]), stale_seconds=dispatch_lease_seconds(),
        now=now, status=InboundBundle.Status.DISPATCHING, handed_over_at=now,
        task_event_mark=Coalesce(Subquery(TaskEvent.objects.order_by("-pk").values("pk")[:1]), Value(0)),
    )
    if bundle is None:
        return "already"
    # Its messages stay claimed by this bundle whatever happens, so they never land in a second one.
    try:
        conversation = bundle.conversation
        # Voice memos are transcribed and photos copied before the hand-over: the agent reads the
        # words and sees the picture, not a file name.
        def load():
            return list(bundle.messages.order_by("received_at", "pk").prefetch_related("attachments"))

        loaded = load()
        if media.messages_prepare(loaded):
            loaded = load()  # with the transcripts and copies just written
        messages = [_message_payload(m) for m in loaded]
        outbound.typing_start(conversation=conversation)
        handler = seams.inbound_handler()
        with jobs.beating(bundle, interval=DISPATCH_HEARTBEAT_SECONDS):
            result = handler(
                user=conversation.profile.user, channel=conversation.channel,
                conversation_ref=conversation.conversation_ref(), messages=messages,
            )
    except Exception as exc:  # SoftTimeLimitExceeded included: a slow run ends here too
        outbound.typing_stop(profile=bundle.conversation.profile)
        if _release_or_fail(bundle, error=f"{type(exc).__name__}: {exc}") == "failed":
            logger.exception("the agent failed on bundle %s after it started; not re-run", bundle_id)
            _fire_pending(bundle.conversation_id)
            return "failed"
        raise
    InboundBundle.objects.filter(pk=bundle_id).update(
        status=InboundBundle.Status.DISPATCHED, dispatched_at=timezone.now(), agent_task_id=getattr(result, "pk", None),
        error="",
    )
    # The bubble ends with the first reply; an agent that chose not to reply must not leave it on.
    outbound.typing_stop(profile=conversation.profile)
    _fire_pending(conversation.pk)
    return "dispatched"


def bundle_give_up(*, bundle_id: int, error: str) -> None:
    InboundBundle.objects.filter(pk=bundle_id).exclude(status=InboundBundle.Status.DISPATCHED).update(
        status=InboundBundle.Status.FAILED, error=error[:2000]
    )


def debounce_recover(*, include_waiting: bool = False) -> dict:
    """Find work a dead worker left behind and queue it again. Safe to run any time, any number
    of times: every step it queues is idempotent."""
    now = timezone.now()
    pending = InboundMessage.objects.filter(conversation__isnull=False, bundle__isnull=True)
    conversations = Conversation.objects.filter(pk__in=pending.values("conversation_id"))
    if not include_waiting:
        conversations = conversations.filter(deadline__lte=now) | Conversation.objects.filter(
            pk__in=pending.values("conversation_id"), deadline__isnull=True
        )
    fired = 0
    for conversation in conversations.distinct():
        delay = max(0.0, (conversation.deadline - now).total_seconds()) if conversation.deadline else 0.0
        queue.task_send(queue.DEBOUNCE_FIRE, conversation.pk, countdown=delay)
        fired += 1
    failed = []

    def redispatch(bundle: InboundBundle) -> bool:
        # A hand-over whose worker went quiet is handed over again; the agent resumes it.
        if bundle.status == InboundBundle.Status.DISPATCHING:
            _release_to_resume(bundle)
        queue.task_send(queue.BUNDLE_DISPATCH, bundle.pk)
        return True

    def give_up(spent) -> None:
        for bundle in spent.filter(status=InboundBundle.Status.DISPATCHING).select_related("conversation__profile"):
            outbound.typing_stop(profile=bundle.conversation.profile)
        failed.extend(spent.values_list("pk", flat=True))
        spent.update(status=InboundBundle.Status.FAILED,
                     error=f"Not handed over after {MAX_DISPATCH_ATTEMPTS} attempts.")

    # Claimed bundles are dispatched again (once per stale window: the re-queued mark), hand-overs
    # whose heartbeat stopped are released first (the agent resumes them); neither past
    # MAX_DISPATCH_ATTEMPTS.
    redispatched = jobs.recover(
        InboundBundle, running=Q(status=InboundBundle.Status.DISPATCHING), also=Q(status=InboundBundle.Status.CLAIMED),
        stale_seconds=DISPATCH_STALE_SECONDS, max_attempts=MAX_DISPATCH_ATTEMPTS, now=now,
        enqueue=redispatch, give_up=give_up)
    return {"conversations": fired, "bundles": len(redispatched), "failed": len(failed)}
