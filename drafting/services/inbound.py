"""From new Gmail items to drafts in the user's Gmail, and from the user's sent mail to
draft-sent pairs.

    hydration stores new Gmail items -> hydration.signals.items_stored
      -> drafting.tasks.items_process(filesystem_id, run_id)        (or the periodic sweep)
        -> inbound_process(item_id) for mail from others: rule, model, draft in the thread
        -> sent_process(item_id) for the user's sent mail: pair with the thread's draft

Each step checks state first (one Draft per message and user, one SentMail per sent message),
so a redelivered task or an overlapping sweep never drafts or pairs twice."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError
from django.db.models import Q
from django.utils import timezone

from agent import services as agent_services
from google_workspace.client import GoogleClient
from google_workspace.errors import GoogleError, NotConnected
from google_workspace.messages import body_text, headers_of
from google_workspace.models import GmailAccount
from hydration.models import Item
from lindy import failures, jobs, queue
from lindy.models import Membership
from memory.models import FileSystem
from router import gateway
from router.types import ModelError

from .. import prompts, rules
from ..models import Draft, SentMail
from .context import context_read
from .pairs import pair_create

logger = logging.getLogger(__name__)

PROCESS_TASK = "drafting.tasks.item_process"
MAX_HISTORY_CHARS = 4000
CLAIM_SECONDS = 600  # above the task's time limit
MAX_ATTEMPTS = 5  # claims of one draft (deliveries, retries) before the sweep gives it up


class Retry(Exception):
    """A transient failure (Gmail or the model unreachable): the task tries again later."""


def _team(user):
    membership = Membership.objects.filter(user=user).select_related("team").order_by("pk").first()
    return membership.team if membership else None


def _recent(item: Item) -> bool:
    return item.occurred_at >= timezone.now() - timedelta(hours=settings.LINDY_DRAFT_LOOKBACK_HOURS)


def candidates(*, filesystem_id: int, run_id: int | None = None, limit: int = 500) -> list[int]:
    """Gmail items of a user's memory that drafting has not looked at yet, recent enough."""
    items = Item.objects.filter(filesystem_id=filesystem_id, filesystem__kind=FileSystem.Kind.USER, source="gmail",
                                occurred_at__gte=timezone.now() - timedelta(hours=settings.LINDY_DRAFT_LOOKBACK_HOURS))
    if run_id is not None:
        items = items.filter(fetched_by_id=run_id)
    owner = FileSystem.objects.filter(pk=filesystem_id).values_list("owner_id", flat=True).first()
    if owner is None:
        return []
    seen = set(Draft.objects.filter(user_id=owner, item__in=items).values_list("item_id", flat=True))
    seen |= set(SentMail.objects.filter(user_id=owner, item__in=items).values_list("item_id", flat=True))
    return [pk for pk in items.order_by("occurred_at", "pk").values_list("pk", flat=True)[:limit] if pk not in seen]


def items_enqueue(*, filesystem_id: int, run_id: int | None = None) -> int:
    """Queue one task per Gmail item drafting has not looked at yet."""
    if not settings.LINDY_DRAFTING_ENABLED:
        return 0
    ids = candidates(filesystem_id=filesystem_id, run_id=run_id)
    for item_id in ids:
        queue.enqueue_or_log(PROCESS_TASK, item_id)
    return len(ids)


def sweep() -> int:
    """The safety net behind the signal: every user memory with recent unexamined Gmail items."""
    since = timezone.now() - timedelta(hours=settings.LINDY_DRAFT_LOOKBACK_HOURS)
    systems = (Item.objects.filter(source="gmail", filesystem__kind=FileSystem.Kind.USER, occurred_at__gte=since)
               .values_list("filesystem_id", flat=True).distinct())
    drafts_recover()
    return sum(items_enqueue(filesystem_id=fs_id) for fs_id in systems)


@failures.captures("drafting_step", lambda *, item_id, task_id="": {"route": "drafting",
                                                                    "run": f"drafting of item {item_id}"})
def item_process(*, item_id: int, task_id: str = "") -> str:
    """Draft a reply to an inbound email, or pair the user's sent email with its draft."""
    item = Item.objects.select_related("filesystem__owner").filter(pk=item_id).first()
    if item is None or item.source != "gmail" or item.filesystem.kind != FileSystem.Kind.USER:
        return "not a user's Gmail item"
    if item.author_kind == Item.AuthorKind.OWNER:
        return sent_process(item=item)
    if not _recent(item):
        return "too old to draft"
    return inbound_process(item=item, task_id=task_id)


# --- Gmail ---------------------------------------------------------------------------------------

def _client(user) -> GoogleClient:
    account = GmailAccount.objects.filter(user=user).first()
    if account is None or account.status != GmailAccount.Status.CONNECTED:
        raise NotConnected("Gmail is not connected.")
    return GoogleClient(account)


def _own_addresses(user) -> set[str]:
    emails = {user.email, *GmailAccount.objects.filter(user=user).values_list("email", flat=True)}
    return {e.strip().casefold() for e in emails if e}


