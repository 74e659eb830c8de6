"""The gateway with the real `anthropic` SDK against a local Messages API server."""

from decimal import Decimal

import pytest
from django.test import override_settings

from router import gateway
from router.models import ModelCall
from router.types import ModelError
from tests.fakes.anthropic_api import FakeAnthropic

from .helpers import route

TOOLS = [{
    "name": "send_email",
    "description": "Send an email.",
    "input_schema": {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}}}},
}]


@pytest.fixture
def fake_anthropic():
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        yield fake


@pytest.mark.django_db
def test_tool_use_call_is_completed_and_recorded(fake_anthropic, cast):
    fake_anthropic.reply_tool_use(
        "send_email", {"to": ["jane@initech.test"]}, text="Sending it.",
        usage={"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 1000,
               "cache_creation_input_tokens": 200},
    )
    completion = gateway.complete(
        route="agent", user=cast.member, system="You are Lindy.",
        messages=[{"role": "user", "content": "Email Jane."}], tools=TOOLS, tool_choice={"type": "auto"},
    )
    assert completion.provider == "anthropic"
    assert completion.text == "Sending it."
    assert [(c.name, c.input) for c in completion.tool_calls] == [("send_email", {"to": ["jane@initech.test"]})]

    sent = fake_anthropic.message_requests[0]
    assert FakeAnthropic.API_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    body = sent.json
    assert body["model"] == "claude-sonnet-4-6"
    assert body["tool_choice"] == {"type": "auto"}
    # Cache breakpoints on the last system block and the last tool.
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}

    call = ModelCall.objects.get(pk=completion.call_id)
    assert (call.route, call.provider, call.model, call.user) == ("agent", "anthropic", "claude-sonnet-4-6", cast.member)
    assert (call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_write_tokens) == (1200, 80, 1000, 200)
    # Sonnet 4.6: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens.
    expected = (Decimal(1200) * 3 + Decimal(80) * 15 + Decimal(200) * Decimal("3.75") + Decimal(1000) * Decimal("0.30")) / 1_000_000
    assert call.cost == expected.quantize(Decimal("0.000001"))
    assert call.error == ""


@pytest.mark.django_db
def test_429_is_retried_then_succeeds(fake_anthropic):
    fake_anthropic.reply_status(429, retry_after=0)
    fake_anthropic.reply_text("ok after a retry")
    completion = gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}])
    assert completion.text == "ok after a retry"
    assert len(fake_anthropic.message_requests) == 2
    assert ModelCall.objects.get().error == ""


@pytest.mark.django_db
def test_retries_are_bounded_and_the_failure_recorded(fake_anthropic):
    for _ in range(5):
        fake_anthropic.reply_status(529, retry_after=0)
    with pytest.raises(ModelError):
        gateway.complete(route="validator", messages=[{"role": "user", "content": "hi"}])
    assert len(fake_anthropic.message_requests) == 3  # one try + ANTHROPIC_MAX_RETRIES=2
    call = ModelCall.objects.get()
    assert "529" in call.error or "Overloaded" in call.error or "overloaded" in call.error
    assert call.cost == 0


@pytest.mark.django_db
def test_token_counting_uses_the_model_counter(fake_anthropic):
    tokens, exact = gateway.count_tokens(text="hello " * 40)
    assert exact is True and tokens > 0
    assert fake_anthropic.requests_to("POST", "/v1/messages/count_tokens")


@pytest.mark.django_db
def test_offline_provider_needs_no_network(settings):
    from router.offline import OfflineReply, offline_policy

    @offline_policy("test.echo")
    def echo(request):
        return OfflineReply(text=f"echo: {request.last_user_text()}")

    route("test.echo")
    settings.MODEL_OFFLINE = True
    settings.ANTHROPIC_BASE_URL = "http://127.0.0.1:9"  # nothing listens: any network use would fail
    completion = gateway.complete(route="test.echo", messages=[{"role": "user", "content": "ping"}])
    assert completion.text == "echo: ping"
    assert completion.provider == "offline"
    call = ModelCall.objects.get()
    assert call.provider == "offline" and call.cost == 0 and call.input_tokens > 0


@pytest.mark.django_db
def test_offline_route_without_rules_is_a_recorded_error(settings):
    route("nobody.wrote.rules.for.this")
    settings.MODEL_OFFLINE = True
    with pytest.raises(ModelError, match="no rules"):
        gateway.complete(route="nobody.wrote.rules.for.this", messages=[{"role": "user", "content": "x"}])
    assert ModelCall.objects.get().error


@pytest.mark.django_db
def test_a_redirect_from_the_host_never_carries_the_key_elsewhere():
    """httpx strips only `Authorization` on a cross-origin redirect; the Anthropic key travels as
    `x-api-key`, so following a redirect would hand it to the other host (issue 29, keys to their host)."""
    from tests.fakes.http import Reply

    with FakeAnthropic() as host, FakeAnthropic() as elsewhere, override_settings(**host.settings()):
        elsewhere.reply_text("the other host answered")
        host.script("POST", "/v1/messages", [Reply(307, {"moved": True}, {"location": f"{elsewhere.url}/v1/messages"})])
        with pytest.raises(ModelError):
            gateway.complete(route="agent", messages=[{"role": "user", "content": "Hello."}])
        assert len(host.message_requests) == 1
        assert elsewhere.requests == []
