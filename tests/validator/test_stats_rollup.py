"""The admins' statistics read a daily roll-up (validator.daily_stats): past days from one summary
row per team, tool and day, only the days not rolled up yet from the decisions themselves. The
figures always equal a direct aggregate over the decisions, before a roll-up, after it, and
after new decisions arrive; the page's cost grows with the days shown, not the decisions."""

from __future__ import annotations

from datetime import datetime, time, timedelta

import pytest
import time_machine
from django.db import connection
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lindy import schedules
from tests.conftest import client_for
from validator import daily_stats, selectors
from validator.models import Decision, DecisionDay, DecisionRollup

pytestmark = pytest.mark.django_db

STATUSES = ["executed", "exempt", "allowed", "blocked", "dismissed", "authorized", "execution_failed"]
TOOLS = ["send_email", "pay_invoice", "delete_file"]


def _decisions(team, user, n, *, days_back: float, seed: int = 0):
    now = timezone.now()
    Decision.objects.bulk_create([
        Decision(team=team, user=user, tool=TOOLS[(seed + i) % 3], effect="third_party", arguments={"n": i},
                 status=STATUSES[(seed + i) % len(STATUSES)], approved=(seed + i) % 3 != 0,
                 validator_failure=(seed + i) % 11 == 0,
                 created_at=now - timedelta(seconds=days_back * 86400 * i / n))
        for i in range(n)
    ])


def _direct(user, days: int) -> dict:
    """What the page must show: every validated decision of the period, aggregated in one go."""
    team_ids = list(user.memberships.filter(role="admin").values_list("team_id", flat=True))
    first_day = timezone.localdate() - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(first_day, time.min))
    rows = (Decision.objects.filter(team_id__in=team_ids, created_at__gte=since, status__in=selectors.VALIDATED)
            .annotate(day=TruncDate("created_at")).values("team__name", "tool", "day")
            .annotate(total=Count("id"), blocked=Count("id", filter=Q(approved=False)),
                      failures=Count("id", filter=Q(validator_failure=True))))
    return {(r["team__name"], r["tool"], r["day"].isoformat()): (r["total"], r["blocked"], r["failures"])
            for r in rows}


def _shown(user, days: int) -> dict:
    """The page's figures: per team, tool and day as the page reads them (each day from one place,
    a summary or the live aggregate), and the page's totals per tool checked against those days."""
    from lindy.models import Team
    from lindy.permissions import admin_team_ids

    first_day = timezone.localdate() - timedelta(days=days - 1)
    names = dict(Team.objects.values_list("pk", "name"))
    out: dict = {}
    for row in daily_stats.day_rows(admin_team_ids(user), first_day):
        key = (names[row["team_id"]], row["tool"], row["day"].isoformat())
        assert key not in out, key  # a day is read from the summaries or live, never both
        out[key] = (row["total"], row["blocked"], row["failures"])
    for team, data in selectors.team_stats(user, days=days).items():
        for tool in data["tools"]:
            mine = [v for (t, name, _), v in out.items() if (t, name) == (team, tool["tool"])]
            assert (tool["total"], tool["blocked"], tool["failures"]) == tuple(map(sum, zip(*mine, strict=True)))
    return out


def _rollup_all(**kwargs) -> int:
    """As beat would over a few ticks: roll up until nothing is left."""
    days = 0
    while done := daily_stats.rollup(**kwargs):
        days += done
    return days


@pytest.fixture(autouse=True)
def _midday():
    """The history spans 40 days back from now, so how many whole past days it covers depends on the
    hour (after 22:24 UTC it was 39, and the roll-up count failed): hold the clock at today's noon,
    still running, so the days are the same at any hour the suite runs."""
    noon = timezone.make_aware(datetime.combine(timezone.localdate(), time(12)))
    with time_machine.travel(noon, tick=True):
        yield


@pytest.fixture
def history(cast):
    _decisions(cast.team, cast.member, 600, days_back=40)
    _decisions(cast.other_team, cast.other_admin, 200, days_back=40, seed=5)
    return cast


