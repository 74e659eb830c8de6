"""What the agent is given of an attachment beyond its name: a voice memo's transcript, a
photo's own copy (shown to the model by channels_app.images).

Voice memos are transcribed through the router (route `channels.transcribe`, registered in
ChannelsAppConfig.ready): an OpenAI-compatible /audio/transcriptions target, or the offline
stand-in. A failure is kept on the attachment and shown to the agent, never dropped. Without any
speech model the memo is recorded as not heard; the user's first such memo carries the request
to tell them, that once, to type instead (the stored errors are the record of who was told).
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from router import gateway
from router.budgets import BudgetExhausted
from router.types import NO_SPEECH_MODEL, ModelError, NoSpeechModel

from ..models import InboundAttachment
from .store import attachment_store

logger = logging.getLogger(__name__)

TRANSCRIBE_ROUTE = "channels.transcribe"
TELL_TO_TYPE = (f"{NO_SPEECH_MODEL}: tell the user, this once, that voice memos cannot be heard yet "
                "and to type their message instead")
ALREADY_TOLD = f"{NO_SPEECH_MODEL} (the user was already told to type instead)"


def _no_speech_error(attachment: InboundAttachment) -> str:
    """The first memo of a user that could not be heard asks the agent to tell them to type;
    later ones do not (per user, or per texting profile when it has no user yet)."""
    profile = attachment.message.profile
    mine = (InboundAttachment.objects.filter(message__profile__user=profile.user) if profile and profile.user_id
            else InboundAttachment.objects.filter(message__profile=profile))
    told = mine.exclude(pk=attachment.pk).filter(transcription_error=TELL_TO_TYPE).exists()
    return ALREADY_TOLD if told else TELL_TO_TYPE


def attachment_transcribe(*, attachment_id: int) -> InboundAttachment | None:
    """Transcribe a voice memo once (its own copy is made first if the store task has not run).
    Idempotent: a memo already transcribed, or already failed, is returned as it is. Raises only
    BudgetExhausted (the caller retries later); every other failure is recorded on the row."""
    attachment = (
        InboundAttachment.objects.select_related("message__profile__user").filter(pk=attachment_id).first()
    )
    if attachment is None or not attachment.is_audio or attachment.transcribed_at is not None:
        return attachment
    transcript, error = "", ""
    try:
        if not attachment.stored_at:
            attachment_store(attachment_id=attachment.pk)
            attachment.refresh_from_db()
        audio = (Path(settings.CHANNELS_MEDIA_ROOT) / attachment.stored_path).read_bytes()
    except Exception as exc:  # an expired URL, a file too large, a full disk: the agent is told
        logger.warning("voice memo %s could not be fetched: %s", attachment.pk, exc)
        error = f"the recording could not be fetched ({type(exc).__name__}: {exc})"
    else:
        profile = attachment.message.profile
        try:
            transcript = gateway.transcribe(
                route=TRANSCRIBE_ROUTE, audio=audio, filename=attachment.filename, mime_type=attachment.mime_type,
                user=profile.user if profile else None,
            ).text
        except BudgetExhausted:
            raise
        except NoSpeechModel:
            error = _no_speech_error(attachment)
        except ModelError as exc:
            error = str(exc) or "the transcription service failed"
    if not transcript and not error:
        error = "the transcription came back empty"
    InboundAttachment.objects.filter(pk=attachment.pk).update(
        transcript=transcript, transcription_error=error[:2000], transcribed_at=timezone.now(),
    )
    attachment.refresh_from_db()
    return attachment


def messages_prepare(messages) -> bool:
    """Before the hand-over (attachments prefetched): every voice memo transcribed, and every photo
    copied off the provider's expiring URL if the store task has not done it yet, so the model can
    see it now and weeks later. A photo that cannot be copied is named to the agent as such.
    True when an attachment was written to, so the caller's loaded rows are stale."""
    touched = False
    for message in messages:
        for attachment in message.attachments.all():
            if attachment.is_audio and attachment.transcribed_at is None:
                touched = True
                attachment_transcribe(attachment_id=attachment.pk)
            elif attachment.is_image and not attachment.stored_at:
                touched = True
                try:
                    attachment_store(attachment_id=attachment.pk)
                except Exception as exc:  # the store task retries; the agent is told it is not shown
                    logger.warning("photo %s could not be copied before the hand-over: %s", attachment.pk, exc)
    return touched
