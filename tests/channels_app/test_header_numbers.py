"""Every header is input (issue 29, part 5): every webhook, validly signed, with oversized or
garbage numbers in every numeric header it may read, answers without a server error and stores
nothing out of range. `X-Slack-Retry-Num: 2147483648` once overflowed an integer column.

The webhooks are found from the URL resolver (every CSRF-exempt view outside the API), so a new
webhook fails `test_every_webhook_is_probed` until it is added here.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from channels_app.models import SlackEvent
from tests.fakes import linq as linq_fake
from tests.fakes import twilio_api
from tests.fakes.linq import FakeLinq, message_received, signed_standard
from tests.fakes.slack_api import FakeSlack, member_joined, signed_event

OVERSIZED = ["2147483648", "4294967296", "9223372036854775808", "9" * 40, "-2147483649", "-1", "1e309", "nan",
             "٣", "0x7fffffff", "9" * 5000, ""]
# Every numeric header a webhook or its libraries read, and Retry-After for good measure.
NUMERIC_HEADERS = ["HTTP_X_SLACK_RETRY_NUM", "HTTP_X_SLACK_REQUEST_TIMESTAMP", "HTTP_X_WEBHOOK_TIMESTAMP",
                   "HTTP_WEBHOOK_TIMESTAMP", "HTTP_RETRY_AFTER", "HTTP_X_TWILIO_IDEMPOTENCY_TOKEN"]
PROBED = {"slack/events", "slack/oauth_redirect", "slack/install", "channels/imessage/webhook",
          "channels/sms/webhook"}


def _webhook_patterns(resolver=None, prefix=""):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace != "admin" and not str(entry.pattern).startswith("api/"):
                yield from _webhook_patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern) and getattr(entry.callback, "csrf_exempt", False):
            yield prefix + str(entry.pattern)


def test_every_webhook_is_probed():
    found = set(_webhook_patterns())
    assert found - PROBED == set(), f"Probe these webhooks for oversized numeric headers: {found - PROBED}"


@pytest.fixture
def slack(settings):
    with FakeSlack() as fake:
        for name, value in fake.settings().items():
            setattr(settings, name, value)
        yield fake


@pytest.mark.parametrize("value", OVERSIZED)
def test_slack_events_clamp_an_oversized_retry_number(cast, slack, value):
    body, headers = signed_event(member_joined("C0NEW", inviter=f"U{abs(hash(value)) % 10**6}"))
    response = Client().post("/slack/events", body, content_type="application/json", **headers,
                             HTTP_X_SLACK_RETRY_NUM=value, HTTP_X_SLACK_RETRY_REASON="x" * 5000)
    assert response.status_code == 200, response.content[:200]
    event = SlackEvent.objects.get()
    assert 0 <= event.retries <= 100 and event.retry_reason == "other"
    # The same delivery again (a replay within the five minutes): counted, still bounded.
    again = Client().post("/slack/events", body, content_type="application/json", **headers,
                          HTTP_X_SLACK_RETRY_NUM="9" * 30)
    assert again.status_code == 200 and SlackEvent.objects.get().retries == 100


def test_a_real_retry_number_is_kept(cast, slack):
    body, headers = signed_event(member_joined("C0NEW"))
    Client().post("/slack/events", body, content_type="application/json", **headers, HTTP_X_SLACK_RETRY_NUM="2",
                  HTTP_X_SLACK_RETRY_REASON="http_timeout")
    event = SlackEvent.objects.get()
    assert (event.retries, event.retry_reason) == (2, "http_timeout")


@pytest.mark.parametrize("header", NUMERIC_HEADERS)
@pytest.mark.parametrize("value", ["2147483648", "9223372036854775808", "9" * 40, "-1", "abc", "1e309"])
def test_every_webhook_survives_oversized_numeric_headers(cast, slack, header, value):
    """Each webhook, otherwise well signed, with one numeric header replaced: 2xx, 3xx or 4xx."""
    from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory

    line = SendingNumberFactory(phone="+14155550111")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001")
    statuses = {}
    body, headers = signed_event(member_joined("C0NEW"))
    statuses["slack/events"] = Client().post("/slack/events", body, content_type="application/json",
                                             **{**headers, header: value}).status_code
    statuses["slack/oauth_redirect"] = Client().get("/slack/oauth_redirect?state=1&code=2",
                                                    **{header: value}).status_code
    statuses["slack/install"] = Client().get(f"/slack/install?team={value}", **{header: value}).status_code
    with FakeLinq() as linq, override_settings(**linq.settings()):
        body, headers = linq_fake.signed(message_received(sender=profile.phone, line=line.phone, text="hi"))
        statuses["channels/imessage/webhook"] = Client().post(
            "/channels/imessage/webhook", body, content_type="application/json", **{**headers, header: value}).status_code
        with override_settings(LINQ_WEBHOOK_SCHEME="standard"):
            body, headers = signed_standard(message_received(sender=profile.phone, line=line.phone, text="hi"))
            statuses["channels/imessage/webhook (standard)"] = Client().post(
                "/channels/imessage/webhook", body, content_type="application/json",
                **{**headers, header: value}).status_code
    with twilio_api.FakeTwilio() as twilio, override_settings(**twilio.settings()):
        params = {**twilio_api.inbound_params(sender=profile.phone, to=line.phone, body="hi"), "NumMedia": value}
        signature = twilio_api.signature("http://testserver/channels/sms/webhook", params)
        statuses["channels/sms/webhook"] = Client().post(
            "/channels/sms/webhook", params, **{"HTTP_X_TWILIO_SIGNATURE": signature, header: value}).status_code
    errors = {name: status for name, status in statuses.items() if status >= 500}
    assert not errors, f"{header}: {value[:20]} -> {errors}"
    assert all(0 <= e.retries <= 100 for e in SlackEvent.objects.all())


def test_a_stale_or_oversized_signed_timestamp_is_401_not_500(cast):
    with FakeLinq() as linq, override_settings(**linq.settings()):
        for ts in ("9" * 40, "2147483648000", str(int(time.time()) * 10**6)):
            body = b'{"event_type": "message.received"}'
            response = Client().post("/channels/imessage/webhook", body, content_type="application/json",
                                     HTTP_X_WEBHOOK_TIMESTAMP=ts, HTTP_X_WEBHOOK_SIGNATURE=linq_fake.sign(body, ts))
            assert response.status_code == 401, ts
