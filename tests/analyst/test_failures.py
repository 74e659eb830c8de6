"""Failures captured where they happen, grouped like an error tracker, shown with the log beside
the code, triaged, reported and filed; alerts once per episode."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import override_settings

from analyst.failures import triage
from analyst.models import FailureEvent, FailureGroup
from google_workspace.models import GmailAccount
from hydration import services as hydration_services
from hydration.models import Run
from hydration.services import runs as hydration_runs
from lindy import failures
from tests.analyst.failure_helpers import raise_in_gmail_parser
from tests.conftest import client_for
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gmail_api import FakeGmail
from tests.hydration.helpers import user_fs

pytestmark = pytest.mark.django_db


@pytest.fixture
def gmail():
    with FakeGmail(page_size=2) as fake, override_settings(**fake.settings()):
        yield fake


def _connect(user, gmail) -> GmailAccount:
    from datetime import timedelta

    from django.utils import timezone

    return GmailAccount.objects.create(user=user, email=user.email, access_token=gmail.issue_token(),
                                       refresh_token="refresh-1", token_expires_at=timezone.now() + timedelta(hours=1))


def test_a_source_raising_in_three_runs_for_two_users_is_one_group_with_its_log_and_code(cast, gmail):
    # Gmail answers a message whose headers are strings, not {"name", "value"} objects.
    gmail.add_message("m1", internal_ms=1_700_000_000_000, subject="Renewal", body="Jane wants a renewal.")
    gmail.messages["m1"]["payload"]["headers"] = ["From: jane@initech.test", "Subject: Renewal"]
    _connect(cast.member, gmail)
    _connect(cast.admin, gmail)
    runs = [hydration_services.run_now_sync(filesystem=user_fs(user), trigger=Run.Trigger.MANUAL)
            for user in (cast.member, cast.member, cast.admin)]
    assert all(run.sources["gmail"]["status"] == "error" for run in runs)  # the run goes on; the source failed

    group = FailureGroup.objects.get()
    assert (group.count, group.kind, group.exc_type, group.status) == (3, "hydration_source", "AttributeError", "new")
    assert group.culprit == "google_workspace.messages.headers_of"
    events = FailureEvent.objects.filter(group=group)
    assert events.values("user").distinct().count() == 2 and set(events.values_list("team", flat=True)) == {cast.team.pk}
    assert {e.run for e in events} == {f"hydration run {run.pk}" for run in runs}
    assert events.first().route == "hydration.gmail"

    page = client_for(cast.superuser).get(f"/analyst/failures/{group.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<span data-count>3</span>' in html and '<span data-users>2</span>' in html
    # The log (from the run) beside the code (the running file's lines around the frame).
    assert 'data-source="log"' in html and f"hydration run {runs[-1].pk}" in html and "fetch from cursor" in html
    assert 'data-source="code"' in html and "google_workspace/messages.py" in html
    assert "data-raising-line" in html and "h.get(&quot;name&quot;, &quot;&quot;).lower()" in html
    assert "def headers_of(payload: dict)" in html  # a line around it
    assert "jane@initech.test" not in html and "Jane wants a renewal" not in html

    listing = client_for(cast.superuser).get("/analyst/failures/").content.decode()
    assert f'data-group="{group.pk}"' in listing


def test_resolved_then_seen_in_a_new_version_regresses_and_alerts_once(cast, settings):
    settings.LINDY_VERSION = "v1"
    settings.ANALYST_FAILURE_ALERT_USERS = 1
    settings.CHANNELS_ALERT_EMAILS = ["oncall@lindy.test"]
    raise_in_gmail_parser(user=cast.member, team=cast.team)
    group = raise_in_gmail_parser(user=cast.admin, team=cast.team)
    assert group.status == "new" and len(mail.outbox) == 1  # a new group hit 2 users (> 1) in the hour
    assert "New failure" in mail.outbox[0].subject and "AttributeError" in mail.outbox[0].subject
    raise_in_gmail_parser(user=cast.other_admin, team=cast.other_team)
    assert len(mail.outbox) == 1  # once per episode

    client_for(cast.superuser).post(f"/analyst/failures/{group.pk}/status/", {"status": "resolved"})
    group.refresh_from_db()
    assert (group.status, group.resolved_in_version) == ("resolved", "v1")
    raise_in_gmail_parser(user=cast.member, team=cast.team)  # the fix is not deployed yet: same version
    group.refresh_from_db()
    assert group.status == "resolved"

    settings.LINDY_VERSION = "v2"
    raise_in_gmail_parser(user=cast.member, team=cast.team)
    group.refresh_from_db()
    assert group.status == "regressed" and group.regressed_at is not None
    assert len(mail.outbox) == 1  # one user so far in this episode
    raise_in_gmail_parser(user=cast.admin, team=cast.team)
    raise_in_gmail_parser(user=cast.admin, team=cast.team)
    assert len(mail.outbox) == 2 and "Regression" in mail.outbox[1].subject
    html = client_for(cast.superuser).get(f"/analyst/failures/{group.pk}/").content.decode()
    assert 'data-status="regressed"' in html and "<code>v2</code>" in html and "<code>v1</code>" in html
    # The alert holds counts and the code's names, no message or log.
    assert "jane@initech.test" not in mail.outbox[1].body


def test_the_fingerprint_ignores_line_numbers_and_literals_but_not_the_function():
    frame = failures.Frame(module="google_workspace.messages", function="headers_of", file="google_workspace/messages.py", lineno=10,
                           line='x = h.get("name", 1)', product=True)
    moved = failures.Frame(**{**frame.__dict__, "lineno": 99, "line": "x  =  h.get('other', 2)"})
    other = failures.Frame(**{**frame.__dict__, "function": "body_text"})
    assert failures.fingerprint("KeyError", [frame]) == failures.fingerprint("KeyError", [moved])
    assert failures.fingerprint("KeyError", [frame]) != failures.fingerprint("KeyError", [other])
    assert failures.fingerprint("KeyError", [frame]) != failures.fingerprint("ValueError", [frame])


def test_the_triage_reads_the_log_and_the_code_and_the_page_says_where_each_part_came_from(cast):
    group = raise_in_gmail_parser(user=cast.member, team=cast.team)
    result = triage.group_triage(group=group)
    assert result["provider"] == "offline" and "google_workspace/messages.py" in result["suspected_cause"]
    assert "`.get`" in result["smallest_change"] or ".get" in result["smallest_change"]
    html = client_for(cast.superuser).get(f"/analyst/failures/{group.pk}/").content.decode()
    assert 'data-source="log"' in html and 'data-source="code"' in html and 'data-source="model"' in html
    assert "From the log" in html and "From the code" in html and "From the model" in html
    assert result["suspected_cause"].split(":")[0] in html


def test_copy_as_issue_and_file_issue_once_per_group_through_the_github_api(cast):
    group = raise_in_gmail_parser(user=cast.member, team=cast.team,
                                  log=[{"actor": "run", "name": "hydration run 7", "text": "started (Run now)"},
                                       {"actor": "source", "name": "gmail", "text": "fetch from cursor ['after_ms']"}])
    triage.group_triage(group=group)
    staff = client_for(cast.superuser)
    markdown = staff.get(f"/analyst/failures/{group.pk}/issue.md").content.decode()
    assert markdown.startswith("# AttributeError in google_workspace.messages.headers_of")
    for heading in ("## What users saw", "## Steps to reproduce (from the log)", "## Frames", "## Suspected cause",
                    "## A test to write first"):
        assert heading in markdown
    assert "1. run hydration run 7: started (Run now)" in markdown and "google_workspace/messages.py" in markdown

    with FakeGitHub() as github, override_settings(**github.settings()):
        for _ in range(3):
            response = staff.post(f"/analyst/failures/{group.pk}/file/")
            assert response.status_code == 302
        assert len(github.issues) == 1
        body = github.issues[0]["body"]
        assert "google_workspace/messages.py" in body and "headers_of" in body and "return {h.get(" in body
        assert "Steps to reproduce" in body and "hydration run 7: started (Run now)" in body
        assert github.requests[0].headers["authorization"] == "Bearer " + github.settings()["ANALYST_GITHUB_TOKEN"]
        group.refresh_from_db()
        assert group.issue_url == "https://github.com/lindy-team/lindy/issues/1" and group.issue_number == 1
        assert 'data-issue-link' in staff.get(f"/analyst/failures/{group.pk}/").content.decode()
        # Another group gets its own issue.
        other = raise_in_gmail_parser(user=cast.member, team=cast.team, message_extra="another failure")
        staff.post(f"/analyst/failures/{other.pk}/file/")
        assert len(github.issues) == 2


def test_a_refused_filing_links_nothing_and_can_be_pressed_again(cast, settings):
    group = raise_in_gmail_parser(user=cast.member, team=cast.team)
    with FakeGitHub() as github, override_settings(**{**github.settings(), "ANALYST_GITHUB_TOKEN": "wrong-token"}):
        response = client_for(cast.superuser).post(f"/analyst/failures/{group.pk}/file/", follow=True)
        assert "GitHub answered 401" in response.content.decode()
    group.refresh_from_db()
    assert group.issue_url == "" and group.issue_claimed_at is None


def test_roles_see_what_they_may(cast):
    from tests.factories import AgentTaskFactory, TaskEventFactory

    private = AgentTaskFactory(team=cast.team, owner=cast.member, title="Initech invoice reconciliation")  # private
    TaskEventFactory(task=private, actor="user", content="Reconcile the Initech invoices.")
    group = raise_in_gmail_parser(task=private)
    page = f"/analyst/failures/{group.pk}/"
    # Members: nothing.
    assert client_for(cast.member).get("/analyst/failures/").status_code == 403
    assert client_for(cast.member).get(page).status_code == 403
    # Support: counts only.
    support = client_for(cast.support).get("/analyst/failures/").content.decode()
    assert f'data-group="{group.pk}"' in support and "AttributeError" not in support and "headers_of" not in support
    assert client_for(cast.support).get(page).status_code == 403
    # The team's admin: the group, its code, but not the log of a task they may not open.
    html = client_for(cast.admin).get(page).content.decode()
    assert "data-log-hidden" in html and "Reconcile the Initech" not in html and "google_workspace/messages.py" in html
    assert private.title not in html and "data-private-task" in html
    # Another team's admin: absent.
    assert client_for(cast.other_admin).get(page).status_code == 404
    assert f'data-group="{group.pk}"' not in client_for(cast.other_admin).get("/analyst/failures/").content.decode()
    # The task's owner is a member: still nothing. Staff read the log.
    staff_html = client_for(cast.superuser).get(page).content.decode()
    assert "Reconcile the Initech" in staff_html and private.title in staff_html
    # Only staff change, triage and file.
    assert client_for(cast.admin).post(f"{page}status/", {"status": "resolved"}).status_code == 403
    assert client_for(cast.superuser).post(f"{page}status/", {"status": "gone"}).status_code == 400
    group.refresh_from_db()
    assert group.status == "new"  # bad input changes nothing


def test_bad_input_gets_a_clear_4xx(cast):
    staff = client_for(cast.superuser)
    assert staff.get("/analyst/failures/?status=exploded").status_code == 400
    assert staff.get("/analyst/failures/999999/").status_code == 404
    assert staff.post("/analyst/failures/999999/file/").status_code == 404
    assert staff.get("/analyst/failures/?page=not-a-page").status_code == 200  # the first page
    group = raise_in_gmail_parser(user=cast.member, team=cast.team)
    assert staff.get(f"/analyst/failures/{group.pk}/status/").status_code == 405
    response = staff.post(f"/analyst/failures/{group.pk}/file/", follow=True)  # no repository configured
    assert "ANALYST_GITHUB_REPO" in response.content.decode()


def test_no_email_body_token_or_key_reaches_the_page_or_the_report(cast, settings):
    from tests.factories import AgentTaskFactory, TaskEventFactory

    settings.ANTHROPIC_API_KEY = "sk-ant-api03-SECRETSECRETSECRET"
    body = "Dear Umar, the wire code for the Initech payment is 4471-ALPHA. Regards, Jane"
    task = AgentTaskFactory(team=cast.team, owner=cast.admin, visibility="public")
    TaskEventFactory(task=task, actor="user", content="Read my latest email from Jane.")
    TaskEventFactory(task=task, actor="assistant", content="Proposed: read email", tool_name="read_email",
                     tool_arguments={"message_id": "m1"})
    TaskEventFactory(task=task, actor="tool", tool_name="read_email", content=body)
    TaskEventFactory(task=task, actor="external", name="jane@initech.test", content=body)
    message = (f"could not parse {body!r} with key=sk-ant-api03-SECRETSECRETSECRET for jane@initech.test "
               "Authorization: Bearer ya29.a0AfH6SMBx-token-value")
    group = raise_in_gmail_parser(task=task, message_extra=message)
    triage.group_triage(group=group)
    for user in (cast.superuser, cast.admin):
        client = client_for(user)
        for path in (f"/analyst/failures/{group.pk}/", f"/analyst/failures/{group.pk}/issue.md", "/analyst/failures/"):
            text = client.get(path).content.decode()
            for secret in ("4471-ALPHA", "Dear Umar", "SECRETSECRET", "ya29.a0AfH6SMBx", "jane@initech.test"):
                assert secret not in text, (user.email, path, secret)
    html = client_for(cast.superuser).get(f"/analyst/failures/{group.pk}/").content.decode()
    assert "Read my latest email from Jane." in html and "not shown" in html  # the log is there, bodies are not


def test_a_celery_task_that_fails_is_captured_once_by_task_failure(cast):
    from celery import current_app

    # The scoring task handed an id that is no id: it raises in the product's own code.
    current_app.tasks["analyst.tasks.task_score"].apply(args=["not-a-task", 1])
    event = FailureEvent.objects.get(kind="celery_task")
    assert event.exc_type == "ValueError" and event.route == "analyst.tasks.task_score"
    assert event.run.startswith("celery task analyst.tasks.task_score")
    assert any(f["product"] and f["file"] == "analyst/tasks.py" for f in event.frames)


def test_an_exception_is_recorded_once_however_many_capture_points_it_passes(cast):
    with pytest.raises(AttributeError):
        with failures.capturing("celery_task"):
            with failures.capturing("hydration_source", route="hydration.gmail"):
                from google_workspace import messages as gmail
                gmail.headers_of({"headers": ["x"]})
    assert list(FailureEvent.objects.values_list("kind", flat=True)) == ["hydration_source"]


def test_the_agent_run_failure_keeps_the_task_and_its_events(cast, monkeypatch):
    from agent import loop
    from tests.factories import AgentTaskFactory, TaskEventFactory

    task = AgentTaskFactory(team=cast.team, owner=cast.member)
    asked = TaskEventFactory(task=task, actor="user", content="Summarise my week.")

    def broken(*args, **kwargs):  # a unit seam: the loop's body raising as a bug would
        return {}["turns"]

    monkeypatch.setattr(loop, "_run", broken)
    with pytest.raises(KeyError):
        loop.run(task)
    event = FailureEvent.objects.get()
    assert (event.kind, event.route, event.task_id, event.user_id, event.team_id) == (
        "agent_run", "agent", task.pk, cast.member.pk, cast.team.pk)
    assert event.through_seq == asked.seq


def test_the_alert_goes_to_the_alert_slack_channel_too_once_per_episode(cast, settings):
    from tests.fakes.slack_api import BOT_TOKEN, FakeSlack

    settings.ANALYST_FAILURE_ALERT_USERS = 1
    with FakeSlack() as slack, override_settings(SLACK_API_BASE_URL=slack.url + "/api/",
                                                 CHANNELS_ALERT_SLACK_TOKEN=BOT_TOKEN,
                                                 CHANNELS_ALERT_SLACK_CHANNEL="C0LINDYOPS"):
        slack.add_channel("C0LINDYOPS", "lindy-ops", private=True)
        for user in (cast.member, cast.admin, cast.other_admin):
            raise_in_gmail_parser(user=user, team=cast.team)
        assert len(slack.posted) == 1 and slack.posted[0]["channel"] == "C0LINDYOPS"
        assert "New failure" in slack.posted[0]["text"] and "hit 2 users" in slack.posted[0]["text"]


def test_a_hydration_run_that_fails_is_captured_with_its_steps(cast, monkeypatch):
    def broken(run, progress):  # a unit seam: the pipeline raising as a bug would, after one stage
        progress.stage("Fetching slack")
        raise RuntimeError("the pipeline broke")

    monkeypatch.setattr(hydration_runs, "_pipeline", broken)
    run = hydration_services.run_now_sync(filesystem=user_fs(cast.member), trigger=Run.Trigger.MANUAL)
    assert run.status == Run.Status.FAILED
    event = FailureEvent.objects.get()
    assert (event.kind, event.route, event.run, event.user_id, event.team_id) == (
        "hydration_run", "hydration", f"hydration run {run.pk}", cast.member.pk, cast.team.pk)
    assert [entry["actor"] for entry in event.log][0] == "run" and "Fetching slack" in str(event.log)
