"""Voice memos without a speech host: the offline stand-in (deterministic, honest about what it
is) and a route whose target cannot transcribe (the failure is recorded, not raised)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from channels_app import services
from channels_app.models import InboundAttachment, InboundMessage
from router.models import ModelCall
from tests.channels_app.factories import TextingProfileFactory

pytestmark = pytest.mark.django_db

MEMO = b"fake m4a audio"


@pytest.fixture
def memo(cast, tmp_path):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001")
    message = InboundMessage.objects.create(channel="imessage", provider_id="evt-1", from_phone=profile.phone,
                                            profile=profile)
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "memo.m4a").write_bytes(MEMO)
    with override_settings(CHANNELS_MEDIA_ROOT=tmp_path):
        yield InboundAttachment.objects.create(
            message=message, filename="memo.m4a", mime_type="audio/x-m4a", size_bytes=len(MEMO),
            source_url="http://127.0.0.1:9/expired", stored_path="1/memo.m4a", stored_at=message.received_at,
        )


def test_offline_the_stand_in_says_what_it_is_and_reads_the_same_twice(memo):
    first = services.attachment_transcribe(attachment_id=memo.pk).transcript
    assert first.startswith("(offline transcription stand-in: no speech model is configured")
    assert "memo.m4a" in first and f"{len(MEMO)} bytes" in first
    InboundAttachment.objects.filter(pk=memo.pk).update(transcribed_at=None, transcript="")
    assert services.attachment_transcribe(attachment_id=memo.pk).transcript == first
    assert ModelCall.objects.filter(route="channels.transcribe", provider="offline", error="").count() == 2


def test_a_target_that_cannot_transcribe_is_a_recorded_failure(memo):
    # The route's default baseline is an Anthropic model, which takes no audio.
    with override_settings(MODEL_OFFLINE=False):
        attachment = services.attachment_transcribe(attachment_id=memo.pk)
    assert attachment.transcript == ""
    assert "cannot transcribe audio" in attachment.transcription_error
    assert ModelCall.objects.get(route="channels.transcribe").error == attachment.transcription_error


def test_a_recording_that_cannot_be_fetched_is_a_failure_the_agent_is_told(memo):
    InboundAttachment.objects.filter(pk=memo.pk).update(stored_at=None, stored_path="")
    attachment = services.attachment_transcribe(attachment_id=memo.pk)
    assert attachment.transcription_error.startswith("the recording could not be fetched")
    reference = attachment.as_reference()
    assert reference["kind"] == "voice_memo" and reference["transcription_error"]


def test_images_are_not_transcribed(memo):
    InboundAttachment.objects.filter(pk=memo.pk).update(mime_type="image/jpeg")
    attachment = services.attachment_transcribe(attachment_id=memo.pk)
    assert attachment.transcribed_at is None and attachment.as_reference()["kind"] == "photo"
    assert not ModelCall.objects.exists()
