"""The drafts page, the charts page and their API: own drafts only, team numbers for team
admins only, bad input answered with defaults or a 4xx, bounded queries, pagination."""

from __future__ import annotations

import pytest

from drafting.models import Draft
from tests.conftest import client_for

from .factories import draft, pair

pytestmark = pytest.mark.django_db

SAME = "Hi Jane,\n\nFriday works for me.\n\nThanks"
REWRITE = "Jane - Friday is out, legal still has the redlines. Next week instead?"


def test_the_drafts_page_shows_inbound_draft_sent_similarity_and_flag(cast, django_assert_max_num_queries):
    heavy = pair(cast.member, cast.team, sent=REWRITE)
    pair(cast.member, cast.team, sent=SAME)
    pair(cast.member, cast.team, sent="On Mon, Jane wrote:\n> Can you confirm Friday?")  # unscorable
    draft(cast.member, cast.team, status=Draft.Status.SKIPPED, subject="Newsletter")
    client = client_for(cast.member)
    with django_assert_max_num_queries(12):
        page = client.get("/drafting/")
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count("data-draft=") == 4 and html.count("data-heavy-edit") == 1 and "unscorable" in html
    assert f'{heavy.similarity:.2f}' in html and "Can you confirm" not in html  # the list shows the draft, not bodies in full
    detail = client.get(f"/drafting/{heavy.draft_id}/").content.decode()
    assert "Can you confirm Friday?" in detail and "legal still has the redlines" in detail and "heavily edited" in detail
    skipped = client.get("/drafting/?status=skipped").content.decode()
    assert skipped.count("data-draft=") == 1 and "Newsletter" in skipped
    assert client.get("/drafting/?status=nonsense").status_code == 200  # an unknown filter shows all


def test_drafts_are_the_users_own(cast):
    mine = draft(cast.member, cast.team)
    admins = draft(cast.admin, cast.team, subject="Admin's mail")
    other = draft(cast.other_admin, cast.other_team, subject="Globex mail")
    member = client_for(cast.member)
    html = member.get("/drafting/").content.decode()
    assert f'data-draft="{mine.pk}"' in html and "Admin's mail" not in html and "Globex mail" not in html
    # Not the admin's, not another team's, not support's: 404 (it does not exist for them).
    assert member.get(f"/drafting/{admins.pk}/").status_code == 404
    assert member.get(f"/drafting/{other.pk}/").status_code == 404
    assert client_for(cast.admin).get(f"/drafting/{mine.pk}/").status_code == 404
    assert client_for(cast.support).get("/drafting/").status_code == 404
    assert client_for(cast.support).get(f"/drafting/{mine.pk}/").status_code == 404


def test_drafts_are_paginated(cast):
    for _ in range(23):
        draft(cast.member, cast.team)
    client = client_for(cast.member)
    first = client.get("/drafting/").content.decode()
    second = client.get("/drafting/?page=2").content.decode()
    assert first.count("data-draft=") == 20 and second.count("data-draft=") == 3 and "Page 2 of 2" in second
    assert client.get("/drafting/?page=abc").status_code == 200


def test_api_lists_own_drafts_with_pairs_and_bounds_pagination(cast, api_for):
    pair(cast.member, cast.team, sent=REWRITE)
    draft(cast.other_admin, cast.other_team)
    api = api_for(cast.member)
    body = api.get("/api/drafting/drafts", limit=10).json()
    assert body["count"] == 1 and body["items"][0]["pair"]["heavy_edit"] is True
    assert api.get("/api/drafting/drafts", limit=1000).status_code == 422
    assert api.get("/api/drafting/drafts", status="bogus").status_code == 422
    other = Draft.objects.get(user=cast.other_admin)
    assert api.get(f"/api/drafting/drafts/{other.pk}").status_code == 404


def test_charts_data_rates_by_target_and_variant_with_unscorable_counted_apart(cast, api_for):
    pair(cast.member, cast.team, sent=REWRITE, target="offline-rules", variant="default")
    pair(cast.member, cast.team, sent=SAME, target="offline-rules", variant="default")
    pair(cast.member, cast.team, sent=REWRITE, target="cheap", variant="flash-tuned", days_ago=2)
    pair(cast.member, cast.team, sent="On Mon, Jane wrote:\n> hi", target="cheap", variant="flash-tuned")
    pair(cast.admin, cast.team, sent=SAME)
    data = api_for(cast.member).get("/api/drafting/charts", days=7).json()
    heavy = data["heavy_edit"]
    assert heavy["total"] == {"scorable": 3, "heavy": 2, "unscorable": 1, "rate": 66.7}
    assert len(heavy["periods"]) == 2
    series = {(s["target"], s["variant"]): s for s in heavy["series"]}
    assert series[("offline-rules", "default")]["rate"][-1] == 50.0
    assert series[("cheap", "flash-tuned")]["rate"] == [100.0, None] and series[("cheap", "flash-tuned")]["unscorable"] == [0, 1]
    assert sum(data["similarity"]["counts"]) == 3 and data["similarity"]["unscorable"] == 1
    assert data["proposals"] == []  # the learner has decided nothing yet
    weekly = api_for(cast.member).get("/api/drafting/charts", days=7, period="week").json()["heavy_edit"]
    assert weekly["period"] == "week" and weekly["total"]["scorable"] == 3


def test_team_charts_are_for_the_teams_admins(cast, api_for, django_assert_max_num_queries):
    pair(cast.member, cast.team, sent=REWRITE)
    pair(cast.admin, cast.team, sent=SAME)
    team = api_for(cast.admin).get("/api/drafting/charts", team=cast.team.pk).json()
    assert team["heavy_edit"]["total"]["scorable"] == 2
    assert api_for(cast.member).get("/api/drafting/charts", team=cast.team.pk).status_code == 404
    assert api_for(cast.other_admin).get("/api/drafting/charts", team=cast.team.pk).status_code == 404
    assert api_for(cast.admin).get("/api/drafting/charts", days=5).status_code == 422
    client = client_for(cast.admin)
    with django_assert_max_num_queries(14):
        page = client.get(f"/drafting/charts/?team={cast.team.pk}&period=week")
    html = page.content.decode()
    assert page.status_code == 200 and "Your team's" in html and "data-empty-state" in html
    assert client_for(cast.member).get(f"/drafting/charts/?team={cast.team.pk}").status_code == 404
    assert client_for(cast.member).get("/drafting/charts/?days=abc&period=x").status_code == 200
    assert client_for(cast.support).get("/drafting/charts/").status_code == 404


def test_a_registered_learner_fills_the_proposals_chart(cast, api_for):
    from drafting import selectors

    saved = list(selectors._proposal_counts)
    try:
        selectors.register_proposal_counts(lambda **kw: [{"period": "2026-12-01", "accepted": 1, "rejected": 3}])
        assert api_for(cast.member).get("/api/drafting/charts").json()["proposals"][0]["rejected"] == 3
        assert 'id="proposals-chart"' in client_for(cast.member).get("/drafting/charts/").content.decode()
    finally:
        selectors._proposal_counts[:] = saved
