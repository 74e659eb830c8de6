"""The core JSON API: /api/me, tasks, events, meetings, and bad input."""

import json

import pytest
from django.test import Client

from lindy.models import AgentTask, Meeting, TaskEvent
from tests.factories import AgentTaskFactory, MeetingFactory

pytestmark = pytest.mark.django_db


def test_me_answers_the_signed_in_user(cast, api_for):
    response = api_for(cast.admin).get("/api/me")
    assert response.status_code == 200
    body = response.json()
    assert body["email"] == "admin@acme.example"
    assert body["teams"] == [{"id": cast.team.pk, "name": "Acme", "role": "admin"}]


def test_me_with_the_browser_session(cast):
    client = Client()
    client.force_login(cast.member)
    body = client.get("/api/me").json()
    assert body["internal"] is True and body["teams"][0]["role"] == "member"


def test_anonymous_and_bad_token_get_401_in_the_error_shape(db):
    assert Client().get("/api/me").status_code == 401
    response = Client(HTTP_AUTHORIZATION="Bearer lindy_nope").get("/api/me")
    assert response.status_code == 401
    assert response.json()["error"]["status"] == 401


def test_session_writes_need_csrf(cast):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.member)
    response = client.post("/api/tasks", json.dumps({"title": "x"}), content_type="application/json")
    assert response.status_code == 403
    assert not AgentTask.objects.exists()


def test_task_create_add_events_and_read_back(cast, api_for):
    api = api_for(cast.member)
    created = api.post("/api/tasks", {"title": "Reply to Jane", "visibility": "public"})
    assert created.status_code == 201, created.content
    task_id = created.json()["id"]
    assert created.json()["owner_email"] == "member@acme.example"
    first = api.post(f"/api/tasks/{task_id}/events", {"actor": "external", "name": "jane@initech.test", "content": "Send me the report?"})
    second = api.post(f"/api/tasks/{task_id}/events", {"actor": "assistant", "content": "Drafting.", "tool_name": "send_email", "tool_arguments": {"to": ["jane@initech.test"]}})
    assert (first.status_code, second.status_code) == (201, 201)
    detail = api.get(f"/api/tasks/{task_id}").json()
    assert [(e["seq"], e["actor"]) for e in detail["events"]] == [(1, "external"), (2, "assistant")]
    assert detail["events"][1]["tool_arguments"] == {"to": ["jane@initech.test"]}
    listing = api.get("/api/tasks").json()
    assert listing["count"] == 1 and listing["items"][0]["title"] == "Reply to Jane"


def test_public_tasks_are_readable_by_teammates_but_only_the_owner_adds_events(cast, api_for):
    task = AgentTaskFactory(team=cast.team, owner=cast.member, visibility="public")
    private = AgentTaskFactory(team=cast.team, owner=cast.member, visibility="private")
    admin_api = api_for(cast.admin)
    assert admin_api.get(f"/api/tasks/{task.pk}").status_code == 200
    assert admin_api.get(f"/api/tasks/{private.pk}").status_code == 404
    response = admin_api.post(f"/api/tasks/{task.pk}/events", {"actor": "user", "content": "hi"})
    assert response.status_code == 403
    assert not TaskEvent.objects.exists()


def test_another_teams_objects_answer_404_and_change_nothing(cast, api_for):
    task = AgentTaskFactory(team=cast.team, owner=cast.member, visibility="public")
    meeting = MeetingFactory(team=cast.team, owner=cast.member, public=True)
    outsider = api_for(cast.other_admin)
    assert outsider.get(f"/api/tasks/{task.pk}").status_code == 404
    assert outsider.post(f"/api/tasks/{task.pk}/events", {"actor": "user", "content": "x"}).status_code == 404
    assert outsider.get(f"/api/meetings/{meeting.pk}").status_code == 404
    assert outsider.post("/api/tasks", {"title": "x", "team_id": cast.team.pk}).status_code == 404
    assert outsider.get("/api/tasks").json()["count"] == 0
    assert not TaskEvent.objects.exists()
    assert AgentTask.objects.count() == 1


