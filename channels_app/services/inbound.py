"""Inbound texts: stored the moment they arrive, then debounced into one bundle for the agent.

The debounce window's deadline lives on the Conversation row, not only in a countdown task, and a
bundle is claimed with a conditional update: a worker killed at any point loses nothing (the
recovery sweep finds what is due) and no message is handed to the agent twice.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import httpx
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.text import get_valid_filename

from lindy.models import TaskEvent

from ..models import (
    Channel,
    Conversation,
    InboundAttachment,
    InboundBundle,
    InboundMessage,
    OutboundMessage,
    SendingNumber,
    TextingProfile,
    WebhookEvent,
)
from . import outbound, pool

logger = logging.getLogger(__name__)

# After this many failed hand-overs a bundle is left FAILED for a person to look at.
MAX_DISPATCH_ATTEMPTS = 6
# The dispatch task runs the agent synchronously: its time limits (tasks.bundle_dispatch).
DISPATCH_SOFT_TIME_LIMIT = 540
DISPATCH_TIME_LIMIT = 600


def webhook_event_claim(*, source: str, event_id: str, event_type: str = "") -> bool:
    """True the first time an event id is seen; a provider's retry gets False."""
    try:
        with transaction.atomic():
            WebhookEvent.objects.create(source=source, event_id=event_id, event_type=event_type[:60])
    except IntegrityError:
        return False
    return True


def _safe_phone(value: str) -> str:
    try:
        return pool.phone_normalize(value)
    except ValueError:
        return (value or "")[:20]


def inbound_store(
    *, channel: str, provider_id: str, from_phone: str, to_phone: str, text: str = "",
    attachments: list[dict] | None = None, reaction: dict | None = None, chat_id: str = "",
    received_at=None, history: bool = False,
) -> InboundMessage | None:
    """Store one inbound message and (re)start its conversation's debounce window.
    `history`: a late, reconciled message: kept, never answered.
    Returns None for a duplicate (already stored under the same provider id)."""
    from .. import tasks

    now = timezone.now()
    from_phone, to_phone = _safe_phone(from_phone), _safe_phone(to_phone)
    with transaction.atomic():
        number = SendingNumber.objects.filter(phone=to_phone).first()
        profile = TextingProfile.objects.select_for_update().filter(phone=from_phone).first()
        try:
            with transaction.atomic():
                message = InboundMessage.objects.create(
                    channel=channel, provider_id=provider_id, from_phone=from_phone, number=number, profile=profile,
                    text=text, reaction=reaction, received_at=received_at or now,
                )
        except IntegrityError:
            return None
        for part in attachments or []:
            InboundAttachment.objects.create(
                message=message, provider_id=str(part.get("id", ""))[:100],
                filename=get_valid_filename(part.get("filename") or "attachment")[:255],
                mime_type=str(part.get("mime_type", ""))[:100], size_bytes=int(part.get("size_bytes") or 0),
                source_url=str(part.get("url", "")),
            )
        pool.stat_add(number=number, field="received")
        if profile is None:
            logger.info("Inbound %s from a phone no user registered; stored, not dispatched", message.pk)
            return message
        _profile_learn(profile, channel=channel, number=number, chat_id=chat_id, now=now)
        if history:
            return message
        conversation, _ = Conversation.objects.select_for_update().get_or_create(profile=profile)
        window = timedelta(seconds=settings.CHANNELS_DEBOUNCE_SECONDS)
        Conversation.objects.filter(pk=conversation.pk).update(
            deadline=now + window, version=F("version") + 1, channel=channel
        )
        InboundMessage.objects.filter(pk=message.pk).update(conversation=conversation)
        conversation_id = conversation.pk
        # Read back after our write: we hold the row (or, on SQLite, the database) now.
        version = Conversation.objects.values_list("version", flat=True).get(pk=conversation_id)
        attachment_ids = list(message.attachments.values_list("pk", flat=True))
        transaction.on_commit(lambda: _enqueue(
            tasks.debounce_fire, conversation_id, version, countdown=settings.CHANNELS_DEBOUNCE_SECONDS
        ))
        for attachment_id in attachment_ids:
            transaction.on_commit(lambda a=attachment_id: _enqueue(tasks.attachment_store, a))
    return message


