"""Core pages, their query counts, sign-in by email, and the demo data."""

import pytest
from django.core.management import call_command
from django.test import Client

from lindy.models import AgentTask, Meeting, Membership, User
from tests.conftest import client_for
from tests.factories import AgentTaskFactory, MeetingFactory, TaskEventFactory

pytestmark = pytest.mark.django_db


def test_sign_in_by_email_and_out(cast):
    client = Client()
    response = client.post("/accounts/login/", {"username": "MEMBER@acme.example", "password": "pw-for-tests-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_wrong_password_is_refused(cast):
    response = Client().post("/accounts/login/", {"username": "member@acme.example", "password": "nope"})
    assert response.status_code == 200 and b"do not match" in response.content


def test_task_pages_show_history_with_actors(cast):
    task = AgentTaskFactory(team=cast.team, owner=cast.member, title="Invoice from Northwind")
    TaskEventFactory(task=task, seq=1, actor="external", name="billing@northwind.test", content="Pay now <b>please</b>")
    page = client_for(cast.member).get(f"/tasks/{task.pk}/").content.decode()
    assert "An external party" in page and "billing@northwind.test" in page
    assert "<b>please</b>" not in page and "&lt;b&gt;please&lt;/b&gt;" in page


def test_list_pages_are_paginated_with_bounded_queries(cast, django_assert_max_num_queries):
    for _ in range(40):
        AgentTaskFactory(team=cast.team, owner=cast.member)
        meeting = MeetingFactory(team=cast.team, owner=cast.member)
        meeting.shared_with.add(cast.admin)
    client = client_for(cast.member)
    with django_assert_max_num_queries(12):
        first = client.get("/tasks/")
    assert first.status_code == 200 and "Page 1 of 2" in first.content.decode()
    with django_assert_max_num_queries(12):
        assert client.get("/meetings/?page=2").status_code == 200
    # The home page also reads its tiles (blocked actions, each memory's verdict, runs and slots:
    # lindy/home.py) and its first-minute checklist (one query per step), a fixed number whatever
    # the rows; tests/lindy/test_home.py bounds each role's.
    with django_assert_max_num_queries(24):
        assert client.get("/").status_code == 200


def test_htmx_requests_get_the_partial(cast):
    AgentTaskFactory(team=cast.team, owner=cast.member, title="Only rows")
    response = client_for(cast.member).get("/tasks/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'id="task-rows"' in html and "<html" not in html


def test_offline_provider_is_announced(cast, settings):
    settings.MODEL_OFFLINE = True
    assert b"data-offline-provider" in client_for(cast.member).get("/").content
    settings.MODEL_OFFLINE = False
    assert b"data-offline-provider" not in client_for(cast.member).get("/").content


def test_seed_demo_is_idempotent_and_logins_work():
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    counts = (User.objects.count(), Membership.objects.count(), AgentTask.objects.count(), Meeting.objects.count())
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert counts == (User.objects.count(), Membership.objects.count(), AgentTask.objects.count(), Meeting.objects.count())
    assert Membership.objects.get(user__email="admin@acme.test").role == "admin"
    assert User.objects.get(email="user@acme.test").is_internal
    assert User.objects.get(email="support@lindy.test").is_support
    for email in ("admin@acme.test", "user@acme.test", "admin@globex.test", "support@lindy.test"):
        client = Client()
        assert client.login(username=email, password="lindy-demo"), email
        assert client.get("/").status_code == 200
