"""Image content blocks go to targets that read them (Target.accepts_images) and become a text
note on the others, the offline provider included."""

from __future__ import annotations

import base64

import pytest

from router import gateway, routing
from router.models import Provider, Target
from tests.conftest import client_for
from tests.router.test_audit import PROVIDER_FORM, TARGET_FORM

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(b"x" * 3000).decode()}}


def test_images_become_a_note_and_text_is_kept():
    messages = [{"role": "user", "content": [{"type": "text", "text": "[photo #1: r.png]"}, IMAGE]},
                {"role": "user", "content": "plain"}]
    out = gateway.images_as_text(messages)
    assert out[0]["content"][0] == {"type": "text", "text": "[photo #1: r.png]"}
    assert out[0]["content"][1]["text"].startswith("[an image (image/png, about 2 KB) is not shown")
    assert out[1] is messages[1] and messages[0]["content"][1] is IMAGE  # the caller's list is not changed


@pytest.mark.django_db
def test_the_default_claude_targets_read_images_and_the_offline_one_does_not():
    routing.ensure_defaults()
    readers = dict(Target.objects.values_list("name", "accepts_images"))
    assert readers["claude-sonnet-4-6-anthropic"] and readers["claude-haiku-4-5-anthropic"]
    assert not readers["offline-rules"]
    assert routing.assign("agent").target.accepts_images


@pytest.mark.django_db
def test_the_offline_provider_answers_a_message_with_an_image(cast):
    completion = gateway.complete(route="agent", user=cast.member, messages=[
        {"role": "user", "content": [IMAGE, {"type": "text", "text": "What is in the photo?"}]}])
    assert completion.provider == "offline"


@pytest.mark.django_db
def test_a_manager_marks_a_new_target_as_reading_images(cast):
    client = client_for(cast.superuser)
    assert client.post("/router/providers/new/", PROVIDER_FORM).status_code == 302
    host = Provider.objects.get(name="atlas")
    form = {**TARGET_FORM, "name": "qwen-vl", "host": host.pk, "accepts_images": "on"}
    assert client.post("/router/targets/new/", form).status_code == 302
    target = Target.objects.get(name="qwen-vl")
    assert target.accepts_images and routing.assign_target("agent", target.pk).target.accepts_images