def _enqueue(task, *args, countdown: float | None = None) -> None:
    """The message is already stored: a broker hiccup must not fail the webhook (the provider
    would retry a message we have). The recovery sweep queues whatever is due."""
    try:
        task.apply_async(args, countdown=countdown)
    except Exception:
        logger.exception("could not queue %s%s; the recovery sweep will", task.name, args)


def _profile_learn(profile: TextingProfile, *, channel: str, number, chat_id: str, now) -> None:
    """Users text first: the first text opens the thread, and the line they texted is theirs."""
    changes = {}
    if profile.first_texted_at is None:
        changes["first_texted_at"] = now
    if number is not None and number.kind == Channel.IMESSAGE and (
        profile.number_id is None or (profile.first_texted_at is None and profile.number_id != number.pk)
    ):
        changes["number"] = number
    if number is not None and number.kind == Channel.SMS and profile.sms_number_id is None:
        changes["sms_number"] = number
    if channel == Channel.IMESSAGE:
        changes.update(imessage_capable=True, capability_checked_at=now)
        if chat_id and profile.chat_id != chat_id:
            changes["chat_id"] = chat_id
    for field, value in changes.items():
        setattr(profile, field, value)
    if changes:
        profile.save(update_fields=list(changes))


def debounce_fire(*, conversation_id: int, version: int | None = None) -> tuple[str, float]:
    """Claim the conversation's pending messages if its window has closed.
    Returns ("wait", seconds) while the window is open, ("dispatch", bundle_id), ("nothing", 0),
    ("superseded", 0) when a later message (`version` is stale) queued its own check, or ("busy", 0)
    while an earlier bundle of the conversation is with the agent (it fires this again when done)."""
    now = timezone.now()
    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
        if conversation is None:
            return ("nothing", 0)
        pending = InboundMessage.objects.filter(conversation=conversation, bundle__isnull=True)
        if not pending.exists():
            return ("nothing", 0)
        if conversation.deadline and conversation.deadline > now:
            if version is not None and version != conversation.version:
                return ("superseded", 0)
            return ("wait", (conversation.deadline - now).total_seconds())
        if _in_flight(conversation.pk).exists():
            # The agent is still on this conversation's previous bundle: these messages go next,
            # once its reply is in the history, so it never answers the earlier ones again.
            return ("busy", 0)
        bundle = InboundBundle.objects.create(conversation=conversation, claimed_at=now)
        # The conditional update is the claim: a concurrent claimer finds nothing left.
        claimed = InboundMessage.objects.filter(conversation=conversation, bundle__isnull=True).update(bundle=bundle)
        if not claimed:
            bundle.delete()
            return ("nothing", 0)
        Conversation.objects.filter(pk=conversation.pk).update(deadline=None)
    return ("dispatch", bundle.pk)


def _in_flight(conversation_id: int):
    """Bundles of the conversation the agent has, or will have again (a retry is due)."""
    return InboundBundle.objects.filter(conversation_id=conversation_id).filter(
        Q(status=InboundBundle.Status.DISPATCHING)
        | Q(status=InboundBundle.Status.CLAIMED, attempts__lt=MAX_DISPATCH_ATTEMPTS)
    )


def _fire_pending(conversation_id: int) -> None:
    """A bundle left the agent: messages that came in meanwhile are next."""
    from .. import tasks

    if not InboundMessage.objects.filter(conversation_id=conversation_id, bundle__isnull=True).exists():
        return
    deadline = Conversation.objects.filter(pk=conversation_id).values_list("deadline", flat=True).first()
    delay = max(0.0, (deadline - timezone.now()).total_seconds()) if deadline else 0.0
    _enqueue(tasks.debounce_fire, conversation_id, countdown=delay)


def _message_payload(message: InboundMessage) -> dict:
    item = {"text": message.text, "received_at": message.received_at.isoformat()}
    attachments = [a.as_reference() for a in message.attachments.all()]
    if attachments:
        item["attachments"] = attachments
    if message.reaction:
        item["reaction"] = message.reaction
    return item


