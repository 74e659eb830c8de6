"""Exactly-once execution of actions that reach an outside provider (Gmail, Google Calendar).

    run_once(ctx, "send_email", arguments, action, ToolResult)

1. An execution key (the authorized decision, or the task's current instruction and the action's
   arguments) is stored on a `pending` outbox row BEFORE the provider is called.
2. A second run with the same key (the user authorizes again, a redelivered task, the resume
   sweep after a worker was killed) finds that row: `sent` or `failed` rows are answered from
   the row; a `pending` one means an earlier attempt may have reached the provider, so the
   action first asks the provider (`find`) and only does it (`perform`) when nothing is there.
3. A provider refusal (4xx) is a failed execution with the provider's reason; a revoked grant
   is a failed execution that says "reconnect Gmail"; 429/5xx answers are retried with backoff
   inside a bounded budget (google_api.Session), then left `pending` (not confirmed) with the
   reason, for the resume sweep — never retried forever.

The row lock (select_for_update) is held during the provider call, so two runners of one key
never call the provider at the same time; a killed worker's lock goes with its connection.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from django.db import transaction

from lindy import tool_registry as registry
from lindy.models import TaskEvent

from ..models import OutboxEntry

logger = logging.getLogger(__name__)


class Rejected(Exception):
    """The provider refused the action (a 4xx) or it cannot be done as asked: final."""


class Disconnected(Rejected):
    """The user's Google grant is gone (revoked, expired): final until they reconnect."""


class Ambiguous(Exception):
    """The request may have been carried out (a 5xx or a timeout after it left): ask before redoing."""


class Unavailable(Exception):
    """The provider kept answering 429/5xx until the retry budget ran out."""


@dataclass
class Done:
    provider_id: str
    link: str = ""
    summary: str = ""  # what happened, in words for the agent and the decision page
    data: dict = field(default_factory=dict)


class Action(Protocol):
    adapter: str

    def find(self, entry: OutboxEntry) -> Done | None:
        """Did an earlier attempt with this entry's key already happen at the provider?"""

    def perform(self, entry: OutboxEntry) -> Done:
        """Do it once. Raises Rejected, Ambiguous or Unavailable."""

    def wait(self, reason: str) -> None:
        """Back off before the next try, or raise Unavailable when the budget is spent."""


def token(key: str) -> str:
    """A stable, opaque token for a key: what travels to the provider (headers, event ids)."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def execution_key(ctx, tool: str, arguments: dict) -> str:
    """Which earlier execution a run repeats. An authorized (or allowed) decision runs once; an
    exempt action runs once per instruction of the user on the task; with neither, every call
    is new."""
    if ctx.decision is not None:
        return f"decision:{ctx.decision.pk}"
    if ctx.task is not None:
        seq = (ctx.task.events.filter(actor__in=(TaskEvent.Actor.USER, TaskEvent.Actor.SYSTEM))
               .order_by("-seq").values_list("seq", flat=True).first())
        digest = token(json.dumps([tool, arguments], sort_keys=True, default=str))
        return f"task:{ctx.task.pk}:{seq or 0}:{tool}:{digest}"
    return f"once:{uuid.uuid4().hex}"


def result_for(entry: OutboxEntry, result_cls, *, repeated: bool = False):
    """The ToolResult (validator Execution) an outbox row stands for."""
    what = registry.describe(entry.tool, entry.arguments)
    data = {"outbox_id": entry.pk, "status": entry.status, "provider_id": entry.provider_id, "link": entry.link}
    again = " (already done earlier: not repeated)" if repeated else ""
    if entry.status == OutboxEntry.Status.SENT:
        summary = (entry.response or {}).get("summary") or "done"
        link = f" {entry.link}" if entry.link else ""
        return result_cls(ok=True, adapter=entry.adapter, data=data,
                          content=f"{what}: {summary}{again} — {entry.adapter} id {entry.provider_id}.{link}")
    if entry.status == OutboxEntry.Status.PENDING:
        return result_cls(ok=False, adapter=entry.adapter, data=data,
                          content=f"{what}: not confirmed — {entry.error}. It is not retried now; a later "
                          "retry asks the provider first, so it never happens twice.")
    return result_cls(ok=False, adapter=entry.adapter, data=data, content=f"{what}: failed — {entry.error}")


def run_once(ctx, tool: str, arguments: dict, action: Action, result_cls):
    key = execution_key(ctx, tool, arguments)
    # Stored (committed, outside any transaction of ours) before the provider hears of it.
    entry, created = OutboxEntry.objects.get_or_create(execution_key=key, defaults={
        "team": ctx.team, "user": ctx.user, "task": ctx.task, "decision": ctx.decision, "tool": tool,
        "arguments": arguments, "adapter": action.adapter, "status": OutboxEntry.Status.PENDING,
    })
    return drive(entry, action, result_cls, fresh=created)


def drive(entry: OutboxEntry, action: Action, result_cls, *, fresh: bool, last_chance: bool = False):
    """Carry a pending entry to sent or failed (or leave it pending, with the reason, when the
    provider stays unavailable). `fresh`: nobody can have tried this key before. `last_chance`:
    the entry is too old to do now (the resume sweep gives up): only ask whether it happened."""
    with transaction.atomic():
        entry = OutboxEntry.objects.select_for_update().get(pk=entry.pk)
        if entry.status != OutboxEntry.Status.PENDING:
            return result_for(entry, result_cls, repeated=True)
        check_first = not fresh
        try:
            while True:
                try:
                    done = action.find(entry) if check_first else None
                    if done is None and last_chance:
                        raise Rejected(f"not done: {entry.error or 'unconfirmed'}; too old to do now, ask again")
                    if done is None:
                        done = action.perform(entry)
                    break
                except Ambiguous as exc:
                    check_first = True  # it may have happened: ask before doing it again
                    action.wait(str(exc))
        except Rejected as exc:
            entry.status, entry.error = OutboxEntry.Status.FAILED, str(exc)
        except Unavailable as exc:
            entry.error = str(exc)
        else:
            entry.status, entry.error = OutboxEntry.Status.SENT, ""
            entry.provider_id, entry.link = done.provider_id[:200], done.link[:1000]
            entry.response = {"summary": done.summary, **done.data}
        entry.save()
    if entry.status == OutboxEntry.Status.PENDING:
        logger.warning("outbox entry %s not confirmed: %s", entry.pk, entry.error)
    return result_for(entry, result_cls)
