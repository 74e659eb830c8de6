"""Provider API keys come only from environment variables named LINDY_PROVIDER_KEY_<NAME>.

A superuser names the variable on the Models page; any other name (say TWILIO_AUTH_TOKEN, or
SECRET_KEY) would let them send that secret to a host of their choosing. Such a name is refused
by the form, the service and the model, and a row that holds one anyway (written before the
rule, or straight into the database) sends no key at all.
"""

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from router import gateway, services
from router.models import Provider, Route
from router.provider_keys import PREFIX, provider_api_key
from router.types import ModelError
from tests.conftest import client_for
from tests.fakes.openai_chat import FakeChatCompletions

from .helpers import cheap_target

OUTSIDE = ["TWILIO_AUTH_TOKEN", "SECRET_KEY", "ANTHROPIC_API_KEY", "ATLAS_API_KEY", "lindy_provider_key_atlas",
           PREFIX, f"{PREFIX}atlas", f"{PREFIX}ATLAS-1", f"X{PREFIX}ATLAS"]
FORM = {"name": "evil", "kind": "openai", "base_url": "https://collector.example/v1", "timeout_seconds": 60,
        "max_retries": 2}


def test_the_prefix_is_the_documented_one():
    from pathlib import Path

    assert PREFIX == "LINDY_PROVIDER_KEY_"
    assert PREFIX in (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.mark.django_db
@pytest.mark.parametrize("name", OUTSIDE)
def test_a_variable_outside_the_prefix_is_refused_by_the_form(cast, name):
    response = client_for(cast.superuser).post("/router/providers/new/", {**FORM, "api_key_env": name})
    assert response.status_code == 400
    assert not Provider.objects.filter(name="evil").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["TWILIO_AUTH_TOKEN", "SECRET_KEY"])
def test_a_variable_outside_the_prefix_is_refused_by_the_service_and_the_model(cast, name):
    with pytest.raises(ValidationError, match=PREFIX):
        services.provider_create(name="evil", kind="openai", base_url="https://collector.example/v1",
                                 api_key_env=name, actor=cast.superuser)
    with pytest.raises(ValidationError, match=PREFIX):
        Provider(name="evil", kind="openai", base_url="https://collector.example/v1", api_key_env=name).full_clean()
    assert not Provider.objects.filter(name="evil").exists()


@pytest.mark.django_db
def test_a_prefixed_variable_is_accepted(cast):
    response = client_for(cast.superuser).post("/router/providers/new/", {**FORM, "api_key_env": f"{PREFIX}ATLAS_2"})
    assert response.status_code == 302
    assert Provider.objects.get(name="evil").api_key_env == f"{PREFIX}ATLAS_2"


def test_only_prefixed_variables_are_ever_read(monkeypatch):
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", "twilio-secret")
    monkeypatch.setenv(f"{PREFIX}ATLAS", "atlas-key")
    assert provider_api_key("TWILIO_AUTH_TOKEN") == ""
    assert provider_api_key(f"{PREFIX}ATLAS") == "atlas-key"


@pytest.mark.django_db
def test_a_row_naming_another_variable_sends_no_key_at_call_time(monkeypatch):
    """Written around the validation (an old row, a raw UPDATE): the call is refused before any request."""
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", "twilio-secret")
    with FakeChatCompletions() as fake, override_settings(MODEL_OFFLINE=False):
        target = cheap_target(base_url=fake.base_url)
        Provider.objects.filter(pk=target.host_id).update(api_key_env="TWILIO_AUTH_TOKEN")
        Route.objects.filter(name="agent").update(baseline=target)
        from router import routing

        routing.invalidate()
        with pytest.raises(ModelError, match=PREFIX):
            gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}])
        assert fake.chat_requests == []
