"""`make bench`: the validator's lists at 100,000 decisions (bench/decisions_bench.py builds them).

Each page's p95 against the trivial signed-in view (which runs the same navigation badge), with
its queries bounded: no count or sort grows with the user's decisions."""

from __future__ import annotations

import decisions_bench
import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from ratios import interleaved, p95, record

RUNS = 40
PAGE_GOAL = 3.0
MAX_QUERIES = 8
# The API pages are read 20 at a time, as the blocked-actions page shows them: what a page of 100
# costs more is the per-item serialization (ninja reads 25 fields of each), not the 100,000 rows;
# test_api_page_of_100 prints it for information.
URLS = {
    "blocked-actions page": "/validator/",
    "blocked-actions page (all, page 40)": "/validator/?show=all&page=40",
    "decisions API (?limit=20)": "/api/validator/decisions?limit=20",
    "decisions API (?status=blocked, offset 500)": "/api/validator/decisions?status=blocked&limit=20&offset=500",
}


@pytest.fixture(scope="module")
def decisions(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        reviewer, admin, seconds = decisions_bench.build()
        print(f"\ninserted {decisions_bench.DECISIONS:,} decisions in {seconds:.1f} s")
        yield reviewer, admin


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(URLS))
def test_reviewer_pages(decisions, name):
    reviewer, _ = decisions
    client = _client(reviewer)
    url = URLS[name]
    with override_settings(ROOT_URLCONF="bench_urls"):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200
        print(f"\n{name}: {len(captured)} queries")
        assert len(captured) <= MAX_QUERIES
        page, trivial = interleaved(lambda: client.get(url), lambda: client.get("/bench/trivial/"), RUNS)
    record(f"validator at 100,000 decisions: {name}", p95(page), p95(trivial), PAGE_GOAL, note="p95")


@pytest.mark.django_db
def test_statistics_page(decisions):
    """Not a list: the admins' per-day counts over 30 days (50,000 decisions here). Past days come
    from the daily roll-up (validator.daily_stats, which beat runs every few minutes), only the
    days not rolled up yet from the decisions. Printed for information."""
    from validator import daily_stats

    _, admin = decisions
    while daily_stats.rollup():  # as beat would have by now, a month at a time
        pass
    client = _client(admin)
    with override_settings(ROOT_URLCONF="bench_urls"):
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/validator/stats/").status_code == 200
        queries = len(captured)  # read now: the connection's query log is a bounded deque
        assert queries <= MAX_QUERIES
        page, trivial = interleaved(lambda: client.get("/validator/stats/"), lambda: client.get("/bench/trivial/"),
                                    RUNS)
    print(f"\ninfo: decision statistics (admin, 30 days of 50,000 decisions, rolled up through "
          f"{daily_stats.rolled_up_through()}): {p95(page) / p95(trivial):.1f}× the trivial view (p95), {queries} queries")


@pytest.mark.django_db
def test_api_page_of_100(decisions):
    reviewer, _ = decisions
    client = _client(reviewer)
    with override_settings(ROOT_URLCONF="bench_urls"):
        page, trivial = interleaved(lambda: client.get("/api/validator/decisions"),
                                    lambda: client.get("/bench/trivial/"), RUNS)
    print(f"\ninfo: decisions API, default page of 100: {p95(page) / p95(trivial):.1f}× the trivial view (p95)")
