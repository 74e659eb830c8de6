"""Across apps: a voice memo texted through the iMessage webhook is transcribed through the
router (route channels.transcribe, an OpenAI-compatible /audio/transcriptions host) and reaches
the agent's model as the user's words; a failed transcription reaches it as a failure. A photo
reaches an Anthropic model as an image block (again days later, in a new task), and a model that
reads no images as a note."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from agent.models import OpenTask
from channels_app import services as channels
from channels_app.models import Conversation, InboundAttachment, InboundMessage
from lindy.models import AgentTask
from router.models import ModelCall, Route, Target
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.http import Reply
from tests.fakes.linq import FakeLinq, message_received, signed
from tests.fakes.openai_chat import FakeChatCompletions, multipart_fields
from tests.router.helpers import cheap_target

pytestmark = pytest.mark.django_db

MEMO = b"\x00\x00\x00\x1cftypM4A fake voice memo bytes"
RECEIPT = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR fake receipt pixels" * 40


@pytest.fixture
def world(cast, monkeypatch, tmp_path):
    """The fake iMessage API (serving the memo's media URL) and one OpenAI-compatible host that
    serves both the agent's chat completions and speech to text."""
    with FakeLinq() as linq, FakeChatCompletions() as host, override_settings(
        **linq.settings(), MODEL_OFFLINE=False, CHANNELS_MEDIA_ROOT=tmp_path,
    ):
        monkeypatch.setenv("LINDY_PROVIDER_KEY_ATLAS", FakeChatCompletions.API_KEY)
        monkeypatch.setenv("LINDY_PROVIDER_URL_ATLAS", host.base_url)  # the host the key is bound to
        chat = cheap_target(base_url=host.base_url)
        whisper = Target.objects.create(name="whisper-1-atlas", provider="openai", model="whisper-1", host=chat.host)
        Route.objects.filter(name="agent").update(baseline=chat)
        Route.objects.filter(name="channels.transcribe").update(baseline=whisper)
        linq.default("GET", "/media/memo.m4a", Reply(200, MEMO))
        line = SendingNumberFactory(phone="+14155550100")
        profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="chat-1",
                                        imessage_capable=True, capability_checked_at=timezone.now())
        yield linq, host, line, profile


def memo_in(linq, profile, line):
    media = [{"type": "media", "id": "att-memo", "filename": "memo.m4a", "mime_type": "audio/x-m4a",
              "size_bytes": len(MEMO), "url": linq.url + "/media/memo.m4a"}]
    body, headers = signed(message_received(sender=profile.phone, line=line.phone, chat_id="chat-1", media=media))
    assert Client().post("/channels/imessage/webhook", body, content_type="application/json",
                         **headers).status_code == 200


