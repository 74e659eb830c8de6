"""Voice memos out of the box: the offline stand-in (deterministic, honest about what it is); on
the default Claude target, a configured OpenAI-compatible speech target is used, and without
one the memo is recorded as not heard, with the user told once to type instead."""

from __future__ import annotations

import pytest
from django.test import override_settings

from agent import services as agent_services
from channels_app import services
from channels_app.models import InboundAttachment, InboundMessage
from channels_app.services import media
from router.models import ModelCall, Target
from router.types import NO_SPEECH_MODEL
from tests.channels_app.factories import TextingProfileFactory
from tests.fakes.openai_chat import FakeChatCompletions, multipart_fields
from tests.router.helpers import cheap_target

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


def another_memo(memo) -> InboundAttachment:
    message = InboundMessage.objects.create(channel="imessage", provider_id=f"evt-{memo.pk + 1}",
                                            from_phone=memo.message.from_phone, profile=memo.message.profile)
    return InboundAttachment.objects.create(
        message=message, filename="memo.m4a", mime_type="audio/x-m4a", size_bytes=len(MEMO),
        source_url=memo.source_url, stored_path=memo.stored_path, stored_at=message.received_at,
    )


def test_without_a_speech_model_the_memo_is_not_heard_and_the_user_is_told_once(memo):
    # The route's default baseline is an Anthropic model, which takes no audio, and no speech target exists.
    with override_settings(MODEL_OFFLINE=False):
        attachment = services.attachment_transcribe(attachment_id=memo.pk)
        later = services.attachment_transcribe(attachment_id=another_memo(memo).pk)
    assert attachment.transcript == "" and "cannot transcribe" not in attachment.transcription_error
    assert attachment.transcription_error == media.TELL_TO_TYPE
    assert later.transcription_error == media.ALREADY_TOLD  # once per user
    calls = ModelCall.objects.filter(route="channels.transcribe")
    assert [c.error for c in calls] == [NO_SPEECH_MODEL, NO_SPEECH_MODEL] and not any(c.target_id for c in calls)
    first = agent_services._message_text({"text": "", "attachments": [attachment.as_reference()]})
    assert "could not be heard" in first and "type their message instead" in first and "came back empty" not in first
    second = agent_services._message_text({"text": "", "attachments": [later.as_reference()]})
    assert "could not be heard" in second and "already told" in second


def test_the_default_target_uses_a_configured_speech_target(memo, monkeypatch):
    with FakeChatCompletions() as host, override_settings(MODEL_OFFLINE=False):
        monkeypatch.setenv("LINDY_PROVIDER_KEY_ATLAS", FakeChatCompletions.API_KEY)
        monkeypatch.setenv("LINDY_PROVIDER_URL_ATLAS", host.base_url)  # the host the key is bound to
        chat = cheap_target(base_url=host.base_url)  # a chat model: not a speech target
        whisper = Target.objects.create(name="whisper-1-atlas", provider="openai", model="whisper-1", host=chat.host)
        host.reply_transcript("Call Jane at nine.")
        attachment = services.attachment_transcribe(attachment_id=memo.pk)
        assert attachment.transcript == "Call Jane at nine." and attachment.transcription_error == ""
        (upload,) = host.transcription_requests
        assert multipart_fields(upload)["model"] == (None, b"whisper-1")
    call = ModelCall.objects.get(route="channels.transcribe")
    assert (call.target_id, call.provider, call.error) == (whisper.pk, "openai", "")
    # A named one wins; a name that matches nothing is no speech model, not a guess.
    with override_settings(MODEL_OFFLINE=False, ROUTER_SPEECH_TARGET="nope"):
        other = services.attachment_transcribe(attachment_id=another_memo(memo).pk)
    assert other.transcription_error == media.TELL_TO_TYPE


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
