"""Webhooks with malformed headers or hostile bodies: 401 / 400 / 413, never a 500, nothing stored."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from channels_app.models import InboundMessage, SlackChannel, WebhookEvent
from tests.fakes import linq as linq_fake
from tests.fakes.linq import FakeLinq
from tests.fakes.slack_api import FakeSlack, member_joined, signed_event

IMESSAGE_URL = "/channels/imessage/webhook"


@pytest.fixture
def linq(settings):
    with FakeLinq() as fake:
        for name, value in fake.settings().items():
            setattr(settings, name, value)
        yield fake


@pytest.fixture
def slack(settings):
    with FakeSlack() as fake:
        for name, value in fake.settings().items():
            setattr(settings, name, value)
        yield fake


def _nothing_stored():
    return not InboundMessage.objects.exists() and not WebhookEvent.objects.exists()


def _post_linq(body: bytes, timestamp: str, signature: str):
    return Client().post(IMESSAGE_URL, body, content_type="application/json",
                         HTTP_X_WEBHOOK_TIMESTAMP=timestamp, HTTP_X_WEBHOOK_SIGNATURE=signature)


@pytest.mark.parametrize("timestamp, signature", [
    ("abc", None), ("nan", None), ("inf", None), ("1e400", None), ("-1", None), ("", None),
    ("١٧٠٠٠٠٠٠٠٠", None),  # Arabic-Indic digits: float() reads them, the sender never signs them
    (None, "ÿÿÿÿ"), (None, "sha256=" + "é" * 64), (None, ""), (None, "0" * 10_000),
    (None, "a" * 63), (None, "sha256=" + "g" * 64),  # wrong length; not hex
])
def test_malformed_linq_signature_headers_are_401(linq, db, timestamp, signature):
    body = b'{"event_type": "message.received", "event_id": "e1"}'
    ts = str(int(time.time())) if timestamp is None else timestamp
    sig = linq_fake.sign(body, ts) if signature is None else signature
    response = _post_linq(body, ts, sig)
    assert response.status_code == 401, response.content[:200]
    assert _nothing_stored()


def test_signed_linq_body_nested_200k_deep_is_400_before_parsing(linq, db, monkeypatch):
    body = b"[" * 200_000 + b"]" * 200_000
    ts = str(int(time.time()))

    def must_not_parse(*args, **kwargs):
        raise AssertionError("json.loads reached with a body nested 200k deep")

    monkeypatch.setattr("json.loads", must_not_parse)
    response = _post_linq(body, ts, linq_fake.sign(body, ts))
    monkeypatch.undo()
    assert response.status_code == 400, response.content[:200]
    assert "nests deeper" in response.json()["error"]["message"]
    assert _nothing_stored()


def test_signed_linq_body_over_the_size_bound_is_413(linq, db, settings):
    settings.JSON_BODY_MAX_BYTES = 10_000
    body = b'{"pad": "' + b"x" * 20_000 + b'"}'
    ts = str(int(time.time()))
    response = _post_linq(body, ts, linq_fake.sign(body, ts))
    assert response.status_code == 413
    assert _nothing_stored()


@pytest.mark.parametrize("headers", [
    {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "abc"},
    {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "1e9"},
    {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "١٧٠٠٠٠٠٠٠٠"},
    {"HTTP_X_SLACK_SIGNATURE": "v0=" + "é" * 64},
    {"HTTP_X_SLACK_SIGNATURE": "nonsense"},
    {"HTTP_X_SLACK_SIGNATURE": ""},
    {"HTTP_X_SLACK_REQUEST_TIMESTAMP": ""},
    {"HTTP_X_SLACK_SIGNATURE": "v0=" + "a" * 63},  # wrong length
    {"HTTP_X_SLACK_SIGNATURE": "v0=" + "A" * 64},  # not the lower-case hex Slack sends
])
def test_malformed_slack_signature_headers_are_401(cast, slack, headers):
    body, signed_headers = signed_event(member_joined("C0NEW"))
    response = Client().post("/slack/events", body, content_type="application/json", **{**signed_headers, **headers})
    assert response.status_code == 401, response.content[:200]
    assert not SlackChannel.objects.exists()


def test_slack_body_nested_deep_is_400(cast, slack):
    body, headers = signed_event({"type": "member_joined_channel", "deep": [[[[[[[[[[]]]]]]]]]]})
    deep = body.replace(b"[[[[[[[[[[]]]]]]]]]]", b"[" * 100 + b"]" * 100)
    response = Client().post("/slack/events", deep, content_type="application/json", **headers)
    assert response.status_code == 400


@pytest.fixture
def twilio(settings):
    from tests.fakes.twilio_api import FakeTwilio

    with FakeTwilio() as fake:
        for name, value in fake.settings().items():
            setattr(settings, name, value)
        yield fake


@pytest.mark.parametrize("signature", [
    "not*base64!",                     # not base64
    "c2hvcnQ=",                        # base64, but not the 20 bytes of an HMAC-SHA1
    "",                                # empty
    "ÿ" * 28,                          # non-ASCII, the length of a real one
    None,                              # missing
    "A" * 27 + "=",                    # well formed and wrong
])
def test_malformed_twilio_signature_headers_are_401(cast, twilio, signature):
    from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
    from tests.fakes.twilio_api import inbound_params

    line = SendingNumberFactory(phone="+14155550111")
    TextingProfileFactory(user=cast.member, phone="+16505550001")
    params = inbound_params(sender="+16505550001", to=line.phone, body="hi")
    headers = {} if signature is None else {"HTTP_X_TWILIO_SIGNATURE": signature}
    response = Client().post("/channels/sms/webhook", params, **headers)
    assert response.status_code == 401, response.content[:200]
    assert _nothing_stored()
