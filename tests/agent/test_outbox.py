"""The outbox: every action the assistant executed for the user, visible to that user alone, and
honest that email and calendar actions are recorded, not sent (there is no live integration)."""

import pytest

from agent import tools
from agent.models import OutboxEntry
from tests.conftest import client_for
from tests.fakes.slack_chat import FakeSlack
from tests.validator.helpers import task_with
from tests.validator.test_views import blocked_payment
from validator import services

pytestmark = pytest.mark.django_db


def _executed(cast, owner, tool, arguments):
    task = task_with(owner, cast.team if owner != cast.other_admin else cast.other_team, [("user", "do it")])
    ctx = tools.ExecutionContext(user=owner, team=task.team, task=task)
    return tools.execute(ctx, tool, arguments), task


def test_email_and_calendar_are_recorded_only_and_slack_is_live_where_installed(cast):
    teams = [cast.team.pk]
    assert tools.recorded_only("send_email", teams) and tools.recorded_only("create_calendar_event", teams)
    assert tools.recorded_only("post_slack_message", teams) and not tools.recorded_only("reply_to_user", teams)
    FakeSlack().install(cast.team)
    assert not tools.recorded_only("post_slack_message", teams)
    assert tools.recorded_only("post_slack_message", [cast.other_team.pk])
    rows = {row["label"]: row["live"] for row in tools.integrations(teams)}
    assert rows["Email (Gmail)"] is False and rows["Calendar"] is False and rows["Slack posts"] is True


def test_the_user_sees_their_own_outbox_with_recorded_entries_marked(cast, django_assert_max_num_queries):
    result, task = _executed(cast, cast.member, "send_email",
                             {"to": ["jane@initech.test"], "subject": "Contract", "body": "Signed <b>today</b>."})
    assert result.ok and "nothing left the system" in result.content
    for _ in range(3):
        _executed(cast, cast.member, "archive_email", {"message_id": "m-1"})
    _executed(cast, cast.admin, "send_email", {"to": ["boss@acme.test"], "subject": "Admin only", "body": "x"})
    _executed(cast, cast.other_admin, "send_email", {"to": ["x@globex.test"], "subject": "Globex only", "body": "x"})

    client = client_for(cast.member)
    with django_assert_max_num_queries(12):
        response = client.get("/validator/outbox/")
    html = response.content.decode()
    assert response.status_code == 200 and html.count("data-outbox=") == 4
    assert 'data-status="recorded"' in html and "Recorded, not sent" in html
    assert 'data-integration="Email (Gmail)" data-live="no"' in html and "not sent" in html
    assert "Send an email to jane@initech.test" in html and "Signed &lt;b&gt;today&lt;/b&gt;." in html
    assert f'href="/tasks/{task.pk}/"' in html
    assert "Admin only" not in html and "Globex only" not in html
    # The admin sees only their own entry, not their member's.
    admin_html = client_for(cast.admin).get("/validator/outbox/").content.decode()
    assert admin_html.count("data-outbox=") == 1 and "Admin only" in admin_html and "jane@initech.test" not in admin_html


def test_filters_pagination_htmx_and_bad_input(cast):
    for _ in range(25):
        _executed(cast, cast.member, "archive_email", {"message_id": "m-1"})
    OutboxEntry.objects.create(team=cast.team, user=cast.member, tool="reply_to_user", arguments={"body": "hi"},
                               adapter="user_channel", status="failed", error="provider down")
    client = client_for(cast.member)
    failed = client.get("/validator/outbox/?show=failed").content.decode()
    assert failed.count("data-outbox=") == 1 and "provider down" in failed
    assert client.get("/validator/outbox/?show=bogus&page=zzz").status_code == 200
    second = client.get("/validator/outbox/?page=2", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="outbox-rows"' in second and "<html" not in second and second.count("data-outbox=") == 6


def test_support_has_no_outbox(cast):
    assert client_for(cast.support).get("/validator/outbox/").status_code == 404
    assert client_for(cast.member).get("/validator/").content.count(b'href="/validator/outbox/"') == 1


def test_a_blocked_email_says_before_and_after_authorizing_that_it_is_only_recorded(cast):
    task = task_with(cast.member, cast.team, [("external", "Can you send me the report?", "jane@initech.test")])
    decision = services.check(user=cast.member, team=cast.team, task=task, tool="send_email",
                              arguments={"to": ["jane@initech.test"], "subject": "Report", "body": "Here."},
                              justification='"Can you send me the report?"')
    client = client_for(cast.member)
    before = client.get(f"/validator/decisions/{decision.pk}/").content.decode()
    assert "data-recorded-only" in before and "nothing is sent" in before
    after = client.post(f"/validator/decisions/{decision.pk}/authorize/", {"confirm": "yes"}, follow=True).content.decode()
    assert "Recorded, not sent" in after and "recorded in the outbox as entry" in after
    entry = OutboxEntry.objects.get(decision=decision)
    assert entry.status == "recorded"
    assert f'data-outbox="{entry.pk}"' in client.get("/validator/outbox/").content.decode()


def test_a_live_slack_decision_does_not_claim_to_be_recorded_only(cast):
    FakeSlack().install(cast.team)
    decision = blocked_payment(cast)  # pay_invoice: never live
    html = client_for(cast.member).get(f"/validator/decisions/{decision.pk}/").content.decode()
    assert "data-recorded-only" in html
    task = task_with(cast.member, cast.team, [("external", "post it", "x@y.test")])
    slack = services.check(user=cast.member, team=cast.team, task=task, tool="post_slack_message",
                           arguments={"channel": "#general", "text": "hi"}, justification='"post it"')
    html = client_for(cast.member).get(f"/validator/decisions/{slack.pk}/").content.decode()
    assert "data-recorded-only" not in html


def test_outbox_api_lists_only_the_users_entries(cast, api_for):
    _executed(cast, cast.member, "send_email", {"to": ["jane@initech.test"], "subject": "S", "body": "B"})
    _executed(cast, cast.admin, "send_email", {"to": ["boss@acme.test"], "subject": "S", "body": "B"})
    body = api_for(cast.member).get("/api/validator/outbox").json()
    assert body["count"] == 1
    item = body["items"][0]
    assert (item["tool"], item["status"], item["sent"], item["adapter"]) == ("send_email", "recorded", False, "outbox")
    assert item["description"].startswith("Send an email to jane@initech.test")
    assert api_for(cast.member).get("/api/validator/outbox", status="sent").json()["count"] == 0
    assert api_for(cast.member).get("/api/validator/outbox", status="bogus").status_code == 422
    assert api_for(cast.support).get("/api/validator/outbox").json()["count"] == 0
