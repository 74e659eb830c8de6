"""The analyst's page: scores, trends per route and target, the candidate queue; who sees what."""

import pytest

from analyst import services
from analyst.models import TaskScore
from lindy import services as lindy_services
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def _scored(team, owner, n=1):
    out = []
    for i in range(n):
        task = lindy_services.task_create(team=team, owner=owner, title=f"Task {i}")
        lindy_services.task_event_add(task=task, actor="user", content="Hello")
        lindy_services.task_event_add(task=task, actor="assistant", content="Hi.")
        out.append(services.task_score(task_id=task.pk))
    return out


def test_the_page_lists_scores_and_says_the_offline_rules_scored_them(cast):
    _scored(cast.team, cast.admin)
    page = client_for(cast.admin).get("/analyst/")
    assert page.status_code == 200
    assert b"data-offline" in page.content and b"data-scores" in page.content
    assert b"Task 0" in page.content and b"1 scored run" in page.content


def test_a_team_admin_reads_the_numbers_of_a_members_private_task_but_not_its_title_or_why(cast):
    [private] = _scored(cast.team, cast.member)
    TaskScore.objects.filter(pk=private.pk).update(summary="It tried to send the payroll file to eve@evil.example.")
    private.task.title = "Private: pay Bob's invoice"
    private.task.save()
    public = lindy_services.task_create(team=cast.team, owner=cast.member, title="Team launch plan", visibility="public")
    lindy_services.task_event_add(task=public, actor="user", content="Hello")
    services.task_score(task_id=public.pk)
    TaskScore.objects.filter(task=public).update(summary="Answered the launch question.")

    page = client_for(cast.admin).get("/analyst/").content.decode()
    assert "2 scored runs" in page and f'data-score="{private.pk}"' in page
    assert "Private: pay Bob" not in page and "eve@evil.example" not in page and "data-private-task" in page
    assert "Team launch plan" in page and "Answered the launch question." in page
    staff = client_for(cast.superuser).get("/analyst/").content.decode()
    assert "Private: pay Bob" in staff and "eve@evil.example" in staff


def test_tenancy_other_teams_scores_are_not_shown_and_members_get_404(cast):
    _scored(cast.team, cast.member)
    other = client_for(cast.other_admin).get("/analyst/")
    assert other.status_code == 200 and b"Task 0" not in other.content and b"0 scored runs" in other.content
    assert client_for(cast.member).get("/analyst/").status_code == 404
    assert client_for(cast.support).get("/analyst/").status_code == 404
    assert client_for(cast.superuser).get("/analyst/").status_code == 200


def test_the_page_paginates_and_its_queries_do_not_grow_with_rows(cast, django_assert_max_num_queries):
    [score] = _scored(cast.team, cast.member)
    task = score.task
    TaskScore.objects.bulk_create([  # more runs of the same task, as a conversation task has
        TaskScore(team=cast.team, task=task, from_seq=i, through_seq=i + 100, score=0.5, did_what_asked=0.5)
        for i in range(29)])
    client = client_for(cast.superuser)
    with django_assert_max_num_queries(14):
        first = client.get("/analyst/")
    assert first.content.count(b"data-score=") == 25 and b"Page 1 of 2" in first.content
    second = client.get("/analyst/?page=2", HTTP_HX_REQUEST="true")
    assert second.content.count(b"data-score=") == 5 and b"<html" not in second.content
    assert client.get("/analyst/?page=abc").status_code == 200
    assert TaskScore.objects.count() == 30


def test_trends_per_route_and_target(cast):
    from agent import services as agent_services

    agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="c1", messages=[
        {"text": "Send an email to jane@initech.test saying the contract is signed."}])
    services.task_score(task_id=TaskScoreTask.last(cast))
    page = client_for(cast.superuser).get("/analyst/")
    assert b'data-route="validator"' in page.content


class TaskScoreTask:
    @staticmethod
    def last(cast):
        from lindy.models import AgentTask

        return AgentTask.objects.filter(owner=cast.member).order_by("-pk").values_list("pk", flat=True).first()


# The score on the task: its page and /api/tasks/{id} show the latest run's score and why, by the
# analyst page's rule (content staff, or the team's workspace admin; never support, never a member).


def _public_scored_task(cast, runs=1):
    from lindy.models import AgentTask

    task = lindy_services.task_create(team=cast.team, owner=cast.member, title="Quarterly numbers",
                                      visibility=AgentTask.Visibility.PUBLIC)
    scores = []
    for i in range(runs):
        lindy_services.task_event_add(task=task, actor="user", content=f"Hello {i}")
        lindy_services.task_event_add(task=task, actor="assistant", content="Hi.")
        scores.append(services.task_score(task_id=task.pk))
    return task, scores


def test_the_task_page_and_api_show_the_latest_score_and_why_to_the_teams_admin(cast, django_assert_max_num_queries):
    from tests.conftest import ApiClient

    task, scores = _public_scored_task(cast, runs=3)
    latest = scores[-1]
    TaskScore.objects.filter(pk=latest.pk).update(score=0.42, summary="It answered the user; no action ran.")
    client = client_for(cast.admin)
    with django_assert_max_num_queries(7):  # the task page's 6, and one for the score
        page = client.get(f"/tasks/{task.pk}/")
    html = page.content.decode()
    assert page.status_code == 200 and f'data-analyst-score="{latest.pk}"' in html
    assert "<strong data-score-value>0.42</strong>" in html and "It answered the user; no action ran." in html
    assert f'data-analyst-score="{scores[0].pk}"' not in html
    body = ApiClient(cast.admin).get(f"/api/tasks/{task.pk}").json()
    shown = body["annotations"]["analyst_score"]
    assert (shown["id"], shown["score"], shown["summary"]) == (latest.pk, 0.42, "It answered the user; no action ran.")
    assert shown["through_seq"] == latest.through_seq and not shown["rogue"] and not shown["validator_miss"]
    # Content staff in the team see it too.
    lindy_services.membership_set(team=cast.team, user=cast.superuser, role="member")
    assert f'data-analyst-score="{latest.pk}"'.encode() in client_for(cast.superuser).get(f"/tasks/{task.pk}/").content
    assert ApiClient(cast.superuser).get(f"/api/tasks/{task.pk}").json()["annotations"]["analyst_score"]["id"] == latest.pk