@pytest.mark.parametrize(
    "raw, status",
    [
        ("{not json", 400),
        ('{"title": 12, "visibility": "secret"}', 422),
        ('{"title": ""}', 422),
        ('["a list"]', 422),
        ('{"title": "ok", "team_id": "abc"}', 422),
    ],
)
def test_bad_task_bodies_get_a_clear_4xx(cast, api_for, raw, status):
    response = api_for(cast.member).post("/api/tasks", raw=raw)
    assert response.status_code == status
    assert response.json()["error"]["message"]
    assert not AgentTask.objects.exists()


def test_bad_event_bodies(cast, api_for):
    task = AgentTaskFactory(team=cast.team, owner=cast.member)
    api = api_for(cast.member)
    assert api.post(f"/api/tasks/{task.pk}/events", {"actor": "ceo", "content": "x"}).status_code == 422
    assert api.post(f"/api/tasks/{task.pk}/events", {"actor": "user", "tool_arguments": {"a": 1}}).status_code == 422
    assert api.post(f"/api/tasks/{task.pk}/events", {"actor": "user", "tool_arguments": "nope", "tool_name": "x"}).status_code == 422
    assert api.post("/api/tasks/999999/events", {"actor": "user"}).status_code == 404
    assert api.get("/api/tasks/not-a-number").status_code == 422
    assert not TaskEvent.objects.exists()


def test_oversized_body_is_refused(cast, api_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_for(cast.member).post("/api/tasks", {"title": "x" * 200, "pad": "y" * 5000})
    assert response.status_code == 413
    assert not AgentTask.objects.exists()


def test_meetings_create_share_and_read(cast, api_for):
    api = api_for(cast.member)
    response = api.post("/api/meetings", {
        "title": "Renewal call", "notes": "Jane wants 2 years.", "occurred_at": "2026-11-20T15:00:00Z",
        "shared_with": ["admin@acme.example"], "public": False,
    })
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["shared_with"] == ["admin@acme.example"] and body["public"] is False
    assert api_for(cast.admin).get(f"/api/meetings/{body['id']}").status_code == 200
    assert api_for(cast.other_admin).get(f"/api/meetings/{body['id']}").status_code == 404
    assert api_for(cast.admin).get("/api/meetings").json()["count"] == 1


def test_meetings_shared_with_outsiders_or_bad_dates_are_refused(cast, api_for):
    api = api_for(cast.member)
    outsider = api.post("/api/meetings", {"title": "x", "occurred_at": "2026-11-20T15:00:00Z", "shared_with": ["admin@globex.example"]})
    assert outsider.status_code == 422
    bad_date = api.post("/api/meetings", {"title": "x", "occurred_at": "yesterday-ish"})
    assert bad_date.status_code == 422
    assert not Meeting.objects.exists()


def test_meeting_list_queries_do_not_grow_with_rows(cast, api_for, django_assert_max_num_queries):
    api = api_for(cast.member)
    for _ in range(30):
        meeting = MeetingFactory(team=cast.team, owner=cast.member)
        meeting.shared_with.add(cast.admin)
    with django_assert_max_num_queries(8):
        assert api.get("/api/meetings", limit=30).json()["count"] == 30


def test_openapi_and_docs(db):
    schema = Client().get("/api/openapi.json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for path in ("/api/me", "/api/tasks", "/api/tasks/{task_id}/events", "/api/meetings"):
        assert path in paths
    assert Client().get("/api/docs").status_code == 200


def test_create_api_token_command_prints_a_working_token(cast):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", "member@acme.example", stdout=out)
    token = out.getvalue().strip()
    assert token.startswith("lindy_")
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/me").json()["email"] == "member@acme.example"
