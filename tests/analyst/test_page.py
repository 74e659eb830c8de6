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
    _scored(cast.team, cast.member)
    page = client_for(cast.admin).get("/analyst/")
    assert page.status_code == 200
    assert b"data-offline" in page.content and b"data-scores" in page.content
    assert b"Task 0" in page.content and b"1 scored run" in page.content


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
