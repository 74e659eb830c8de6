"""The charts page in headless Chromium, and the rollout page's draft.heavy_edit metric linking to it."""

from __future__ import annotations

import pytest

from router import services as router_services
from tests.conftest import client_for
from tests.factories import PASSWORD
from tests.fixtures.live_browser import login
from tests.router.helpers import cheap_target, offline_evidence, record_call, route, variant

from .factories import pair

REWRITE = "Jane - Friday is out, legal still has the redlines. Next week instead?"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_charts_page_draws_the_heavy_edit_rate_and_the_histogram(browser_page, cast):
    pair(cast.member, cast.team, sent=REWRITE)
    pair(cast.member, cast.team, sent="Hi Jane,\n\nFriday works for me.\n\nThanks", days_ago=1)
    page = browser_page
    login(page, cast.member.email, PASSWORD)
    page.goto(f"{page.live_server_url}/drafting/charts/")
    page.wait_for_selector('canvas#heavy-edit-chart[data-drawn="1"]')
    page.wait_for_selector('canvas#similarity-chart[data-drawn="1"]')
    assert "1 of 2 scored pairs heavily edited (50.0 %)" in page.inner_text("[data-total]")


@pytest.mark.django_db
def test_rollout_page_links_the_heavy_edit_metric_to_the_charts(cast):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    rollout = router_services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    call = record_call(rollout=rollout, arm="candidate")
    router_services.call_score_record(call_id=call.pk, metric="draft.heavy_edit", value=1.0, source="drafting")
    html = client_for(cast.superuser).get(f"/router/rollouts/{rollout.pk}/").content.decode()
    assert '<tr data-metric="draft.heavy_edit"><th><a href="/drafting/charts/">draft.heavy_edit</a>' in html
