"""The home page answers "what needs me now" for each role, from the product's own records, in a
bounded number of queries; other teams' records never show; the drafting tile waits for its selector."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from channels_app import selectors as channel_selectors
from channels_app.models import NumberDay, RatioAlert
from hydration.models import Run, Schedule
from memory.models import FileSystem
from router.models import ModelCall, Rollout
from tests.channels_app.factories import SendingNumberFactory
from tests.conftest import client_for
from validator.models import Decision

pytestmark = pytest.mark.django_db


def _tiles(html: str) -> list[str]:
    return re.findall(r'data-tile="([^"]+)"', html)


def _home(user, django_assert_max_num_queries, budget: int) -> str:
    client = client_for(user)
    client.get("/")  # the first visit fills the per-revision caches (verifier verdicts)
    with django_assert_max_num_queries(budget):
        response = client.get("/")
    assert response.status_code == 200
    return response.content.decode()


def test_each_demo_login_sees_what_needs_them(django_assert_max_num_queries, seeded_demo):
    ctx = seeded_demo
    member, admin, globex = (ctx.users[e] for e in ("user@acme.test", "admin@acme.test", "admin@globex.test"))
    support, ops = ctx.users["support@lindy.test"], ctx.users["ops@lindy.test"]

    # A team member: their blocked actions (the count is theirs), both memories with the verifier's
    # verdict, the last run and the next slot of each.
    # (22: the tiles, plus the first-minute checklist's one query per step and the Gmail link's.)
    html = _home(member, django_assert_max_num_queries, 15)
    assert _tiles(html) == ["blocked-actions", "memory", "heavy-edits"]  # the demo's email (drafting/demo.py)
    waiting = Decision.objects.filter(user=member, status=Decision.Status.BLOCKED).count()
    assert waiting > 0 and f"<strong data-blocked-count>{waiting}</strong>" in html
    newest = Decision.objects.filter(user=member, status=Decision.Status.BLOCKED).latest("created_at")
    assert f'href="/validator/decisions/{newest.pk}/"' in html
    for fs in (member.memory_filesystem, ctx.teams["Acme"].memory_filesystem):
        row = re.search(rf'<li data-fs="{fs.pk}">(.*?)</li>', html, re.S).group(1)
        last = Run.objects.filter(filesystem=fs).latest("created_at")
        assert f'href="/hydration/runs/{last.pk}/" data-last-run="{last.status}"' in row
        assert 'data-verifier="passes"' in row
        assert Schedule.objects.filter(filesystem=fs).exists() and "data-next-run" in row
    assert "(read only)" in html  # the team's memory: a member reads it, its admins edit it
    assert "Hello," not in html and "member of Acme" in html

    # A team admin: the same questions, about themself (not their members' blocked actions).
    html = _home(admin, django_assert_max_num_queries, 15)
    assert _tiles(html) == ["blocked-actions", "memory", "heavy-edits"]
    mine = Decision.objects.filter(user=admin, status=Decision.Status.BLOCKED).count()
    expected = f"<strong data-blocked-count>{mine}</strong>" if mine else 'data-blocked-count="0"'
    assert expected in html
    assert "(read only)" not in html and "admin of Acme" in html

    # Another team's admin: nothing of Acme's.
    html = _home(globex, django_assert_max_num_queries, 15)
    acme_fs = FileSystem.objects.filter(team=ctx.teams["Acme"]).values_list("pk", flat=True)
    assert all(f'data-fs="{pk}"' not in html for pk in acme_fs)
    assert all(f"/validator/decisions/{pk}/" not in html
               for pk in Decision.objects.exclude(user=globex).values_list("pk", flat=True))

    # Support: open alerts and the lines over the threshold, nothing about memory or actions.
    html = _home(support, django_assert_max_num_queries, 7)
    assert _tiles(html) == ["channel-health"]
    open_alerts = RatioAlert.objects.filter(acknowledged_at__isnull=True).count()
    assert f"<strong data-open-alerts>{open_alerts}</strong>" in html
    over = channel_selectors.numbers_over_threshold(days=7)
    assert over and f"<strong data-over-threshold>{len(over)}</strong>" in html
    assert all(f'data-line="{row["number"].phone}"' in html for row in over[:5])
    assert "support staff" in html

    # The superuser: live rollouts with their evidence, the cost trend, channel health.
    html = _home(ops, django_assert_max_num_queries, 10)
    assert _tiles(html) == ["channel-health", "rollouts", "cost-trend"]
    live = list(Rollout.objects.filter(status__in=Rollout.ACTIVE))
    assert live and all(f'data-rollout="{r.pk}"' in html for r in live)
    for rollout in live:
        if rollout.offline_evidence.get("candidate_run"):
            assert f'/router/evals/{rollout.offline_evidence["candidate_run"]["id"]}/' in html
    since = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=13)
    calls = ModelCall.objects.filter(created_at__gte=since).count()
    assert f"{calls:,} call{'s' if calls != 1 else ''}." in html  # grouped: the demo's email makes thousands
    offline = ModelCall.objects.filter(created_at__gte=since, provider="offline").count()
    assert (f"{offline:,} of them answered by the offline provider" in html) == bool(offline)


def test_blocked_tile_is_capped_and_its_queries_do_not_grow(cast, django_assert_max_num_queries):
    def block(n):
        Decision.objects.bulk_create([
            Decision(team=cast.team, user=cast.member, tool="send_email", effect="third_party",
                     arguments={"to": f"x{i}@example.test"}, status="blocked") for i in range(n)])

    block(2)
    client = client_for(cast.member)
    client.get("/")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        html = client.get("/").content.decode()
    assert "<strong data-blocked-count>2</strong>" in html and html.count('href="/validator/decisions/') == 2
    block(300)
    with django_assert_max_num_queries(len(few)):
        html = client.get("/").content.decode()
    assert "<strong data-blocked-count>99+</strong>" in html
    assert html.count('href="/validator/decisions/') == 3  # the newest three, then a link to all


def test_other_teams_records_never_show(cast):
    theirs = Decision.objects.create(team=cast.other_team, user=cast.other_admin, tool="send_email",
                                     effect="third_party", status="blocked")
    html = client_for(cast.member).get("/").content.decode()
    assert f"/validator/decisions/{theirs.pk}/" not in html
    assert 'data-blocked-count="0"' in html
    other_fs = FileSystem.objects.filter(team=cast.other_team).values_list("pk", flat=True)
    assert all(f'data-fs="{pk}"' not in html for pk in other_fs)
    # Support staff in a team still see no memory and no actions (can_use_workspace).
    assert _tiles(client_for(cast.support).get("/").content.decode()) == ["channel-health"]


def test_support_sees_open_alerts_not_acknowledged_ones(cast):
    line = SendingNumberFactory(phone="+13125550199", label="Hot line")
    today = timezone.localdate()
    NumberDay.objects.create(number=line, day=today, sent=90, received=5)
    RatioAlert.objects.create(number=line, day=today, level="critical", ratio=18.0, sent=90, received=5,
                              threshold=5.0)
    RatioAlert.objects.create(number=line, day=today - timedelta(days=1), level="warn", ratio=3.0, sent=3,
                              received=1, threshold=2.0, acknowledged_at=timezone.now(), acknowledged_by=cast.support)
    html = client_for(cast.support).get("/").content.decode()
    assert "<strong data-open-alerts>1</strong>" in html and html.count("data-alert=") == 1
    assert "<strong data-over-threshold>1</strong>" in html and 'data-line="+13125550199"' in html


def test_superuser_without_rollouts_is_told_so(cast):
    html = client_for(cast.superuser).get("/").content.decode()
    assert "No rollout is live" in html and 'data-bars="calls"' in html


def test_heavy_edit_tile_shows_the_users_own_draft_sent_pairs(cast):
    from tests.drafting.factories import pair

    assert "heavy-edits" not in _tiles(client_for(cast.member).get("/").content.decode())  # nothing drafted yet
    pair(cast.member, cast.team, sent="Jane - Friday is out, legal still has the redlines. Next week instead?")
    pair(cast.member, cast.team, sent="Hi Jane,\n\nFriday works for me.\n\nThanks")
    pair(cast.member, cast.team, sent="On Mon, Jane wrote:\n> Can you confirm Friday?")  # unscorable
    pair(cast.admin, cast.team, sent="Someone else's rewrite entirely, not the member's.")
    html = client_for(cast.member).get("/").content.decode()
    assert "heavy-edits" in _tiles(html)
    assert "<strong data-heavy-edit-rate>50%</strong>" in html and "(1 of 2 scored; 1 could not be scored)" in html
    # Not for support staff, who never see a user's mail.
    assert "heavy-edits" not in _tiles(client_for(cast.support).get("/").content.decode())