def _at(message: dict) -> str:
    internal = int(message.get("internalDate") or 0)
    return datetime.fromtimestamp(internal / 1000, tz=UTC).isoformat() if internal else ""


def _as_message(message: dict) -> prompts.Message:
    payload = message.get("payload") or {}
    headers = headers_of(payload)
    return prompts.Message(sender=headers.get("from", ""), to=headers.get("to", ""),
                           subject=headers.get("subject", ""),
                           body=(body_text(payload) or message.get("snippet", ""))[:prompts.MAX_BODY_CHARS],
                           at=_at(message))


# --- Inbound mail: a draft -----------------------------------------------------------------------

def inbound_process(*, item: Item, task_id: str = "") -> str:
    user = item.filesystem.owner
    team = _team(user)
    if team is None:
        return "the user has no team"
    try:
        draft, _ = Draft.objects.get_or_create(
            user=user, gmail_message_id=item.external_id,
            defaults={"team": team, "item": item, "inbound_subject": item.title[:300], "inbound_at": item.occurred_at})
    except IntegrityError:
        draft = Draft.objects.get(user=user, gmail_message_id=item.external_id)
    # Claimed by one worker at a time (a lease, not a lock: the Gmail draft is saved through the
    # outbox, which must commit its row before Gmail hears of it, outside any transaction of ours).
    # Nobody holds a draft whose heartbeat is empty; a holder is dead past CLAIM_SECONDS (no thread
    # beats: that is longer than the task may run) or when its own task is delivered again.
    claimed = jobs.claim(Draft.objects.all(), draft.pk, task_id=task_id,
                         waiting=Q(status=Draft.Status.PENDING, heartbeat_at__isnull=True),
                         running=Q(status=Draft.Status.PENDING, heartbeat_at__isnull=False),
                         stale_seconds=CLAIM_SECONDS, max_attempts=MAX_ATTEMPTS)
    if claimed is None:
        return "already handled"
    try:
        return _draft(claimed, user, team)
    finally:
        Draft.objects.filter(jobs.held(claimed)).update(heartbeat_at=None)


def drafts_recover(*, now=None) -> list[int]:
    """Part of the sweep: draft again, once, each inbound email whose worker died while drafting it
    (its item has a draft row, so the item sweep no longer sees it); one whose workers died
    MAX_ATTEMPTS times is marked failed."""
    now = now or timezone.now()
    return jobs.recover(
        Draft, running=Q(status=Draft.Status.PENDING, heartbeat_at__isnull=False, item__isnull=False),
        stale_seconds=CLAIM_SECONDS, max_attempts=MAX_ATTEMPTS, now=now,
        enqueue=lambda draft: queue.enqueue_or_log(PROCESS_TASK, draft.item_id),
        give_up={"status": Draft.Status.FAILED, "heartbeat_at": None,
                 "error": f"Its worker died in each of {MAX_ATTEMPTS} attempts."})


def _skip(draft: Draft, reason: str) -> str:
    draft.status, draft.skip_reason = Draft.Status.SKIPPED, reason[:300]
    draft.save()
    return f"skipped: {reason}"


def _draft(draft: Draft, user, team) -> str:
    return draft_inbound(draft=draft, user=user, team=team, gmail=_client(user))


