"""Issue 35: outcomes where you act, words for people, odd ends (favicon, styled error pages in
the demo, the decision statistics for ops)."""
from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import client_for
from tests.validator.test_views import blocked_payment

pytestmark = pytest.mark.django_db


def test_the_message_area_takes_the_focus_without_javascript(cast):
    decision = blocked_payment(cast)
    client = client_for(cast.member)
    client.post(f"/validator/decisions/{decision.pk}/dismiss/")
    html = client.get(f"/validator/decisions/{decision.pk}/").content.decode()
    assert '<section class="messages" id="messages" aria-live="polite" tabindex="-1" autofocus>' in html
    quiet = client.get("/validator/").content.decode()
    assert 'id="messages" aria-live="polite" tabindex="-1" hidden>' in quiet


def test_the_offline_banner_names_no_environment_variable_to_an_end_user(cast, settings):
    settings.ANTHROPIC_API_KEY = ""
    member = client_for(cast.member).get("/").content.decode()
    assert "data-offline-provider" in member and "ANTHROPIC_API_KEY" not in member
    assert "Offline model provider" in member
    ops = client_for(cast.superuser).get("/").content.decode()
    assert "ANTHROPIC_API_KEY" in ops


def test_favicon_is_linked_and_served(cast):
    from django.contrib.staticfiles import finders

    html = client_for(cast.member).get("/").content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in html and finders.find("favicon.svg")
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"


@pytest.mark.parametrize("path", ["/no-such-page/", "/validator/decisions/999999/"])
def test_the_demo_shows_the_styled_404_not_the_url_list(cast, settings, path):
    settings.DEBUG = True
    response = client_for(cast.member).get(path)
    html = response.content.decode()
    assert response.status_code == 404 and 'data-error-page="404"' in html
    assert "URLconf" not in html and "Using the URLconf" not in html and "Lindy" in html


def test_the_demo_keeps_the_slash_redirect_and_the_api_json_404(cast, settings):
    settings.DEBUG = True
    client = client_for(cast.member)
    assert client.get("/validator").status_code == 301
    api = client.get("/api/no-such-endpoint")
    assert api.status_code == 404 and 'data-error-page' not in api.content.decode()


def test_a_forbidden_page_in_the_demo_is_the_styled_page(cast, settings):
    settings.DEBUG = True
    # Support staff never see blocked actions: the styled page, not Django's technical one.
    response = client_for(cast.support).get("/validator/")
    assert response.status_code in (403, 404) and "data-error-page" in response.content.decode()
    assert "URLconf" not in response.content.decode()


def test_a_superuser_sees_the_decision_statistics_counts_only(cast):
    blocked_payment(cast)
    response = client_for(cast.superuser).get("/validator/stats/")
    html = response.content.decode()
    assert response.status_code == 200 and 'data-tool="pay_invoice"' in html
    assert "NW-1" not in html and "Northwind" not in html
