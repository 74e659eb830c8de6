"""Configuration writes go through router.services and leave an audit entry (lindy.AuditEntry): who, when,
before, after. Bad input is a 4xx and changes nothing (no row, no event)."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from lindy.models import AuditEntry
from router import routing, services, variants
from router.models import PromptVariant, Provider, Route, Target
from tests.conftest import client_for

from .helpers import cheap_target, route, variant

pytestmark = pytest.mark.django_db

TARGET_FORM = {"name": "flash", "provider": "openai", "model": "deepseek-v4-flash", "input_price": "0.1",
               "output_price": "0.2", "cache_write_price": "0", "cache_read_price": "0"}
PROVIDER_FORM = {"name": "atlas", "kind": "openai", "base_url": "https://api.atlas.test/v1",
                 "api_key_env": "LINDY_PROVIDER_KEY_ATLAS", "timeout_seconds": 60, "max_retries": 2}


def test_baseline_change_records_who_when_before_and_after(cast):
    agent = route("agent")
    old_baseline = agent.baseline_id
    variant(agent, "concise")  # a prompt the agent app builds (agent.prompts)
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    started = timezone.now()
    response = client_for(cast.superuser).post("/router/routes/agent/baseline/",
                                               {"baseline": haiku.pk, "baseline_variant": "concise",
                                                "override_reason": "No eval set for the agent yet."})
    assert response.status_code == 302
    event = AuditEntry.objects.get()
    assert (event.actor, event.action, event.object_type, event.object_id) == (
        cast.superuser, "route.baseline_set", "route", str(agent.pk))
    assert event.created_at >= started
    assert event.before == {"baseline": old_baseline, "baseline_variant": "default", "baseline_override_reason": "",
                            "baseline_override_by": None}
    assert event.after == {"baseline": haiku.pk, "baseline_variant": "concise",
                           "baseline_override_reason": "No eval set for the agent yet.",
                           "baseline_override_by": cast.superuser.pk}
    assert routing.assign("agent").target.name == haiku.name
    # The route page shows the change to superusers.
    page = client_for(cast.superuser).get("/router/routes/agent/").content.decode()
    assert "Route baseline changed" in page and cast.superuser.email in page


def test_bad_baseline_changes_nothing(cast):
    agent = route("agent")
    client = client_for(cast.superuser)
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    assert client.post("/router/routes/agent/baseline/", {"baseline": 999999, "baseline_variant": "default"}
                       ).status_code == 400
    assert client.post("/router/routes/agent/baseline/", {"baseline": haiku.pk, "baseline_variant": "nope"}
                       ).status_code == 400
    with pytest.raises(ValidationError):
        services.route_baseline_set(route=agent, baseline=haiku, baseline_variant="nope", actor=cast.superuser)
    assert Route.objects.get(pk=agent.pk).baseline_id == agent.baseline_id
    assert not AuditEntry.objects.exists()


def test_refused_baseline_during_a_rollout_records_nothing(cast):
    agent = route("agent")
    services.rollout_start(route=agent, candidate=cheap_target(), actor=cast.superuser,
                           override_reason="The agent route has no offline eval set yet.")
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    response = client_for(cast.superuser).post("/router/routes/agent/baseline/",
                                               {"baseline": haiku.pk, "baseline_variant": "default"})
    assert response.status_code == 409
    # The rollout's start is recorded; the refused baseline is not.
    assert list(AuditEntry.objects.values_list("action", "actor")) == [("rollout.started", cast.superuser.pk)]


def test_variant_added_with_an_event_and_a_duplicate_is_refused(cast):
    email = route("tests.draft")  # owned by the test, which declares that it builds "terse"
    variants.register({"tests.draft": {"default": "", "terse": "Fewer words."}}, owner="tests")
    client = client_for(cast.superuser)
    response = client.post("/router/routes/tests.draft/variants/", {"name": "terse", "description": "Fewer words."})
    assert response.status_code == 302
    created = PromptVariant.objects.get(route=email, name="terse")
    event = AuditEntry.objects.get()
    assert (event.actor, event.action, event.object_type, event.object_id) == (
        cast.superuser, "prompt_variant.created", "prompt_variant", str(created.pk))
    assert event.before is None and event.after["name"] == "terse" and event.after["route"] == email.pk
    again = client.post("/router/routes/tests.draft/variants/", {"name": "terse", "description": "again"})
    assert again.status_code == 400 and "already has a variant" in again.content.decode()
    bad = client.post("/router/routes/tests.draft/variants/", {"name": "not a slug!"})
    assert bad.status_code == 400
    assert PromptVariant.objects.filter(route=email).count() == 2  # default + terse
    assert AuditEntry.objects.count() == 1
    with pytest.raises(ValidationError):
        services.prompt_variant_create(route=email, name="terse", actor=None)
    assert AuditEntry.objects.count() == 1


def test_a_variant_the_owner_does_not_build_is_refused(cast):
    """A name is not a prompt: the agent app builds no "terse" prompt, so the route can't have one."""
    agent = route("agent")
    refused = client_for(cast.superuser).post("/router/routes/agent/variants/", {"name": "terse"})
    assert refused.status_code == 400 and "builds no prompt variant" in refused.content.decode()
    assert not PromptVariant.objects.filter(route=agent, name="terse").exists()
    assert not AuditEntry.objects.exists()


