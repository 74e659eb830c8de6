"""An attacker's URL variants against the key binding (issue 29, part 1): a provider row whose base
URL spells the bound host another way (trailing slash, capitals, the default port written out,
another path) still reaches that host with its key; one that only looks like it (userinfo naming the
bound host before another, the bound host in a fragment, query or path, another port, a subdomain)
sends neither the key nor the prompt. Each variant goes through the real gateway to local servers.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.test import override_settings

from router import gateway, routing
from router.models import Provider, Route
from router.provider_keys import origin
from router.types import ModelError
from tests.conftest import client_for
from tests.fakes.openai_chat import FakeChatCompletions

from .helpers import cheap_target

KEY = "LINDY_PROVIDER_KEY_ATLAS"
URL = "LINDY_PROVIDER_URL_ATLAS"


@pytest.fixture
def hosts(monkeypatch, db):
    with FakeChatCompletions() as real, FakeChatCompletions() as collector, override_settings(MODEL_OFFLINE=False):
        monkeypatch.setenv(KEY, FakeChatCompletions.API_KEY)
        monkeypatch.setenv(URL, real.base_url)
        yield real, collector


def _call_through(base_url: str):
    Route.objects.filter(name="agent").update(baseline=cheap_target(base_url=base_url))
    routing.invalidate()
    return gateway.complete(route="agent", messages=[{"role": "user", "content": "the validator's prompt"}])


def _spelled(real, collector) -> dict[str, str]:
    bound, other = urlsplit(real.base_url), urlsplit(collector.base_url)
    return {"bound": bound.netloc, "other": other.netloc, "host": bound.hostname, "port": str(bound.port),
            "other_port": str(other.port), "path": bound.path}


SAME_HOST = [
    "http://{bound}{path}/",  # trailing slash
    "HTTP://{bound}{path}",  # capitals in the scheme
    "http://{bound}{path}/../v1",  # a dot segment
]
OTHER_HOST = [
    "http://user:pw@{bound}{path}",  # the client would send user:pw as Basic auth in place of the key
    "http://{bound}@{other}{path}",  # the bound host as userinfo
    "http://{host}:{port}@{other}{path}",
    "http://{other}/{bound}{path}",  # the bound host in the path
    "http://{other}{path}?{bound}",  # ... in the query
    "http://{other}{path}#@{bound}",  # ... in a fragment
    "http://{host}:{other_port}{path}",  # the bound host's name at another port
    "https://{bound}{path}",  # another scheme
    "http://{other}\\@{bound}{path}",  # a backslash before the @: userinfo, refused as such
]


@pytest.mark.parametrize("spelling", SAME_HOST)
def test_the_bound_host_spelled_another_way_gets_its_key(hosts, spelling):
    real, collector = hosts
    real.reply_text("hello")
    base_url = spelling.format(**_spelled(real, collector))
    assert origin(base_url) == origin(real.base_url), base_url
    _call_through(base_url)
    assert [r.headers.get("authorization") for r in real.chat_requests] == [f"Bearer {FakeChatCompletions.API_KEY}"]
    assert collector.chat_requests == []


@pytest.mark.parametrize("spelling", OTHER_HOST)
def test_a_lookalike_of_the_bound_host_gets_no_key_and_no_prompt(hosts, spelling):
    real, collector = hosts
    real.reply_text("hello")
    collector.reply_text("approved")
    base_url = spelling.format(**_spelled(real, collector))
    with pytest.raises(ModelError, match="no key is sent|user name or password"):
        _call_through(base_url)
    assert collector.chat_requests == [] and real.chat_requests == []


@pytest.mark.parametrize("a, b", [
    ("https://api.atlas.test/v1", "https://api.atlas.test:443/v1"),  # the default port written out
    ("https://api.atlas.test/v1", "https://API.Atlas.Test/v1/"),
    ("http://api.atlas.test/v1", "http://api.atlas.test:80"),
    ("https://api.atlas.test/v1", "https://api.atlas.test/another/path"),
])
def test_default_ports_and_case_are_one_origin(a, b):
    assert origin(a) == origin(b) is not None


def test_the_admin_cannot_change_a_provider_around_the_audit(hosts, cast):
    """The audited service is the only writer of a provider's URL and key variable: the Django admin
    shows providers read-only, even to a superuser."""
    real, collector = hosts
    provider = cheap_target(base_url=real.base_url).host
    client = client_for(cast.superuser)
    response = client.post(f"/admin/router/provider/{provider.pk}/change/",
                           {"name": "atlas", "kind": "openai", "base_url": collector.base_url, "api_key_env": KEY,
                            "timeout_seconds": 60, "max_retries": 1})
    assert response.status_code == 403
    assert Provider.objects.get(pk=provider.pk).base_url == real.base_url


def test_a_base_url_with_credentials_is_refused_where_it_is_written(db, cast):
    from django.core.exceptions import ValidationError

    from router import services

    with pytest.raises(ValidationError, match="user name or password"):
        services.provider_create(name="creds", kind="openai", base_url="https://u:p@api.atlas.test/v1",
                                 api_key_env=KEY, actor=cast.superuser)
    assert not Provider.objects.filter(name="creds").exists()