def test_figures_equal_a_direct_aggregate_before_and_after_the_roll_up(history):
    admin = history.admin
    assert _shown(admin, 30) == _direct(admin, 30) and _direct(admin, 30)
    assert _rollup_all() >= 40
    assert DecisionDay.objects.exists()
    for days in (1, 7, 30, 60):
        assert _shown(admin, days) == _direct(admin, days), days


def test_new_decisions_count_at_once_and_a_second_roll_up_adds_nothing_twice(history):
    admin = history.admin
    _rollup_all()
    rows = DecisionDay.objects.count()
    _decisions(history.team, history.member, 50, days_back=0.01, seed=3)  # the last quarter hour
    assert _shown(admin, 30) == _direct(admin, 30)
    assert daily_stats.rollup() == 0 and DecisionDay.objects.count() == rows  # today is not a past day yet
    assert _shown(admin, 30) == _direct(admin, 30)


def test_days_roll_up_only_once_they_are_settled(history):
    """A decision stamped just before midnight may commit just after it: a day is rolled up only
    once it ended SETTLE ago; until then it is read live."""
    today = timezone.localdate()
    midnight = timezone.make_aware(datetime.combine(today, time.min))
    _rollup_all(now=midnight + daily_stats.SETTLE - timedelta(minutes=1))
    assert daily_stats.rolled_up_through() == today - timedelta(days=2)
    assert _shown(history.admin, 30) == _direct(history.admin, 30)
    assert daily_stats.rollup(now=midnight + daily_stats.SETTLE + timedelta(minutes=1)) == 1
    assert daily_stats.rolled_up_through() == today - timedelta(days=1)
    assert _shown(history.admin, 30) == _direct(history.admin, 30)


def test_a_long_backlog_rolls_up_a_bounded_number_of_days_per_call(history):
    first = daily_stats.rollup(max_days=10)
    assert first > 0
    through = daily_stats.rolled_up_through()
    assert through is not None and through < timezone.localdate() - timedelta(days=20)
    assert _shown(history.admin, 60) == _direct(history.admin, 60)
    while daily_stats.rollup(max_days=10):
        pass
    assert daily_stats.rolled_up_through() == timezone.localdate() - timedelta(days=1)
    assert _shown(history.admin, 60) == _direct(history.admin, 60)


def test_the_page_reads_summaries_and_only_todays_decisions(history, django_assert_max_num_queries):
    _rollup_all()
    client = client_for(history.admin)
    with CaptureQueriesContext(connection) as few:
        assert client.get("/validator/stats/").status_code == 200
    _decisions(history.team, history.member, 2000, days_back=25, seed=1)
    DecisionDay.objects.all().delete()
    DecisionRollup.objects.all().delete()
    _rollup_all()
    with django_assert_max_num_queries(len(few)), CaptureQueriesContext(connection) as lots:
        response = client.get("/validator/stats/")
    assert response.status_code == 200 and b'data-tool="pay_invoice"' in response.content
    live = [q["sql"] for q in lots.captured_queries if "FROM \"validator_decision\"" in q["sql"] and "GROUP BY" in q["sql"]]
    assert len(live) == 1, live
    today = timezone.localdate().isoformat()
    assert f"'{today}" in live[0] or today in live[0], live[0]  # bounded below by today's start


def test_the_roll_up_is_on_beats_schedule():
    entry = next(e for e in schedules.registered() if e.task == "validator.tasks.stats_rollup")
    assert entry.every_seconds <= 3600


def test_the_first_roll_up_starts_no_further_back_than_the_page_can_show(history):
    Decision.objects.create(team=history.team, user=history.member, tool="send_email", effect="third_party",
                            status="blocked", created_at=timezone.now() - timedelta(days=500))
    assert daily_stats.rollup(max_days=1) == 1
    oldest_shown = timezone.localdate() - timedelta(days=daily_stats.MAX_PERIOD_DAYS + 2)
    assert daily_stats.rolled_up_through() >= oldest_shown
    assert not DecisionDay.objects.filter(day__lt=oldest_shown).exists()
