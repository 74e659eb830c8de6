"""Provider budgets and route concurrency, set by a superuser on the Models pages: stored in the
database (settings are the defaults), applied by every worker at its next call, with the current
usage read from the same Redis buckets and slots the calls take from."""

from __future__ import annotations

import time
import uuid

import pytest
from django.conf import settings as django_settings

from lindy.models import AuditEntry
from router import budgets, routing
from router.models import AuditAction, ProviderBudget, Route
from tests.conftest import client_for

from .helpers import cheap_target

pytestmark = [pytest.mark.django_db, pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs Redis")]

URL = "/router/budgets/"


@pytest.fixture(autouse=True)
def fresh(settings):
    """Buckets and slots of this test only, and settings defaults the test knows."""
    settings.CACHE_KEY_PREFIX = f"budget-settings-{uuid.uuid4().hex[:8]}"
    settings.ROUTER_PROVIDER_BUDGETS = {"default": {"rpm": 4000, "tpm": 2_000_000},
                                        "anthropic": {"rpm": 50, "tpm": 40_000}}
    settings.ROUTER_ROUTE_CONCURRENCY = {"memory.agent": 4}
    routing.ensure_defaults()
    cheap_target()  # the "atlas" host, a provider with no budget of its own


def _row(body: str, marker: str) -> str:
    start = body.index(marker)
    return body[start:body.index("</tr>", start)]


def test_the_page_shows_each_providers_budget_its_source_and_each_routes_limit(cast, django_assert_max_num_queries):
    client = client_for(cast.superuser)
    client.get(URL)
    with django_assert_max_num_queries(10):
        body = client.get(URL).content.decode()
    anthropic = _row(body, 'data-budget="anthropic"')
    assert "50" in anthropic and "40,000" in anthropic and "settings" in anthropic
    atlas = _row(body, 'data-budget="atlas"')
    assert "4,000" in atlas and "2,000,000" in atlas and "default" in atlas
    assert 'data-budget="default"' in body
    agent_route = _row(body, 'data-route="memory.agent"')
    assert ">4<" in agent_route.replace(" ", "") and "settings" in agent_route
    assert 'data-route="validator"' in body


def test_a_superuser_sets_a_budget_and_the_next_call_obeys_it(cast):
    client = client_for(cast.superuser)
    response = client.post(URL, {"key": "atlas", "requests_per_minute": "2", "tokens_per_minute": "1000"})
    assert response.status_code == 302
    saved = ProviderBudget.objects.get(key="atlas")
    assert (saved.requests_per_minute, saved.tokens_per_minute) == (2, 1000)
    assert budgets.budget_for("atlas") == budgets.Budget(2, 1000)
    now = time.time()
    assert budgets.take("atlas", tokens=10, now=now) == 0
    assert budgets.take("atlas", tokens=10, now=now) == 0
    assert budgets.take("atlas", tokens=10, now=now) > 0  # two a minute
    event = AuditEntry.objects.get(action=AuditAction.PROVIDER_BUDGET_SET)
    assert event.actor == cast.superuser and event.after["requests_per_minute"] == 2
    body = client.get(URL).content.decode()
    atlas = _row(body, 'data-budget="atlas"')
    assert "database" in atlas and "2 of 2" in atlas  # two requests used this minute, of two


def test_back_to_the_default_removes_the_row(cast):
    client = client_for(cast.superuser)
    client.post(URL, {"key": "anthropic", "requests_per_minute": "5", "tokens_per_minute": "500"})
    assert budgets.budget_for("anthropic") == budgets.Budget(5, 500)
    assert client.post(URL, {"key": "anthropic", "use_default": "on"}).status_code == 302
    assert not ProviderBudget.objects.filter(key="anthropic").exists()
    assert budgets.budget_for("anthropic") == budgets.Budget(50, 40_000)  # settings again


def test_zero_means_unlimited(cast):
    client_for(cast.superuser).post(URL, {"key": "anthropic", "requests_per_minute": "0", "tokens_per_minute": "0"})
    assert budgets.budget_for("anthropic") is None


def test_route_concurrency_is_set_shown_in_use_and_cleared(cast):
    client = client_for(cast.superuser)
    url = f"{URL}routes/validator/"
    assert client.post(url, {"max_concurrency": "1"}).status_code == 302
    assert Route.objects.get(name="validator").max_concurrency == 1 and budgets.route_limit("validator") == 1
    with budgets.route_slot("validator"):
        with pytest.raises(budgets.BudgetExhausted):
            with budgets.route_slot("validator"):
                pass
        row = _row(client.get(URL).content.decode(), 'data-route="validator"')
        assert "1 of 1" in row and "database" in row
    assert client.post(url, {"use_default": "on"}).status_code == 302
    assert Route.objects.get(name="validator").max_concurrency is None and budgets.route_limit("validator") == 0
    assert budgets.route_limit("memory.agent") == 4
    assert AuditEntry.objects.filter(action=AuditAction.ROUTE_CONCURRENCY_SET).count() == 2


@pytest.mark.parametrize("data", [
    {"key": "anthropic", "requests_per_minute": "-1", "tokens_per_minute": "10"},
    {"key": "anthropic", "requests_per_minute": "abc", "tokens_per_minute": "10"},
    {"key": "anthropic", "requests_per_minute": str(2**63), "tokens_per_minute": "10"},
    {"key": "anthropic", "requests_per_minute": "10"},
    {"key": "", "requests_per_minute": "10", "tokens_per_minute": "10"},
    {"key": "no-such-provider", "requests_per_minute": "10", "tokens_per_minute": "10"},
    {"key": "offline", "requests_per_minute": "10", "tokens_per_minute": "10"},
])
def test_bad_budget_input_is_400_and_changes_nothing(cast, data):
    response = client_for(cast.superuser).post(URL, data)
    assert response.status_code == 400
    assert not ProviderBudget.objects.exists() and not AuditEntry.objects.exists()
    assert budgets.budget_for("anthropic") == budgets.Budget(50, 40_000)


@pytest.mark.parametrize("value", ["-1", "x", str(2**40)])
def test_bad_concurrency_is_400_and_an_unknown_route_404(cast, value):
    client = client_for(cast.superuser)
    assert client.post(f"{URL}routes/validator/", {"max_concurrency": value}).status_code == 400
    assert client.post(f"{URL}routes/no.such.route/", {"max_concurrency": "1"}).status_code == 404
    assert Route.objects.get(name="validator").max_concurrency is None and not AuditEntry.objects.exists()


@pytest.mark.parametrize("who", ["admin", "member", "support", "other_admin"])
def test_only_superusers_see_or_change_budgets(cast, who):
    client = client_for(getattr(cast, who))
    assert client.get(URL).status_code == 404
    assert client.post(URL, {"key": "anthropic", "requests_per_minute": "1", "tokens_per_minute": "1"}).status_code == 404
    assert client.post(f"{URL}routes/validator/", {"max_concurrency": "1"}).status_code == 404
    assert not ProviderBudget.objects.exists() and Route.objects.get(name="validator").max_concurrency is None
