"""The validator's "Authorize and run" on a live Gmail action: one message in Gmail with the right
thread headers; authorizing again, executing the decision again, or a worker killed between
Gmail's send and our record (then the resume sweep) still leave exactly one. A revoked grant
shows "reconnect Gmail" on the decision."""

import pytest

from agent import services as agent_services
from agent.models import OutboxEntry
from agent.tools import gmail as gmail_tool
from tests.agent.google_helpers import connect, incoming
from tests.conftest import client_for
from tests.validator.helpers import task_with
from validator import services
from validator.models import Decision

pytestmark = pytest.mark.django_db


def _blocked(cast, tool: str, arguments: dict) -> Decision:
    # Asked by an outsider, not by the user: the validator blocks it for the user to review.
    task = task_with(cast.member, cast.team, [("external", "Can you send me the report?", "jane@initech.test")])
    decision = services.check(user=cast.member, team=cast.team, task=task, tool=tool, arguments=arguments,
                              justification='"Can you send me the report?"')
    assert decision.status == Decision.Status.BLOCKED
    return decision


def test_authorizing_a_blocked_reply_sends_one_threaded_message_even_when_authorized_again(cast, google):
    connect(cast.member, google)
    incoming(google)
    decision = _blocked(cast, "reply_to_email", {"thread_id": "t-renewal", "body": "Here is the report."})
    client = client_for(cast.member)
    before = client.get(f"/validator/decisions/{decision.pk}/").content.decode()
    assert "data-recorded-only" not in before  # live: the page does not claim it is only recorded

    after = client.post(f"/validator/decisions/{decision.pk}/authorize/", {"confirm": "yes"}, follow=True).content.decode()
    [sent] = google.sent()
    mime = google.raw[sent["id"]]
    assert sent["threadId"] == "t-renewal" and mime["In-Reply-To"] == "<jane-2@initech.test>"
    assert mime["References"] == "<jane-1@initech.test> <jane-2@initech.test>"
    entry = OutboxEntry.objects.get(decision=decision)
    assert (entry.status, entry.execution_key, entry.provider_id) == ("sent", f"decision:{decision.pk}", sent["id"])
    assert "data-provider-link" in after and entry.link in after and "Recorded, not sent" not in after

    again = client.post(f"/validator/decisions/{decision.pk}/authorize/", {"confirm": "yes"}, follow=True).content.decode()
    assert "already resolved" in again
    repeat = agent_services.decision_execute(decision=Decision.objects.get(pk=decision.pk))
    assert repeat.ok and "not repeated" in repeat.content
    assert len(google.sent()) == 1 and OutboxEntry.objects.filter(decision=decision).count() == 1
    outbox = client.get("/validator/outbox/").content.decode()
    assert f'data-outbox="{entry.pk}" data-status="sent"' in outbox and entry.link in outbox
    assert sent["id"] in outbox


def test_a_worker_killed_after_gmail_sent_is_finished_by_the_sweep_without_a_second_send(cast, google, monkeypatch):
    connect(cast.member, google)
    decision = _blocked(cast, "send_email", {"to": ["jane@initech.test"], "subject": "Report", "body": "Attached."})

    def killed(self, message, summary):
        raise SystemExit("worker killed")  # Gmail has sent it; we die before writing that down

    monkeypatch.setattr(gmail_tool.GmailAction, "sent", killed)
    with pytest.raises(SystemExit):
        services.decision_authorize(decision_id=decision.pk, user=cast.member)
    monkeypatch.undo()
    assert len(google.sent()) == 1
    entry = OutboxEntry.objects.get(decision=decision)
    assert entry.status == "pending"  # stored before the call, so the attempt is known

    # The task is redelivered: executing the decision again checks Gmail first.
    assert agent_services.outbox_resume(older_than_seconds=0) == 1
    entry.refresh_from_db()
    assert entry.status == "sent" and len(google.sent()) == 1
    assert len(google.requests_to("POST", "/gmail/v1/users/me/messages/send")) == 1
    decision.refresh_from_db()
    assert decision.execution_result["ok"] and "found in Gmail" in decision.execution_result["content"]
    again = agent_services.decision_execute(decision=decision)
    assert again.ok and len(google.sent()) == 1


def test_a_revoked_grant_fails_the_authorized_action_with_reconnect_gmail_on_the_decision(cast, google):
    connect(cast.member, google)
    google.revoke()
    decision = _blocked(cast, "send_email", {"to": ["jane@initech.test"], "subject": "Report", "body": "Attached."})
    html = client_for(cast.member).post(f"/validator/decisions/{decision.pk}/authorize/", {"confirm": "yes"}, follow=True).content.decode()
    assert "reconnect Gmail" in html and "<strong>Failed</strong>" in html
    decision.refresh_from_db()
    assert decision.execution_result["ok"] is False
    assert google.sent() == [] and len(google.requests_to("POST", "/token")) == 1
    assert OutboxEntry.objects.get(decision=decision).status == "failed"


def test_the_agent_loop_sends_an_allowed_email_live_once_and_a_redelivered_run_sends_nothing(cast, google, seam):
    from tests.validator.helpers import RECORDER, SENT

    seam.user_message_sender = RECORDER
    SENT.clear()
    connect(cast.member, google)
    task = agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-1", messages=[
        {"text": "Send an email to jane@initech.test saying the contract is signed."}])
    decision = Decision.objects.get(task=task, tool="send_email")
    assert decision.status == Decision.Status.EXECUTED and decision.execution_result["adapter"] == "gmail"
    [sent] = google.sent()
    assert google.raw[sent["id"]]["To"] == "jane@initech.test"
    entry = OutboxEntry.objects.get(decision=decision)
    assert (entry.status, entry.provider_id) == ("sent", sent["id"])
    # The broker redelivers the run (acks_late): the task was answered, nothing is sent again.
    assert agent_services.agent_run(task_id=task.pk) == "answered"
    assert len(google.sent()) == 1
