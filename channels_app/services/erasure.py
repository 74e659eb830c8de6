"""A deleted user's texts: their inbound messages (and attachments, with the stored copies)
point at their profile and conversation with links that are cleared, not cascaded, so the
core's user deletion (lindy.services.user_delete) asks this eraser to remove them first."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from ..models import InboundAttachment, InboundMessage


def user_texts_erase(user) -> dict[str, int]:
    mine = InboundMessage.objects.filter(Q(profile__user=user) | Q(conversation__profile__user=user))
    stored = list(InboundAttachment.objects.filter(message__in=mine).exclude(stored_path="")
                  .values_list("stored_path", flat=True))
    _, counts = InboundMessage.objects.filter(pk__in=mine.values("pk")).delete()
    if stored:
        transaction.on_commit(lambda: _unlink(stored))  # rolled back (a dry run): the copies stay
    return counts


def _unlink(paths: list[str]) -> None:
    root = Path(settings.CHANNELS_MEDIA_ROOT).resolve()
    for relative in paths:
        target = (root / relative).resolve()
        if target.is_relative_to(root):
            target.unlink(missing_ok=True)
