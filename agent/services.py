"""Every write of the agent app: which task a conversation feeds, the inbound seam channels
call, running the loop, and executing what the validator allowed or the user authorized."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from lindy import failures, queue, services
from lindy.models import AgentTask, Membership, TaskEvent
from router.types import NO_SPEECH_MODEL
from validator import runner as validator_runner
from validator import services as validator_services
from validator.models import Decision

from . import loop, tools
from .models import OpenTask, OutboxEntry
from .tools.execution import Rejected, result_for

logger = logging.getLogger(__name__)

AGENT_RUN_TASK = "agent.tasks.agent_run"


def _team_of(user):
    membership = Membership.objects.filter(user=user).select_related("team").order_by("team__name").first()
    if membership is None:
        raise ValueError(f"{user} belongs to no team: the assistant has nowhere to record the task.")
    return membership.team


def _received_at(value) -> datetime:
    if isinstance(value, datetime):
        return value
    parsed = parse_datetime(value) if isinstance(value, str) else None
    return parsed or timezone.now()


def _message_text(message: dict) -> str:
    parts = [str(message.get("text") or "").strip()]
    if message.get("reaction"):
        parts.append(f"[reacted {message['reaction']}]")
    for attachment in message.get("attachments") or []:
        if isinstance(attachment, dict) and attachment.get("kind") == "voice_memo":
            parts.append(_voice_memo_text(attachment))
            continue
        if isinstance(attachment, dict) and attachment.get("kind") == "photo":
            # The number the model sees next to the image itself (agent.loop, channels_app.images).
            parts.append(f"[photo #{attachment.get('id')}: {attachment.get('filename') or 'image'}]")
            continue
        if isinstance(attachment, dict):
            label = attachment.get("name") or attachment.get("filename") or attachment.get("url") or "file"
        else:
            label = str(attachment)
        parts.append(f"[attachment: {label}]")
    return " ".join(p for p in parts if p)


def _voice_memo_text(attachment: dict) -> str:
    """The user's spoken words become their message; a failed transcription is said, never hidden.
    Without a speech model the memo was not heard: the agent must not read it as empty."""
    transcript = str(attachment.get("transcript") or "").strip()
    if transcript:
        return f"[voice memo, transcribed: {transcript}]"
    error = str(attachment.get("transcription_error") or "not transcribed").strip()
    if error.startswith(NO_SPEECH_MODEL):
        return f"[voice memo: could not be heard, it was not empty — {error}]"
    return f"[voice memo: transcription failed: {error}]"


def conversation_task(*, user, channel: str, conversation_ref: str, first_text: str) -> AgentTask:
    """The user's open task for this conversation, or a new one when the last message is older
    than LINDY_AGENT_CONVERSATION_IDLE_HOURS."""
    idle = timedelta(hours=getattr(settings, "LINDY_AGENT_CONVERSATION_IDLE_HOURS", 12))
    now = timezone.now()
    with transaction.atomic():
        open_task = (
            OpenTask.objects.select_for_update().select_related("task")
            .filter(user=user, channel=channel, conversation_ref=conversation_ref).first()
        )
        if open_task is not None and now - open_task.last_inbound_at < idle:
            open_task.last_inbound_at = now
            open_task.save(update_fields=["last_inbound_at"])
            return open_task.task
        title = (first_text or "Conversation").strip().splitlines()[0][:120] or "Conversation"
        task = services.task_create(team=_team_of(user), owner=user, title=f"{title} ({channel})")
        OpenTask.objects.update_or_create(
            user=user, channel=channel, conversation_ref=conversation_ref,
            defaults={"task": task, "last_inbound_at": now},
        )
        return task


def handle_inbound(*, user, channel: str, conversation_ref: str, messages: list[dict]) -> AgentTask:
    """The hook channels call (registered in lindy.seams by apps.py): record a debounced bundle of the
    user's messages on their conversation task, then run the agent on it. Synchronously:
    channels call it from their own debounce Celery task, so the work already runs in a worker."""
    texts = [_message_text(m) for m in messages]
    task = conversation_task(user=user, channel=channel, conversation_ref=conversation_ref,
                             first_text=next((t for t in texts if t), ""))
    # Channels hand a bundle over again when the worker died during the hand-over: each text is
    # recorded once (the same words at the same received time), and a task answered meanwhile is
    # not run again.
    for message, text in zip(messages, texts, strict=True):
        received_at = _received_at(message.get("received_at"))
        if text and not task.events.filter(actor=TaskEvent.Actor.USER, content=text, created_at=received_at).exists():
            services.task_event_add(task=task, actor=TaskEvent.Actor.USER, content=text, created_at=received_at)
    # Handed over again after a worker died mid-run: the agent resumes from its last recorded step.
    loop.resume(task, channel=channel)
    return task


def agent_run(*, task_id: int) -> str:
    """Run the agent on a task that has a new instruction: from the user, or a system note (a
    suggestion the user chose to follow). Idempotent: a task whose last event is neither has been
    answered already."""
    task = AgentTask.objects.filter(pk=task_id).first()
    if task is None:
        return "gone"
    last = task.events.order_by("-seq").values_list("actor", flat=True).first()
    if last not in (TaskEvent.Actor.USER, TaskEvent.Actor.SYSTEM):
        return "answered"
    return loop.run(task).stopped


def task_continue(*, task_id: int) -> None:
    """Let the agent continue a task in the background, once the caller's transaction commits."""
    # The caller's change is committed by then: a broker that went away since is logged, not a 500.
    transaction.on_commit(lambda: queue.enqueue_or_log(AGENT_RUN_TASK, task_id))


