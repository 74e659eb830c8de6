"""Linq-style webhooks verified with the Standard Webhooks scheme (webhook-id, webhook-timestamp,
webhook-signature over "{id}.{timestamp}.{body}", via the standardwebhooks library), chosen by
LINQ_WEBHOOK_SCHEME beside today's scheme. A bad, missing or expired signature: 401, nothing stored."""

from __future__ import annotations

import time

import pytest
from django.test import Client, override_settings

from channels_app.models import InboundMessage, NumberDay, WebhookEvent
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.fakes.linq import STANDARD_SECRET, FakeLinq, message_received, signed, signed_standard

URL = "/channels/imessage/webhook"


@pytest.fixture
def standard():
    with FakeLinq() as fake, override_settings(**{**fake.settings(), "LINQ_WEBHOOK_SCHEME": "standard",
                                                  "LINQ_WEBHOOK_SECRET": STANDARD_SECRET}):
        yield fake


@pytest.fixture
def texter(cast):
    line = SendingNumberFactory(phone="+14155550100")
    return TextingProfileFactory(user=cast.member, phone="+16505550001", number=line), line


def post(body, headers):
    return Client().post(URL, body, content_type="application/json", **headers)


def test_a_standard_signed_message_is_stored_once(standard, texter):
    profile, line = texter
    payload = message_received(sender=profile.phone, line=line.phone, text="hi", event_id="evt-s1")
    body, headers = signed_standard(payload)
    assert post(body, headers).json() == {"status": "stored"}
    assert post(body, headers).json() == {"status": "duplicate"}  # the provider's retry
    assert InboundMessage.objects.get().text == "hi"


def test_key_rotation_several_signatures_one_good(standard, texter):
    profile, line = texter
    body, headers = signed_standard(message_received(sender=profile.phone, line=line.phone, text="rotated"))
    other = "whsec_" + "b2xkLWtleS1ub3QtaW4tdXNl"
    _, old = signed_standard({"x": 1}, secret=other, msg_id=headers["HTTP_WEBHOOK_ID"])
    headers["HTTP_WEBHOOK_SIGNATURE"] = f"{old['HTTP_WEBHOOK_SIGNATURE']} {headers['HTTP_WEBHOOK_SIGNATURE']}"
    assert post(body, headers).status_code == 200


@pytest.mark.parametrize("tamper", [
    "secret", "expired", "future", "body", "id", "missing-signature", "missing-id", "missing-all", "not-v1",
    "not-base64", "no-comma", "nan-timestamp", "today's-scheme", "non-ascii", "wrong-length", "empty-signature",
    "empty-timestamp",
])
def test_bad_missing_or_expired_standard_signatures_get_401_and_store_nothing(standard, texter, tamper):
    profile, line = texter
    payload = message_received(sender=profile.phone, line=line.phone, text="hi")
    body, headers = signed_standard(payload)
    if tamper == "secret":
        body, headers = signed_standard(payload, secret="whsec_" + "d3Jvbmcta2V5")
    elif tamper == "expired":
        body, headers = signed_standard(payload, timestamp=int(time.time()) - 301)
    elif tamper == "future":
        body, headers = signed_standard(payload, timestamp=int(time.time()) + 301)
    elif tamper == "body":
        body = body.replace(b'"hi"', b'"yo"')
    elif tamper == "id":
        headers["HTTP_WEBHOOK_ID"] = "msg_other"
    elif tamper == "missing-signature":
        del headers["HTTP_WEBHOOK_SIGNATURE"]
    elif tamper == "missing-id":
        del headers["HTTP_WEBHOOK_ID"]
    elif tamper == "missing-all":
        headers = {}
    elif tamper == "not-v1":
        headers["HTTP_WEBHOOK_SIGNATURE"] = headers["HTTP_WEBHOOK_SIGNATURE"].replace("v1,", "v2,")
    elif tamper == "not-base64":
        headers["HTTP_WEBHOOK_SIGNATURE"] = "v1,not*base64!"
    elif tamper == "no-comma":
        headers["HTTP_WEBHOOK_SIGNATURE"] = "garbage"
    elif tamper == "non-ascii":
        headers["HTTP_WEBHOOK_SIGNATURE"] = "v1," + "ÿ" * 44
    elif tamper == "wrong-length":
        headers["HTTP_WEBHOOK_SIGNATURE"] = "v1,c2hvcnQ="
    elif tamper == "empty-signature":
        headers["HTTP_WEBHOOK_SIGNATURE"] = ""
    elif tamper == "empty-timestamp":
        headers["HTTP_WEBHOOK_TIMESTAMP"] = ""
    elif tamper == "nan-timestamp":
        headers["HTTP_WEBHOOK_TIMESTAMP"] = "nan"
    else:  # signed the other way: this provider is configured for Standard Webhooks
        body, headers = signed(payload)
    response = post(body, headers)
    assert response.status_code == 401, response.content
    assert not InboundMessage.objects.exists() and not WebhookEvent.objects.exists()
    assert not NumberDay.objects.exists()


def test_a_secret_that_is_not_whsec_base64_refuses_everything(standard, texter):
    profile, line = texter
    body, headers = signed_standard(message_received(sender=profile.phone, line=line.phone, text="hi"))
    for secret in ("", "whsec_", "whsec_%%%not-base64"):
        with override_settings(LINQ_WEBHOOK_SECRET=secret):
            assert post(body, headers).status_code == 401
    assert not InboundMessage.objects.exists()


def test_todays_scheme_stays_the_default_and_refuses_standard_signatures(cast, texter):
    profile, line = texter
    with FakeLinq() as fake, override_settings(**fake.settings()):
        payload = message_received(sender=profile.phone, line=line.phone, text="hi")
        assert post(*signed_standard(payload)).status_code == 401
        assert post(*signed(payload)).status_code == 200
    assert InboundMessage.objects.count() == 1