def draft_inbound(*, draft: Draft, user, team, gmail) -> str:
    """The drafting step on one claimed inbound email: read it and its thread from Gmail, apply
    the rules, ask the model, save the draft (through the outbox). `gmail` is the user's
    GoogleClient, or anything answering its `get(path, params)` and `close()` with Gmail's shapes:
    the learner simulation hands in its simulated mailbox here, so it drafts with this very code."""
    client = gmail
    try:
        message = client.get(f"messages/{draft.gmail_message_id}", {"format": "full"})
        thread_id = message.get("threadId", "")
        thread = client.get(f"threads/{thread_id}", {"format": "full"}) if thread_id else {"messages": [message]}
    except NotConnected as exc:
        draft.status, draft.error = Draft.Status.FAILED, str(exc)[:2000]
        draft.save()
        return "failed: Gmail is disconnected"
    except GoogleError as exc:
        raise Retry(str(exc)) from exc
    finally:
        client.close()
    payload = message.get("payload") or {}
    headers = headers_of(payload)
    last = _as_message(message)
    draft.gmail_thread_id = thread_id
    draft.rfc_message_id = headers.get("message-id", "")[:998]
    draft.references = " ".join(x for x in (headers.get("references", ""), draft.rfc_message_id) if x).strip()
    draft.inbound_from, draft.inbound_to = last.sender[:320], last.to
    draft.inbound_subject, draft.inbound_body = last.subject[:300], last.body
    own = _own_addresses(user)
    reason = rules.skip_reason(headers=headers, labels=message.get("labelIds") or [], own_addresses=own)
    if reason:
        return _skip(draft, reason)
    messages = sorted(thread.get("messages") or [message], key=lambda m: int(m.get("internalDate") or 0))
    index = next((i for i, m in enumerate(messages) if m.get("id") == draft.gmail_message_id), len(messages) - 1)
    later = messages[index + 1:]
    if any(rules.address(headers_of(m.get("payload") or {}).get("from", "")) in own and "DRAFT" not in
           (m.get("labelIds") or []) for m in later):
        return _skip(draft, "The user already answered in this thread.")
    if Draft.objects.filter(user=user, gmail_thread_id=thread_id, status__in=[Draft.Status.SAVED, Draft.Status.RECORDED],
                            inbound_at__gt=draft.inbound_at or timezone.now()).exists():
        return _skip(draft, "A newer email of this thread has a draft.")
    earlier = [_as_message(m) for m in messages[:index] if "DRAFT" not in (m.get("labelIds") or [])]
    for m in earlier:
        m.body = m.body[:MAX_HISTORY_CHARS]
    thread_input = prompts.Thread(user_name=user.display_name, user_email=user.email, last=last,
                                  earlier=earlier[-prompts.MAX_HISTORY:])
    context = context_read(user)
    assignment = gateway.assign(prompts.ROUTE, user)
    request = prompts.build_draft_request(context=context.text, thread=thread_input,
                                          variant=assignment.prompt_variant)
    draft.request, draft.thread = request, thread_input.as_dict()
    draft.context_text, draft.context_sha256 = context.text, context.sha256
    draft.context_version, draft.context_revision_id = context.version, context.revision_id
    draft.target_name, draft.prompt_variant, draft.arm = (assignment.target.name, assignment.prompt_variant,
                                                          assignment.arm)
    try:
        completion = gateway.complete(route=prompts.ROUTE, user=user, team=team, system=request["system"],
                                      messages=request["messages"], max_tokens=request["max_tokens"],
                                      assignment=assignment, metadata={"draft_id": draft.pk}, budget_wait=0)
    except ModelError as exc:
        draft.save()  # what was asked is kept; the status stays pending for the retry
        raise Retry(str(exc)) from exc
    draft.model_call_id = completion.call_id
    draft.prompt_variant = completion.prompt_variant
    reply = prompts.parse_reply(completion.text)
    if not reply.needed:
        draft.triage_call_id = completion.call_id
        return _skip(draft, f"The model: {reply.reason}")
    if not reply.body:
        draft.status, draft.error = Draft.Status.FAILED, "The model answered with an empty draft."
        draft.save()
        return "failed: empty draft"
    reply_to = headers.get("reply-to") or last.sender
    draft.to = [rules.address(reply_to) or rules.address(last.sender)]
    subject = last.subject or ""
    draft.subject = (subject if subject.lower().startswith("re:") else f"Re: {subject}".strip())[:300]
    draft.body = reply.body
    cc = [c for c in reply.cc if c.casefold() not in own and c.casefold() not in draft.to]
    result = agent_services.gmail_draft_save(
        user=user, team=team, to=draft.to, subject=draft.subject, body=draft.body, cc=cc, thread_id=thread_id,
        in_reply_to=draft.rfc_message_id, references=draft.references)
    if not result.ok:
        draft.status, draft.error = Draft.Status.FAILED, result.content[:2000]
        draft.save()
        return f"failed: {result.content}"
    draft.gmail_draft_id = str(result.data.get("provider_id") or "")[:255]
    draft.status = Draft.Status.SAVED if draft.gmail_draft_id else Draft.Status.RECORDED
    draft.request = {**request, "cc": cc}
    draft.save()
    return draft.status


# --- Sent mail: a pair ---------------------------------------------------------------------------

def sent_process(*, item: Item) -> str:
    user = item.filesystem.owner
    try:
        seen, created = SentMail.objects.get_or_create(user=user, gmail_message_id=item.external_id,
                                                       defaults={"item": item})
    except IntegrityError:
        return "already looked at"
    if not created:
        return "already looked at"
    try:
        client = _client(user)
        try:
            message = client.get(f"messages/{item.external_id}", {"format": "full"})
        finally:
            client.close()
    except NotConnected as exc:
        seen.note = f"Gmail disconnected: {exc}"[:300]
        seen.save()
        return "Gmail is disconnected"
    except GoogleError as exc:
        seen.delete()  # looked at again on the retry
        raise Retry(str(exc)) from exc
    seen.gmail_thread_id = message.get("threadId", "")
    sent_at = datetime.fromtimestamp(int(message.get("internalDate") or 0) / 1000, tz=UTC) \
        if message.get("internalDate") else item.occurred_at
    draft = (Draft.objects.filter(user=user, gmail_thread_id=seen.gmail_thread_id,
                                  status__in=[Draft.Status.SAVED, Draft.Status.RECORDED], pair__isnull=True,
                                  created_at__lte=sent_at)
             .order_by("-created_at").first()) if seen.gmail_thread_id else None
    if draft is None:
        seen.note = "No draft in this thread to pair with."
        seen.save()
        return "no draft"
    body = body_text(message.get("payload") or {}) or message.get("snippet", "")
    pair_create(draft=draft, sent_item=item, sent_message_id=item.external_id, sent_body=body, sent_at=sent_at)
    seen.paired = True
    seen.note = f"Paired with draft {draft.pk}."
    seen.save()
    return "paired"