def _agent_started(bundle: InboundBundle) -> bool:
    """Did the agent leave any trace since it was handed this bundle (an event on one of the
    user's tasks, a message to them)? If so, running it again could answer the user twice."""
    if bundle.handed_over_at is None:
        return False
    profile = bundle.conversation.profile
    if TaskEvent.objects.filter(task__owner_id=profile.user_id, pk__gt=bundle.task_event_mark or 0).exists():
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
    live.update(status=InboundBundle.Status.CLAIMED, handed_over_at=None, task_event_mark=None, error=error[:2000])
    return "released"


def bundle_dispatch(*, bundle_id: int) -> str:
    """Hand a claimed bundle to the agent, at most once. The typing bubble starts here.

    Returns "dispatched", "already" (someone else has or had it) or "failed" (the agent failed
    after it had started acting: recorded, not re-run). Raises when the hand-over failed before the
    agent did anything: the bundle is CLAIMED again and the caller may retry."""
    now = timezone.now()
    taken = InboundBundle.objects.filter(pk=bundle_id, status=InboundBundle.Status.CLAIMED).update(
        status=InboundBundle.Status.DISPATCHING, claimed_at=now, attempts=F("attempts") + 1
    )
    if not taken:
        return "already"
    # Its messages stay claimed by this bundle whatever happens, so they never land in a second one.
    bundle = None
    try:
        bundle = InboundBundle.objects.select_related("conversation__profile__user").get(pk=bundle_id)
        conversation = bundle.conversation
        messages = [
            _message_payload(m) for m in bundle.messages.order_by("received_at", "pk").prefetch_related("attachments")
        ]
        outbound.typing_start(conversation=conversation)
        handler = import_string(settings.LINDY_INBOUND_HANDLER)
        bundle.task_event_mark = TaskEvent.objects.aggregate(last=Max("pk"))["last"] or 0
        bundle.handed_over_at = timezone.now()
        InboundBundle.objects.filter(pk=bundle_id).update(
            handed_over_at=bundle.handed_over_at, task_event_mark=bundle.task_event_mark
        )
        result = handler(
            user=conversation.profile.user, channel=conversation.channel,
            conversation_ref=conversation.conversation_ref(), messages=messages,
        )
    except Exception as exc:  # SoftTimeLimitExceeded included: a slow run ends here too
        if bundle is None:
            InboundBundle.objects.filter(pk=bundle_id).update(status=InboundBundle.Status.CLAIMED, error=str(exc)[:2000])
            raise
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
    from .. import tasks

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
        tasks.debounce_fire.apply_async((conversation.pk,), countdown=delay)
        fired += 1
    stale = now - timedelta(seconds=dispatch_lease_seconds())
    abandoned = InboundBundle.objects.filter(
        status=InboundBundle.Status.DISPATCHING, claimed_at__lt=stale
    ).select_related("conversation__profile")
    failed = 0
    for bundle in abandoned:
        outcome = _release_or_fail(
            bundle, error="The worker stopped while dispatching this bundle (killed or past its time limit)."
        )
        if outcome == "failed":
            outbound.typing_stop(profile=bundle.conversation.profile)
            failed += 1
    redispatched = 0
    retryable = InboundBundle.objects.filter(status=InboundBundle.Status.CLAIMED, attempts__lt=MAX_DISPATCH_ATTEMPTS)
    for bundle_id in retryable.values_list("pk", flat=True):
        tasks.bundle_dispatch.delay(bundle_id)
        redispatched += 1
    return {"conversations": fired, "bundles": redispatched, "failed": failed}


