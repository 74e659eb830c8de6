"""A provider key goes only to the host its environment binds it to (issue 29, part 1).

`LINDY_PROVIDER_URL_<NAME>` beside `LINDY_PROVIDER_KEY_<NAME>` names the one host (scheme, host and
port, normalised) the key may be sent to. The attack: a superuser adds or edits a provider with a
base URL of their choosing and an existing key variable; the next call must send neither the key
nor the prompt there, the Models page says why, and the change is in the audit log.
"""

import pytest
from django.test import override_settings

from lindy.models import AuditEntry
from router import gateway, routing, services
from router.models import AuditAction, Provider, Route
from router.provider_keys import key_binding, origin
from router.types import ModelError
from tests.conftest import client_for
from tests.fakes.openai_chat import FakeChatCompletions

from .helpers import cheap_target

KEY = "LINDY_PROVIDER_KEY_ATLAS"
URL = "LINDY_PROVIDER_URL_ATLAS"


@pytest.mark.parametrize("a, b", [
    ("https://api.atlas.test/v1", "HTTPS://API.ATLAS.TEST:443/other"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
    ("https://api.atlas.test./v1", "https://api.atlas.test/v1"),
    ("https://bücher.test/v1", "https://xn--bcher-kva.test/v1"),
])
def test_origins_are_compared_after_normalising(a, b):
    assert origin(a) == origin(b) is not None


@pytest.mark.parametrize("a, b", [
    ("https://api.atlas.test/v1", "http://api.atlas.test/v1"),
    ("https://api.atlas.test/v1", "https://api.atlas.test:8443/v1"),
    ("https://api.atlas.test/v1", "https://api.atlas.test.evil.test/v1"),
    ("https://api.atlas.test/v1", "https://api.atlas.test@evil.test/v1"),
])
def test_a_different_scheme_port_or_host_is_another_origin(a, b):
    assert origin(a) != origin(b)


def test_binding_rules(monkeypatch):
    monkeypatch.setenv(KEY, "atlas-key")
    monkeypatch.delenv(URL, raising=False)
    assert key_binding(base_url="https://api.atlas.test/v1", key_env=KEY).refusal.startswith(f"{URL} is not set")
    monkeypatch.setenv(URL, "https://api.atlas.test/v1")
    assert key_binding(base_url="https://api.atlas.test/v2", key_env=KEY).key == "atlas-key"
    refused = key_binding(base_url="https://collector.evil.test/v1", key_env=KEY)
    assert refused.key == "" and "collector.evil.test" in refused.refusal and "no key is sent" in refused.refusal
    assert key_binding(base_url="http://127.0.0.1:9/v1", key_env="").key == ""  # a keyless local host
    assert "not read" in key_binding(base_url="https://api.atlas.test/v1", key_env="SECRET_KEY").refusal


@pytest.fixture
def hosts(monkeypatch, db):
    """The real host (bound to the key) and a collector the superuser points a provider at."""
    with FakeChatCompletions() as real, FakeChatCompletions() as collector, override_settings(MODEL_OFFLINE=False):
        monkeypatch.setenv(KEY, FakeChatCompletions.API_KEY)
        monkeypatch.setenv(URL, real.base_url)
        yield real, collector


def _serve_agent_from(target):
    Route.objects.filter(name="agent").update(baseline=target)
    routing.invalidate()


def test_the_bound_host_gets_the_key(hosts):
    real, _ = hosts
    _serve_agent_from(cheap_target(base_url=real.base_url))
    real.reply_text("hello")
    gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}])
    assert [r.headers.get("authorization") for r in real.chat_requests] == [f"Bearer {FakeChatCompletions.API_KEY}"]


def test_a_provider_at_another_host_sends_no_key_and_no_prompt(hosts, cast):
    """The issue's probe: a new provider row, the existing key variable, a route on it."""
    real, collector = hosts
    evil = services.provider_create(name="evil", kind="openai", base_url=collector.base_url, api_key_env=KEY,
                                    actor=cast.superuser)
    target = services.target_create(name="evil-model", provider="openai", model="m", host=evil, actor=cast.superuser)
    _serve_agent_from(target)
    collector.reply_text("approved")
    with pytest.raises(ModelError, match="no key is sent"):
        gateway.complete(route="agent", messages=[{"role": "user", "content": "the validator's prompt"}])
    assert collector.chat_requests == [] and real.chat_requests == []

    page = client_for(cast.superuser).get("/router/targets/").content.decode()
    assert "No key sent." in page and URL in page
    assert FakeChatCompletions.API_KEY not in page


def test_editing_a_providers_url_is_audited_and_moves_no_key(hosts, cast):
    real, collector = hosts
    target = cheap_target(base_url=real.base_url)
    _serve_agent_from(target)
    client = client_for(cast.superuser)
    response = client.post("/router/providers/atlas/", {"base_url": collector.base_url, "api_key_env": KEY,
                                                        "timeout_seconds": 30, "max_retries": 1})
    assert response.status_code == 302
    event = AuditEntry.objects.get(action=AuditAction.PROVIDER_UPDATED)
    assert event.actor == cast.superuser and event.object_repr == "atlas"
    assert event.before["base_url"] == real.base_url and event.after["base_url"] == collector.base_url
    routing.invalidate()
    with pytest.raises(ModelError, match="no key is sent"):
        gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}])
    assert collector.chat_requests == []
    assert "Provider URL or key variable changed" in client.get("/router/targets/").content.decode()


def test_changing_the_key_variable_is_audited(hosts, cast):
    real, _ = hosts
    provider = cheap_target(base_url=real.base_url).host
    services.provider_update(provider=provider, base_url=real.base_url, api_key_env="LINDY_PROVIDER_KEY_OTHER",
                             timeout_seconds=60, max_retries=1, actor=cast.superuser)
    event = AuditEntry.objects.get(action=AuditAction.PROVIDER_UPDATED)
    assert (event.before["api_key_env"], event.after["api_key_env"]) == (KEY, "LINDY_PROVIDER_KEY_OTHER")


def test_a_save_that_changes_nothing_writes_no_event(hosts, cast):
    real, _ = hosts
    provider = cheap_target(base_url=real.base_url).host
    services.provider_update(provider=provider, base_url=provider.base_url, api_key_env=provider.api_key_env,
                             timeout_seconds=provider.timeout_seconds, max_retries=provider.max_retries,
                             actor=cast.superuser)
    assert not AuditEntry.objects.filter(action=AuditAction.PROVIDER_UPDATED).exists()


@pytest.mark.django_db
def test_bad_edits_are_refused_and_change_nothing(cast):
    provider = cheap_target().host
    client = client_for(cast.superuser)
    bad = client.post("/router/providers/atlas/", {"base_url": "https://x.test/v1", "api_key_env": "SECRET_KEY",
                                                   "timeout_seconds": 60, "max_retries": 1})
    assert bad.status_code == 400
    assert Provider.objects.get(pk=provider.pk).base_url == provider.base_url
    assert not AuditEntry.objects.filter(action=AuditAction.PROVIDER_UPDATED).exists()
    assert client_for(cast.admin).get("/router/providers/atlas/").status_code == 404
    assert client_for(cast.admin).post("/router/providers/atlas/", {"base_url": "https://x.test/v1"}).status_code == 404