def decision_execute(*, decision: Decision) -> tools.ToolResult:
    """Run the action of a decision the user authorized. Never raises: a failure is a result."""
    try:
        return tools.execute(
            tools.ExecutionContext(user=decision.user, team=decision.team, task=decision.task, decision=decision),
            decision.tool, decision.arguments,
        )
    except Exception as exc:
        # The claim stands (the action must never run twice); the failure is recorded and shown.
        logger.exception("executing authorized decision %s failed", decision.pk)
        failures.capture(exc, kind="tool_call", route=decision.tool, task_id=decision.task_id,
                         user_id=decision.user_id, team_id=decision.team_id, run=f"decision {decision.pk}")
        return tools.ToolResult(ok=False, adapter="", content=f"Execution failed: {type(exc).__name__}: {exc}")


def outbox_resume(*, older_than_seconds: int | None = None, limit: int = 50) -> int:
    """Live actions left "not confirmed" (a worker killed during the provider call, or the
    provider unavailable through the whole retry budget) are driven again: each asks the
    provider first, so none happens twice. Rows another worker holds are skipped. One older than
    LINDY_ACTION_GIVE_UP_HOURS is not done any more (an email a day late is a surprise): it is
    only looked for, and fails if it did not happen — the sweep never retries forever."""
    age = settings.LINDY_ACTION_RESUME_AFTER_SECONDS if older_than_seconds is None else older_than_seconds
    cutoff = timezone.now() - timedelta(seconds=age)
    too_old = timezone.now() - timedelta(hours=settings.LINDY_ACTION_GIVE_UP_HOURS)
    ids = list(OutboxEntry.objects.filter(status=OutboxEntry.Status.PENDING, updated_at__lte=cutoff,
                                          execution_key__isnull=False).order_by("updated_at")
               .values_list("pk", flat=True)[:limit])
    resumed = 0
    for entry_id in ids:
        with transaction.atomic():
            entry = (OutboxEntry.objects.select_for_update(skip_locked=True)
                     .filter(pk=entry_id, status=OutboxEntry.Status.PENDING).first())
            if entry is None:
                continue
            try:
                result = tools.resume(entry, last_chance=entry.created_at < too_old)
            except Rejected as exc:
                entry.status, entry.error = OutboxEntry.Status.FAILED, str(exc)
                entry.save(update_fields=["status", "error", "updated_at"])
                result = result_for(entry, tools.ToolResult)
        resumed += 1
        if entry.decision_id is not None:
            validator_services.decision_result_update(decision_id=entry.decision_id, result=result.as_dict())
    return resumed


def gmail_draft_save(*, user, team, to: list[str], subject: str, body: str, cc: list[str] | None = None,
                     draft_id: str = "", thread_id: str = "", in_reply_to: str = "", references: str = "",
                     task: AgentTask | None = None) -> tools.ToolResult:
    """Save an email draft in the user's Gmail: a new draft, or draft `draft_id` replaced (for
    email drafting, which revises its draft). Recorded in the outbox like every action; with
    Gmail actions off it is recorded, not saved. The result's data carries the draft id."""
    arguments = {"to": list(to), "subject": subject, "body": body}
    extra = {"cc": list(cc or []), "draft_id": draft_id, "thread_id": thread_id, "in_reply_to": in_reply_to,
             "references": references}
    arguments.update({key: value for key, value in extra.items() if value})
    return tools.execute(tools.ExecutionContext(user=user, team=team, task=task), "draft_email", arguments)


class ActionRunner:
    """What the validator's review pages call to run an authorized action or continue a task
    (registered in AgentConfig.ready; see validator.runner)."""

    def execute(self, decision: Decision) -> validator_runner.Execution:
        return decision_execute(decision=decision)

    def recorded_only(self, tool: str, team_ids: list[int], user=None) -> bool:
        return tools.recorded_only(tool, team_ids, user)

    def continue_task(self, task_id: int) -> None:
        task_continue(task_id=task_id)