def test_target_and_provider_creation_are_audited(cast):
    client = client_for(cast.superuser)
    assert client.post("/router/providers/new/", PROVIDER_FORM).status_code == 302
    host = Provider.objects.get(name="atlas")
    assert client.post("/router/targets/new/", {**TARGET_FORM, "host": host.pk}).status_code == 302
    target = Target.objects.get(name="flash")
    events = {e.object_type: e for e in AuditEntry.objects.all()}
    assert events["provider"].after["base_url"] == "https://api.atlas.test/v1"
    assert events["provider"].after["api_key_env"] == "LINDY_PROVIDER_KEY_ATLAS" and events["provider"].before is None
    assert events["target"].after["host"] == host.pk and events["target"].after["input_price"] == "0.1"
    assert events["target"].object_id == str(target.pk)
    assert {e.actor for e in events.values()} == {cast.superuser}
    page = client.get("/router/targets/").content.decode()
    assert "Target added" in page and "Provider added" in page


def test_bad_target_or_provider_changes_nothing(cast):
    client = client_for(cast.superuser)
    routing.ensure_defaults()
    counts = (Target.objects.count(), Provider.objects.count())
    assert client.post("/router/providers/new/", {**PROVIDER_FORM, "base_url": ""}).status_code == 400
    assert client.post("/router/providers/new/", {**PROVIDER_FORM, "api_key_env": "not a name"}).status_code == 400
    assert client.post("/router/targets/new/", TARGET_FORM).status_code == 400  # OpenAI-compatible, no host
    assert client.post("/router/targets/new/", {**TARGET_FORM, "input_price": "lots"}).status_code == 400
    with pytest.raises(ValidationError):
        services.target_create(name="flash", provider="openai", model="m", input_price=Decimal("1"), actor=None)
    with pytest.raises(ValidationError):
        services.provider_create(name="atlas", kind="openai", actor=None)
    assert (Target.objects.count(), Provider.objects.count()) == counts
    assert not AuditEntry.objects.exists()


def test_system_writes_have_no_actor():
    routing.ensure_defaults()
    provider = services.provider_create(name="local", kind="offline", actor=None)
    event = AuditEntry.objects.get()
    assert event.actor is None and event.object_id == str(provider.pk)


@pytest.mark.parametrize("who", ["admin", "member", "support"])
def test_only_superusers_write_or_see_changes(cast, who):
    routing.ensure_defaults()
    client = client_for(getattr(cast, who))
    assert client.post("/router/providers/new/", PROVIDER_FORM).status_code == 404
    assert client.post("/router/routes/agent/variants/", {"name": "terse"}).status_code == 404
    assert not AuditEntry.objects.exists()
    # Not staff: the admin's audit log sends them to its login page.
    assert client.get("/admin/lindy/auditentry/").status_code == 302