def test_the_task_page_queries_do_not_grow_with_scores(cast, django_assert_max_num_queries):
    task, [score] = _public_scored_task(cast)
    TaskScore.objects.bulk_create([
        TaskScore(team=cast.team, task=task, from_seq=i, through_seq=i + 100, score=0.5, did_what_asked=0.5)
        for i in range(40)])
    client = client_for(cast.admin)
    client.get(f"/tasks/{task.pk}/")
    with django_assert_max_num_queries(7):
        page = client.get(f"/tasks/{task.pk}/")
    assert page.content.count(b"data-analyst-score=") == 1


def test_members_support_and_other_teams_get_no_score_on_the_task(cast):
    from lindy import task_annotations
    from tests.conftest import ApiClient

    task, [score] = _public_scored_task(cast)
    # The task's own member reads the task but not the analyst's score (the analyst page is 404 for them).
    page = client_for(cast.member).get(f"/tasks/{task.pk}/")
    assert page.status_code == 200 and b"data-analyst-score" not in page.content
    assert ApiClient(cast.member).get(f"/api/tasks/{task.pk}").json()["annotations"] == {}
    assert task_annotations.for_task(cast.member, task) == []
    # Another team's admin: no task, and no score even asked directly.
    assert client_for(cast.other_admin).get(f"/tasks/{task.pk}/").status_code == 404
    assert ApiClient(cast.other_admin).get(f"/api/tasks/{task.pk}").status_code == 404
    assert task_annotations.for_task(cast.other_admin, task) == []
    # Support staff made an admin of the team read no bodies: no task, no score.
    lindy_services.membership_set(team=cast.team, user=cast.support, role="admin")
    assert client_for(cast.support).get(f"/tasks/{task.pk}/").status_code == 404
    assert task_annotations.for_task(cast.support, task) == []
    # The team's admin does get it (the same reader).
    [shown] = task_annotations.for_task(cast.admin, task)
    assert shown["key"] == "analyst_score" and shown["data"]["id"] == score.pk


def test_trends_show_this_weeks_and_last_weeks_means_and_the_change(cast):
    from datetime import timedelta

    from django.utils import timezone

    from analyst.models import ScoredCall
    from router.models import ModelCall

    now = timezone.now()
    task = lindy_services.task_create(team=cast.team, owner=cast.member, title="Trend")

    def scored_call(route, seq, days, value):
        score = TaskScore.objects.create(team=cast.team, task=task, from_seq=seq, through_seq=seq, score=value,
                                         did_what_asked=value)
        call = ModelCall.objects.create(route=route, provider="offline", model="lindy-offline-rules-1")
        scored = ScoredCall.objects.create(task_score=score, call=call, route=route, target="offline-rules")
        ScoredCall.objects.filter(pk=scored.pk).update(created_at=now - timedelta(days=days))

    for seq, (days, value) in enumerate([(3, 0.8), (3, 1.0), (10, 0.4), (10, 0.6), (20, 0.0)], start=1):
        scored_call("validator", seq, days, value)
    html = client_for(cast.admin).get("/analyst/").content.decode()
    start = html.index('<tr data-route="validator" data-target="offline-rules">')
    row = html[start:html.index("</tr>", start)]
    # Runs in the two weeks (the 20-day-old one is out), this week's mean (runs), last week's, the change.
    assert row.endswith("<td>4</td><td>0.90 (2)</td><td>0.50</td><td>+0.40</td>"), row
    assert html.count("<tr data-route=") == 1
    # A falling mean reads as a fall.
    for seq, (days, value) in enumerate([(3, 0.2), (10, 0.6)], start=10):
        scored_call("agent", seq, days, value)
    html = client_for(cast.admin).get("/analyst/").content.decode()
    start = html.index('<tr data-route="agent" data-target="offline-rules">')
    assert html[start:html.index("</tr>", start)].endswith("<td>2</td><td>0.20 (1)</td><td>0.60</td><td>-0.40</td>")


def test_a_route_scored_only_last_week_shows_no_mean_nor_change_for_this_week(cast):
    from datetime import timedelta

    from django.utils import timezone

    from analyst.models import ScoredCall
    from router.models import ModelCall

    task = lindy_services.task_create(team=cast.team, owner=cast.member, title="Old")
    score = TaskScore.objects.create(team=cast.team, task=task, from_seq=1, through_seq=1, score=0.7, did_what_asked=0.7)
    call = ModelCall.objects.create(route="agent", provider="offline", model="lindy-offline-rules-1")
    scored = ScoredCall.objects.create(task_score=score, call=call, route="agent", target="offline-rules")
    ScoredCall.objects.filter(pk=scored.pk).update(created_at=timezone.now() - timedelta(days=10))
    html = client_for(cast.admin).get("/analyst/").content.decode()
    start = html.index('<tr data-route="agent" data-target="offline-rules">')
    assert html[start:html.index("</tr>", start)].endswith("<td>1</td><td>—</td><td>0.70</td><td>—</td>")