def dispatch(profile):
    conversation = Conversation.objects.get(profile=profile)
    Conversation.objects.filter(pk=conversation.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    outcome = channels.debounce_fire(conversation_id=conversation.pk)
    return channels.bundle_dispatch(bundle_id=outcome.bundle_id)


def test_a_voice_memo_reaches_the_model_as_its_transcript(world, cast):
    linq, host, line, profile = world
    host.reply_transcript("Remind me to call Jane about the Initech contract tomorrow at nine.")
    host.reply_text("I'll remind you.")
    memo_in(linq, profile, line)

    assert dispatch(profile) == "dispatched"

    # The real client uploaded the memo as OpenAI's API takes it: multipart `model` and `file`.
    (upload,) = host.transcription_requests
    fields = multipart_fields(upload)
    assert fields["model"][1] == b"whisper-1"
    assert fields["file"] == ("memo.m4a", MEMO)
    # The agent's model read the user's spoken words.
    (chat,) = host.chat_requests
    prompt = " ".join(str(m.get("content")) for m in chat.json["messages"])
    assert "[voice memo, transcribed: Remind me to call Jane about the Initech contract tomorrow at nine.]" in prompt
    # Stored with the message, and recorded as a router call on the channels' route.
    attachment = InboundAttachment.objects.get()
    assert attachment.transcript.startswith("Remind me to call Jane") and attachment.transcription_error == ""
    call = ModelCall.objects.get(route="channels.transcribe")
    assert (call.provider, call.model, call.error, call.user_id) == ("openai", "whisper-1", "", cast.member.pk)
    task = AgentTask.objects.get(owner=cast.member)
    assert task.events.filter(actor="user", content__contains="call Jane about the Initech contract").exists()


def test_a_failed_transcription_is_shown_to_the_agent_not_dropped(world, cast):
    linq, host, line, profile = world
    host.reply_transcription_status(400)
    host.reply_text("Sorry, I couldn't hear that memo. Could you type it?")
    memo_in(linq, profile, line)

    assert dispatch(profile) == "dispatched"

    (chat,) = host.chat_requests
    prompt = " ".join(str(m.get("content")) for m in chat.json["messages"])
    assert "[voice memo: transcription failed: HTTP 400" in prompt
    attachment = InboundAttachment.objects.get()
    assert attachment.transcript == "" and "HTTP 400" in attachment.transcription_error
    assert ModelCall.objects.get(route="channels.transcribe").error.startswith("HTTP 400")
    # Transcribed (or failed) once: a second look does not call the host again.
    channels.attachment_transcribe(attachment_id=attachment.pk)
    assert len(host.transcription_requests) == 1


def text_in(linq, profile, line, text="", media=None):
    body, headers = signed(message_received(sender=profile.phone, line=line.phone, chat_id="chat-1", text=text,
                                            media=media))
    assert Client().post("/channels/imessage/webhook", body, content_type="application/json",
                         **headers).status_code == 200


def receipt_in(linq, profile, line):
    linq.default("GET", "/media/receipt.png", Reply(200, RECEIPT))
    media = [{"type": "media", "id": "att-receipt", "filename": "receipt.png", "mime_type": "image/png",
              "size_bytes": len(RECEIPT), "url": linq.url + "/media/receipt.png"}]
    text_in(linq, profile, line, "Expense this please", media)


def image_blocks(request) -> list[dict]:
    return [b for m in request.json["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "image"]


@pytest.fixture
def anthropic_world(cast, tmp_path):
    with FakeLinq() as linq, FakeAnthropic() as anthropic, override_settings(
        **linq.settings(), **anthropic.settings(), CHANNELS_MEDIA_ROOT=tmp_path,
    ):
        line = SendingNumberFactory(phone="+14155550100")
        profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="chat-1",
                                        imessage_capable=True, capability_checked_at=timezone.now())
        yield linq, anthropic, line, profile


def test_a_photo_reaches_the_anthropic_model_as_an_image_block_and_again_days_later(anthropic_world, cast):
    linq, anthropic, line, profile = anthropic_world
    anthropic.reply_text("Expensed: the receipt shows $42.10 at Blue Bottle.")
    receipt_in(linq, profile, line)
    assert dispatch(profile) == "dispatched"

    (first,) = anthropic.message_requests
    (block,) = image_blocks(first)
    assert block["source"]["type"] == "base64" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == RECEIPT
    photo = InboundAttachment.objects.get()
    texts = [b.get("text", "") for b in first.json["messages"][0]["content"]]
    assert any(t.startswith(f"[photo #{photo.pk} the user texted on") for t in texts)
    task = AgentTask.objects.get(owner=cast.member)
    assert task.events.filter(actor="user", content=f"Expense this please [photo #{photo.pk}: receipt.png]").exists()

    # Three days later, a new task (the conversation went idle): the photo is still in view.
    three_days = timedelta(days=3)
    InboundMessage.objects.update(received_at=timezone.now() - three_days)
    OpenTask.objects.update(last_inbound_at=timezone.now() - three_days)
    anthropic.reply_text("It was $42.10.")
    text_in(linq, profile, line, "What was the total on the receipt I sent you?")
    assert dispatch(profile) == "dispatched"

    assert AgentTask.objects.filter(owner=cast.member).count() == 2
    later = anthropic.message_requests[-1]
    assert [base64.b64decode(b["source"]["data"]) for b in image_blocks(later)] == [RECEIPT]


def test_a_model_that_reads_no_images_gets_a_note_instead(world):
    linq, host, line, profile = world
    host.reply_text("Noted.")
    receipt_in(linq, profile, line)
    assert dispatch(profile) == "dispatched"

    (chat,) = host.chat_requests
    prompt = " ".join(str(m.get("content")) for m in chat.json["messages"])
    assert "[an image (image/png, about 1 KB) is not shown: the model serving this call does not read images]" in prompt
    assert "receipt.png" in prompt and "base64" not in prompt