def attachment_store(*, attachment_id: int) -> bool:
    """Keep our own copy of an attachment: the provider's URL expires within the hour."""
    attachment = InboundAttachment.objects.filter(pk=attachment_id).first()
    if attachment is None or attachment.stored_at:
        return False
    root = Path(settings.CHANNELS_MEDIA_ROOT)
    relative = Path(str(attachment.message_id)) / f"{attachment.pk}-{attachment.filename or 'attachment'}"
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with httpx.stream("GET", attachment.source_url, timeout=30, follow_redirects=True) as response:
        response.raise_for_status()
        with open(target, "wb") as handle:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > settings.CHANNELS_MAX_ATTACHMENT_BYTES:
                    handle.close()
                    target.unlink(missing_ok=True)
                    raise ValueError("attachment larger than CHANNELS_MAX_ATTACHMENT_BYTES")
                handle.write(chunk)
    InboundAttachment.objects.filter(pk=attachment.pk).update(
        stored_path=str(relative), stored_at=timezone.now(), size_bytes=size
    )
    return True


@transaction.atomic
def linq_event_process(*, payload: dict) -> str:
    """One verified webhook from the managed iMessage API. Returns what happened."""
    event_id = str(payload.get("event_id") or "")
    event_type = str(payload.get("event_type") or "")
    data = payload.get("data") or {}
    if not event_id or not isinstance(data, dict):
        raise ValueError("event_id and data are required")
    if not webhook_event_claim(source="linq", event_id=event_id, event_type=event_type):
        return "duplicate"
    if event_type == "message.received":
        if data.get("direction", "inbound") != "inbound":
            return "ignored"
        chat = data.get("chat") or {}
        if chat.get("is_group"):
            return "ignored"
        sender = (data.get("sender_handle") or {}).get("handle", "")
        owner = (chat.get("owner_handle") or {}).get("handle", "")
        parts = data.get("parts") or []
        text = "\n".join(str(p.get("value", "")) for p in parts if isinstance(p, dict) and p.get("type") in ("text", "link"))
        media = [p for p in parts if isinstance(p, dict) and p.get("type") == "media"]
        service = str(data.get("service") or "iMessage")
        inbound_store(
            channel=Channel.IMESSAGE if service.lower() == "imessage" else Channel.SMS, provider_id=event_id,
            from_phone=sender, to_phone=owner, text=text, attachments=media, chat_id=str(chat.get("id", "")),
            # Recovered by the provider's reconciliation: late and out of order, so it is history.
            history=bool(data.get("reconciled_at")),
        )
        return "stored"
    if event_type == "reaction.added":
        if data.get("is_from_me"):
            return "ignored"
        sender = (data.get("from_handle") or {}).get("handle") or data.get("from", "")
        profile = TextingProfile.objects.filter(phone=_safe_phone(sender)).select_related("number").first()
        reaction = {
            "type": data.get("reaction_type", ""), "emoji": data.get("custom_emoji") or "",
            "message_id": data.get("message_id", ""),
        }
        inbound_store(
            channel=Channel.IMESSAGE, provider_id=event_id, from_phone=sender,
            to_phone=profile.number.phone if profile and profile.number_id else "", reaction=reaction,
            chat_id=str(data.get("chat_id", "")),
        )
        return "stored"
    if event_type == "message.failed":
        message_id = str(data.get("message_id") or "")
        if message_id:
            outbound.imessage_failed(
                provider_id=message_id, reason=f"delivery failed: {data.get('reason') or data.get('code') or ''}"
            )
        return "recorded"
    return "ignored"


@transaction.atomic
def twilio_inbound_process(*, params: dict) -> str:
    sid = str(params.get("MessageSid") or params.get("SmsSid") or "")
    if not sid:
        raise ValueError("MessageSid is required")
    if not webhook_event_claim(source="twilio", event_id=sid, event_type="sms.received"):
        return "duplicate"
    try:
        count = min(int(params.get("NumMedia") or 0), 10)
    except ValueError:
        count = 0
    media = [
        {"id": f"{sid}-{i}", "filename": f"media-{i}", "mime_type": params.get(f"MediaContentType{i}", ""),
         "url": params.get(f"MediaUrl{i}", "")}
        for i in range(count) if params.get(f"MediaUrl{i}")
    ]
    inbound_store(
        channel=Channel.SMS, provider_id=sid, from_phone=params.get("From", ""), to_phone=params.get("To", ""),
        text=str(params.get("Body") or ""), attachments=media,
    )
    return "stored"
