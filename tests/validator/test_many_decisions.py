"""The decision lists stay bounded however many decisions a user has: counts stop past the page
asked for, queries don't grow with rows, and the navigation badge is capped but right."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lindy import counting, navigation
from tests.conftest import client_for
from validator import services
from validator.models import Decision

from .test_views import blocked_payment

pytestmark = pytest.mark.django_db

STATUSES = ["executed", "exempt", "allowed", "blocked", "dismissed", "executed", "authorized"]


def many(user, team, n, status=None):
    Decision.objects.bulk_create([
        Decision(team=team, user=user, tool="send_email", effect="third_party", arguments={"n": i},
                 status=status or STATUSES[i % len(STATUSES)], reasoning="Bulk.")
        for i in range(n)
    ])


def _decision_counts(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries
            if "COUNT(" in q["sql"] and "validator_decision" in q["sql"]]


@pytest.mark.parametrize("url", ["/validator/", "/validator/?show=all", "/validator/?show=all&page=3",
                                 "/api/validator/decisions", "/api/validator/decisions?status=blocked&limit=20"])
def test_queries_and_counts_do_not_grow_with_rows(cast, url, django_assert_max_num_queries):
    client = client_for(cast.member)
    many(cast.member, cast.team, 40)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    many(cast.member, cast.team, 400)
    with django_assert_max_num_queries(len(few)), CaptureQueriesContext(connection) as lots:
        assert client.get(url).status_code == 200
    counts = _decision_counts(lots)
    assert counts and all(re.search(r"LIMIT \d+", sql) for sql in counts), counts


def test_page_count_stops_past_the_page_and_older_still_works(cast, monkeypatch):
    monkeypatch.setattr(counting, "COUNT_AHEAD", 50)
    many(cast.member, cast.team, 200, status="blocked")
    client = client_for(cast.member)
    first = client.get("/validator/").content.decode()
    assert "Page 1 of 4+" in first  # 20 + 50 rows counted: four pages, and more
    assert first.count("data-decision=") == 20
    fourth = client.get("/validator/?page=4").content.decode()
    assert "Page 4 of 7+" in fourth and "Older →" in fourth
    last = client.get("/validator/?page=10").content.decode()
    assert "Page 10 of 10<" in last and "Older →" not in last and last.count("data-decision=") == 20


def test_api_count_is_exact_below_the_cap_and_a_floor_above(cast, api_for, monkeypatch):
    from validator import api

    monkeypatch.setattr(api, "COUNT_AHEAD", 30)
    many(cast.member, cast.team, 25, status="blocked")
    assert api_for(cast.member).get("/api/validator/decisions", status="blocked").json()["count"] == 25
    many(cast.member, cast.team, 200, status="blocked")
    body = api_for(cast.member).get("/api/validator/decisions", status="blocked", limit=10, offset=20).json()
    assert body["count"] == 20 + 10 + 30 and len(body["items"]) == 10


@pytest.mark.parametrize("page", ["abc", "-5", "0", "1e3", "99999999999999999999999", ""])
def test_bad_page_numbers_are_a_page_not_an_error(cast, page):
    many(cast.member, cast.team, 30, status="blocked")
    response = client_for(cast.member).get("/validator/", {"page": page})
    assert response.status_code == 200 and b"data-decision=" in response.content


def test_bad_api_input_is_4xx(cast, api_for):
    theirs = Decision.objects.create(team=cast.other_team, user=cast.other_admin, tool="send_email",
                                     effect="third_party", status="blocked")
    api = api_for(cast.member)
    assert api.get(f"/api/validator/decisions/{theirs.pk}").status_code == 404
    assert api.post(f"/api/validator/decisions/{theirs.pk}/dismiss").status_code == 404
    assert api.get("/api/validator/decisions", offset="abc").status_code == 422
    assert api.get("/api/validator/decisions", limit="-1").status_code == 422
    assert client_for(cast.member).get(f"/validator/decisions/{theirs.pk}/").status_code == 404
    assert Decision.objects.get(pk=theirs.pk).status == "blocked"


def _badge(user):
    return {i["key"]: i for i in navigation.items_for(user)}["blocked-actions"]["badge"]


def test_badge_follows_new_blocks_authorize_and_dismiss(cast, settings):
    first, second = blocked_payment(cast), blocked_payment(cast)
    assert _badge(cast.member) == 2
    services.decision_dismiss(decision_id=first.pk, user=cast.member)
    assert _badge(cast.member) == 1
    third = blocked_payment(cast)
    assert _badge(cast.member) == 2
    services.decision_authorize(decision_id=third.pk, user=cast.member)
    assert _badge(cast.member) == 1
    response = client_for(cast.member).post(f"/validator/decisions/{second.pk}/dismiss/")
    assert response.status_code == 302
    assert b'data-badge="blocked-actions"' not in client_for(cast.member).get("/").content


def test_badge_is_capped_and_costs_one_bounded_query(cast):
    many(cast.member, cast.team, 150, status="blocked")
    many(cast.member, cast.other_team, 5, status="executed")
    with CaptureQueriesContext(connection) as captured:
        assert _badge(cast.member) == "99+"
    counts = _decision_counts(captured)
    assert len(counts) == 1 and "LIMIT 100" in counts[0]
    assert b'data-badge="blocked-actions">99+<' in client_for(cast.member).get("/").content
    Decision.objects.filter(user=cast.member, status="blocked").exclude(
        pk__in=Decision.objects.filter(user=cast.member, status="blocked").values("pk")[:99]).delete()
    assert _badge(cast.member) == 99
