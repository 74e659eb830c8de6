"""The debounce window: a conversation's messages are handed to the agent together, once the
person has stopped typing for CHANNELS_DEBOUNCE_SECONDS.

The window's deadline lives on the Conversation row, not only in a countdown task, and a bundle
is claimed with a conditional update: a worker killed at any point loses nothing (the recovery
sweep finds what is due) and no message is handed to the agent twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from django.db import transaction
from django.utils import timezone

from ..models import Conversation, InboundBundle, InboundMessage
from . import queue
from .dispatch import bundles_in_flight


class DebounceStatus(StrEnum):
    WAIT = "wait"  # the window is still open: check again at its deadline
    DISPATCH = "dispatch"  # a bundle was claimed: hand it to the agent
    NOTHING = "nothing"  # no pending message (or no conversation)
    SUPERSEDED = "superseded"  # a later message queued its own check
    BUSY = "busy"  # the agent has an earlier bundle; it fires this check again when done


@dataclass(frozen=True)
class DebounceOutcome:
    """What one debounce check found, and so what is queued next."""

    status: DebounceStatus
    bundle_id: int | None = None  # the claimed bundle (DISPATCH)
    wait_seconds: float = 0.0  # until the window closes (WAIT)

    @property
    def recheck_in(self) -> float | None:
        """Seconds until this conversation must be checked again, or None: nothing to re-queue."""
        return self.wait_seconds if self.status is DebounceStatus.WAIT else None

    @property
    def dispatch_bundle_id(self) -> int | None:
        """The bundle to hand to the agent now, if any."""
        return self.bundle_id if self.status is DebounceStatus.DISPATCH else None


def debounce_fire(*, conversation_id: int, version: int | None = None) -> DebounceOutcome:
    """Claim the conversation's pending messages if its window has closed. Queues nothing.
    `version` is the conversation's version when the check was queued: a stale one means a later
    message queued its own check (SUPERSEDED) while the window is open."""
    now = timezone.now()
    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
        if conversation is None:
            return DebounceOutcome(DebounceStatus.NOTHING)
        pending = InboundMessage.objects.filter(conversation=conversation, bundle__isnull=True)
        if not pending.exists():
            return DebounceOutcome(DebounceStatus.NOTHING)
        if conversation.deadline and conversation.deadline > now:
            if version is not None and version != conversation.version:
                return DebounceOutcome(DebounceStatus.SUPERSEDED)
            return DebounceOutcome(DebounceStatus.WAIT, wait_seconds=(conversation.deadline - now).total_seconds())
        if bundles_in_flight(conversation.pk).exists():
            # The agent is still on this conversation's previous bundle: these messages go next,
            # once its reply is in the history, so it never answers the earlier ones again.
            return DebounceOutcome(DebounceStatus.BUSY)
        bundle = InboundBundle.objects.create(conversation=conversation, heartbeat_at=now)
        # The conditional update is the claim: a concurrent claimer finds nothing left.
        claimed = InboundMessage.objects.filter(conversation=conversation, bundle__isnull=True).update(bundle=bundle)
        if not claimed:
            bundle.delete()
            return DebounceOutcome(DebounceStatus.NOTHING)
        Conversation.objects.filter(pk=conversation.pk).update(deadline=None)
    return DebounceOutcome(DebounceStatus.DISPATCH, bundle_id=bundle.pk)


def debounce_check(*, conversation_id: int, version: int | None = None) -> DebounceOutcome:
    """One run of the debounce task: claim if due, then queue what follows from the outcome: the
    same check again at the deadline (clock skew, or a recovery run that came early), or the
    claimed bundle's dispatch."""
    outcome = debounce_fire(conversation_id=conversation_id, version=version)
    if outcome.recheck_in is not None:
        queue.task_send(queue.DEBOUNCE_FIRE, conversation_id, version, countdown=outcome.recheck_in)
    elif outcome.dispatch_bundle_id is not None:
        queue.task_send(queue.BUNDLE_DISPATCH, outcome.dispatch_bundle_id)
    return outcome
