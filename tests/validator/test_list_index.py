"""The "All decisions" list at any page: an index serves its exact filter (the user's decisions,
exempt ones left out) in its order, and the page's rows are fetched by a deferred join, so a deep
page skips its offset in the index instead of reading every skipped row from the table."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.conftest import client_for
from validator.models import Decision

pytestmark = pytest.mark.django_db

STATUSES = ["executed", "exempt", "allowed", "blocked", "dismissed", "exempt", "authorized"]


def _many(user, team, n, start=0):
    now = timezone.now()
    return Decision.objects.bulk_create([
        Decision(team=team, user=user, tool="send_email", effect="third_party", arguments={"n": start + i},
                 status=STATUSES[i % len(STATUSES)], reasoning="Bulk.",
                 # Two rows share each timestamp: the id breaks the tie, as the order says.
                 created_at=now - timedelta(minutes=(start + i) // 2))
        for i in range(n)
    ])


def _shown(content: bytes) -> list[int]:
    return [int(pk) for pk in re.findall(rb'data-decision="(\d+)"', content)]


def _plans(sqls: list[str]) -> list[str]:
    """Each statement's plan as PostgreSQL would run it on a large table (sequential scans off,
    as they are when the user's rows are a small share of 100,000)."""
    plans = []
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_bitmapscan = off")
        try:
            for sql in sqls:
                cursor.execute("EXPLAIN " + sql)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_bitmapscan")
    return plans


def _sqlite_plans(sqls: list[str]) -> list[str]:
    with connection.cursor() as cursor:
        plans = []
        for sql in sqls:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plans.append("\n".join(str(row[-1]) for row in cursor.fetchall()))
    return plans


def test_every_page_shows_the_users_non_exempt_decisions_newest_first(cast):
    _many(cast.member, cast.team, 70)
    _many(cast.member, cast.other_team, 10, start=1000)  # not their team (any more): never shown
    _many(cast.other_admin, cast.team, 10)  # someone else's
    expected = list(Decision.objects.filter(user=cast.member, team=cast.team).exclude(status="exempt")
                    .order_by("-created_at", "-pk").values_list("pk", flat=True))
    client = client_for(cast.member)
    shown = []
    for page in (1, 2, 3):
        shown += _shown(client.get("/validator/", {"show": "all", "page": page}).content)
    assert shown == expected and len(expected) == 50


@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction
def test_a_deep_page_reads_only_index_entries_for_the_rows_it_skips(cast):
    _many(cast.member, cast.team, 1000)
    _many(cast.other_admin, cast.team, 3000)
    with connection.cursor() as cursor:
        # As autovacuum would have: statistics, and the visibility map index-only scans need.
        cursor.execute("VACUUM ANALYZE validator_decision" if connection.vendor == "postgresql" else "ANALYZE")
    with CaptureQueriesContext(connection) as captured:
        assert client_for(cast.member).get("/validator/", {"show": "all", "page": 4}).status_code == 200
    lists = [q["sql"] for q in captured.captured_queries
             if "validator_decision" in q["sql"] and "exempt" in q["sql"]]
    assert len(lists) == 2, lists  # the capped count and the page
    if connection.vendor == "sqlite":
        count, page = _sqlite_plans(lists)
        assert "INDEX decision_user_shown_newest" in count, count
        # The offset is skipped in the index; the page's 20 rows are then fetched by primary key
        # (and SQLite sorts those 20 again, which costs nothing).
        assert "SEARCH U0 USING INDEX decision_user_shown_newest" in page, page
        assert "SEARCH validator_decision USING INTEGER PRIMARY KEY" in page, page
        return
    count, page = _plans(lists)
    assert "Index Only Scan using decision_user_shown_newest" in count, count
    # The offset is skipped inside an index-only scan of ids; only the page's 20 rows are fetched.
    assert "Index Only Scan using decision_user_shown_newest" in page, page
    assert re.search(r"Index Scan using validator_decision_pkey", page), page
    assert "Sort Key: validator_decision.created_at" not in page.split("Limit")[-1], page


def test_the_list_leaves_each_decisions_history_and_evidence_in_the_table(cast):
    _many(cast.member, cast.team, 30)
    with CaptureQueriesContext(connection) as captured:
        assert client_for(cast.member).get("/validator/", {"show": "all"}).status_code == 200
    pages = [q["sql"] for q in captured.captured_queries if '"validator_decision"."arguments"' in q["sql"]]
    assert len(pages) == 1 and '"validator_decision"."history"' not in pages[0] and '"evidence"' not in pages[0]
