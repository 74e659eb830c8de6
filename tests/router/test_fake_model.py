"""The fake model with latency (issue 31): the offline rules' answers, after the stated delay, over
HTTP through the real anthropic client, with 429 and 529 answers the SDK retries."""

from __future__ import annotations

import pytest

from router import fake_model, gateway
from router.models import ModelCall
from router.offline import OfflineReply, tool_call
from router.providers import offline as offline_provider
from router.types import CompletionRequest, ModelError

from .helpers import route


@pytest.fixture
def echo_rule(offline_rule):
    def echo(request):
        return OfflineReply(text=f"echo: {request.last_user_text()} ({request.prompt_variant})",
                            tool_calls=[tool_call("note", {"seen": request.last_user_text()})])

    offline_rule("test.echo", echo)
    route("test.echo")  # an unknown route is an error, not a new row (issue 27 part 5)


@pytest.fixture
def served(settings):
    """A fake model server of the test's own (started apart, as `manage.py fake_model_server` is)."""
    started = []

    def start(**kwargs) -> fake_model.FakeModelServer:
        import threading

        server = fake_model.FakeModelServer(**kwargs)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        settings.MODEL_OFFLINE = True
        settings.FAKE_MODEL_LATENCY_MS = kwargs["latency_ms"]
        settings.FAKE_MODEL_URL = server.url
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.mark.django_db
def test_answers_like_the_offline_rules_after_the_delay(echo_rule, served):
    server = served(latency_ms=300)
    messages = [{"role": "user", "content": "ping"}]
    completion = gateway.complete(route="test.echo", messages=messages)
    offline = offline_provider.answer(CompletionRequest(route="test.echo", system="", messages=messages))
    assert completion.text == offline.text == "echo: ping (default)"
    assert [(c.name, c.input) for c in completion.tool_calls] == [(c.name, c.input) for c in offline.tool_calls]
    assert completion.stop_reason == "tool_use" and completion.usage.input_tokens > 0
    assert completion.latency_ms >= 300  # the delay is real
    assert server.answered[200] == 1
    call = ModelCall.objects.get()
    assert call.provider == "offline" and not call.error


@pytest.mark.django_db
def test_429_and_529_are_retried_by_the_sdk_after_retry_after(echo_rule, served, settings):
    settings.ANTHROPIC_MAX_RETRIES = 2
    server = served(latency_ms=0, rate_429=1.0)
    with pytest.raises(ModelError, match="RateLimitError"):
        gateway.complete(route="test.echo", messages=[{"role": "user", "content": "x"}])
    assert server.answered[429] == 3  # the first try and the SDK's two retries
    server = served(latency_ms=0, rate_529=1.0)
    settings.ANTHROPIC_MAX_RETRIES = 0
    with pytest.raises(ModelError, match="OverloadedError|InternalServerError|APIStatusError"):
        gateway.complete(route="test.echo", messages=[{"role": "user", "content": "x"}])
    assert server.answered[529] == 1


@pytest.mark.django_db
def test_a_route_without_rules_is_the_models_400(served):
    route("nobody.registered.this")
    served(latency_ms=0)
    with pytest.raises(ModelError, match="no rules"):
        gateway.complete(route="nobody.registered.this", messages=[{"role": "user", "content": "x"}])
    assert ModelCall.objects.get().error


@pytest.mark.django_db
def test_without_a_url_each_process_starts_its_own(echo_rule, settings):
    settings.MODEL_OFFLINE = True
    settings.FAKE_MODEL_LATENCY_MS = 0
    settings.FAKE_MODEL_URL = ""
    assert gateway.complete(route="test.echo", messages=[{"role": "user", "content": "hi"}]).text == "echo: hi (default)"
    assert fake_model.server_url() == fake_model.server_url()  # one server, reused
