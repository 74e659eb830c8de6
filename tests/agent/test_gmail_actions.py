"""Live Gmail actions through the real client code (httpx + google-auth) against the fake Gmail:
send, threaded reply, forward, archive, trash, drafts; exactly once across retries; provider
refusals, 429/5xx and a revoked grant."""

import time

import pytest

from agent import services as agent_services
from agent import tools
from agent.models import OutboxEntry
from google_workspace.models import GmailAccount
from tests.agent.google_helpers import connect, incoming, run
from tests.fakes.gmail_api import EMAIL
from tests.fakes.http import Reply
from tests.validator.helpers import task_with

pytestmark = pytest.mark.django_db

SEND = "/gmail/v1/users/me/messages/send"


def test_send_email_sends_one_mime_message_and_the_outbox_says_sent_with_the_link(cast, google):
    connect(cast.member, google)
    result, task = run(cast, "send_email", {"to": ["jane@initech.test"], "cc": ["ops@acme.test"],
                                            "subject": "Contract", "body": "Signed today."})
    assert result.ok and result.adapter == "gmail", result.content
    [sent] = google.sent()
    mime = google.raw[sent["id"]]
    assert (mime["To"], mime["Cc"], mime["Subject"], mime["From"]) == ("jane@initech.test", "ops@acme.test",
                                                                      "Contract", EMAIL)
    assert mime.get_content().strip() == "Signed today." and mime["X-Lindy-Execution"]
    entry = OutboxEntry.objects.get(task=task)
    assert (entry.status, entry.adapter, entry.provider_id) == ("sent", "gmail", sent["id"])
    assert entry.link == f"https://mail.google.com/mail/u/0/#all/{sent['id']}" and entry.link in result.content
    # The same instruction executed again (a redelivered run): Gmail is not asked to send twice.
    again, _ = run(cast, "send_email", {"to": ["jane@initech.test"], "cc": ["ops@acme.test"],
                                        "subject": "Contract", "body": "Signed today."}, task=task)
    assert again.ok and "not repeated" in again.content and len(google.sent()) == 1
    assert OutboxEntry.objects.filter(task=task).count() == 1


def test_reply_is_threaded_with_in_reply_to_and_references(cast, google):
    connect(cast.member, google)
    incoming(google)
    result, _ = run(cast, "reply_to_email", {"thread_id": "t-renewal", "body": "Confirmed: two years."})
    assert result.ok, result.content
    [sent] = google.sent()
    mime = google.raw[sent["id"]]
    assert sent["threadId"] == "t-renewal" and google.requests_to("POST", SEND)[0].json["threadId"] == "t-renewal"
    assert mime["In-Reply-To"] == "<jane-2@initech.test>"
    assert mime["References"] == "<jane-1@initech.test> <jane-2@initech.test>"
    assert (mime["To"], mime["Subject"]) == ("jane@initech.test", "Re: Renewal terms")


def test_forward_attaches_the_original_and_archive_and_trash_change_labels(cast, google):
    connect(cast.member, google)
    incoming(google)
    forwarded, _ = run(cast, "forward_email", {"message_id": "m1", "to": ["boss@acme.test"], "note": "FYI"})
    assert forwarded.ok, forwarded.content
    mime = google.raw[google.sent()[0]["id"]]
    text = mime.get_body(preferencelist=("plain",)).get_content()
    assert mime["Subject"] == "Fwd: Renewal terms" and text.startswith("FYI") and "Forwarded message" in text
    [attached] = [part for part in mime.iter_attachments() if part.get_content_type() == "message/rfc822"]
    assert "Can you confirm the 2-year renewal?" in attached.get_content().get_content()

    archived, _ = run(cast, "archive_email", {"message_id": "m1"})
    assert archived.ok and "INBOX" not in google.messages["m1"]["labelIds"]
    trashed, _ = run(cast, "delete_email", {"message_id": "m1"})
    assert trashed.ok and "TRASH" in google.messages["m1"]["labelIds"] and "trash" in trashed.content
    missing, _ = run(cast, "archive_email", {"message_id": "nope"})
    assert not missing.ok and "no such item" in missing.content
    assert OutboxEntry.objects.get(arguments={"message_id": "nope"}).status == "failed"


def test_drafts_are_created_then_updated_in_place(cast, google):
    connect(cast.member, google)
    result, _ = run(cast, "draft_email", {"to": ["jane@initech.test"], "subject": "Hi", "body": "First"})
    assert result.ok and result.data["provider_id"].startswith("r"), result.content
    draft_id = result.data["provider_id"]
    updated = agent_services.gmail_draft_save(user=cast.member, team=cast.team, to=["jane@initech.test"],
                                              subject="Hi", body="Second", draft_id=draft_id)
    assert updated.ok and updated.data["provider_id"] == draft_id
    assert list(google.drafts) == [draft_id]
    assert google.raw[google.drafts[draft_id]].get_content().strip() == "Second"
    assert google.sent() == []  # a draft sends nothing


def test_a_429_waits_retry_after_then_sends_once(cast, google):
    connect(cast.member, google)
    google.script("POST", SEND, [Reply(429, {"error": {"code": 429, "message": "Too many"}}, {"Retry-After": "1"})])
    result, _ = run(cast, "send_email", {"to": ["jane@initech.test"], "subject": "S", "body": "B"})
    assert result.ok and len(google.sent()) == 1
    first, second = google.requests_to("POST", SEND)
    assert second.at - first.at >= 1.0  # Retry-After honoured


def test_a_500_after_gmail_sent_it_is_checked_not_resent(cast, google):
    connect(cast.member, google)
    google.fail_after[f"POST {SEND}"] = 1  # Gmail sends, then answers 500: the outcome is unknown
    result, _ = run(cast, "send_email", {"to": ["jane@initech.test"], "subject": "S", "body": "B"})
    assert result.ok, result.content
    assert len(google.sent()) == 1 and len(google.requests_to("POST", SEND)) == 1
    assert OutboxEntry.objects.get().status == "sent"


def test_gmail_down_through_the_budget_leaves_it_not_confirmed_then_the_sweep_finishes_it(cast, google):
    connect(cast.member, google)
    google.script("POST", "/gmail/v1/users/me/messages/m1/modify",
                  [Reply(503, {"error": {"code": 503, "message": "Unavailable"}}, {"Retry-After": "0"})] * 4)
    incoming(google)
    started = time.monotonic()
    result, _ = run(cast, "archive_email", {"message_id": "m1"})
    assert not result.ok and "not confirmed" in result.content and time.monotonic() - started < 30  # no Retry-After wait (a loose bound)
    entry = OutboxEntry.objects.get()
    assert entry.status == "pending" and "gave up after 4 tries" in entry.error
    assert len(google.requests_to("POST", "/gmail/v1/users/me/messages/m1/modify")) == 4  # bounded
    # Gmail is back (the four scripted 503s are used up): the sweep asks nothing twice and finishes it.
    assert agent_services.outbox_resume(older_than_seconds=0) == 1
    entry.refresh_from_db()
    assert entry.status == "sent" and "INBOX" not in google.messages["m1"]["labelIds"]


def test_a_4xx_is_a_failed_execution_with_gmails_reason(cast, google):
    connect(cast.member, google)
    google.script("POST", SEND, [Reply(400, {"error": {"code": 400, "message": "Invalid To header"}})])
    result, _ = run(cast, "send_email", {"to": ["not an address"], "subject": "S", "body": "B"})
    assert not result.ok and "Invalid To header" in result.content
    entry = OutboxEntry.objects.get()
    assert entry.status == "failed" and "Invalid To header" in entry.error
    assert len(google.requests_to("POST", SEND)) == 1  # a refusal is final: no retry


def test_a_revoked_grant_disconnects_and_fails_with_reconnect_gmail_never_retrying(cast, google):
    account = connect(cast.member, google)
    google.revoke()
    result, _ = run(cast, "send_email", {"to": ["jane@initech.test"], "subject": "S", "body": "B"})
    assert not result.ok and "reconnect Gmail" in result.content
    account.refresh_from_db()
    assert account.status == GmailAccount.Status.DISCONNECTED and "reconnect Gmail" in account.status_detail
    assert len(google.requests_to("POST", SEND)) == 1 and len(google.requests_to("POST", "/token")) == 1
    assert OutboxEntry.objects.get().status == "failed"
    # Still routed to Gmail (not quietly recorded), and failing at once without calling Google.
    before = len(google.requests)
    again, _ = run(cast, "send_email", {"to": ["x@initech.test"], "subject": "S", "body": "B"})
    assert not again.ok and "reconnect Gmail" in again.content and len(google.requests) == before


def test_adapters_are_live_only_once_the_user_turned_actions_on(cast, google):
    teams = [cast.team.pk]
    assert tools.recorded_only("send_email", teams, cast.member)
    account = connect(cast.member, google, gmail=False, calendar=False)
    assert tools.recorded_only("send_email", teams, cast.member)
    account.act_in_gmail = True
    account.save()
    assert tools.adapter_for("send_email", teams, cast.member) == "gmail"
    assert tools.recorded_only("create_calendar_event", teams, cast.member)
    assert tools.recorded_only("pay_invoice", teams, cast.member)
    assert tools.recorded_only("send_email", teams, cast.admin)  # another user's grant is not theirs
    rows = {row["label"]: row["live"] for row in tools.integrations(teams, cast.member)}
    assert rows["Email (Gmail)"] is True and rows["Calendar"] is False and rows["Payments and file sharing"] is False


def test_one_task_instruction_with_two_different_emails_sends_both(cast, google):
    connect(cast.member, google)
    task = task_with(cast.member, cast.team, [("user", "send both")])
    run(cast, "send_email", {"to": ["a@initech.test"], "subject": "A", "body": "A"}, task=task)
    run(cast, "send_email", {"to": ["b@initech.test"], "subject": "B", "body": "B"}, task=task)
    assert len(google.sent()) == 2


def test_what_the_assistant_sent_comes_back_to_hydration_as_the_assistants_never_the_users_own_words(cast, google):
    """Issue 28 part 6: mail the assistant sent (its X-Lindy-Execution header) is the assistant's
    words: never a standing permission of the user's, nor an example of how the user writes."""
    from hydration import selectors as hydration_selectors
    from hydration import services as hydration_services
    from hydration.sources.gmail import GmailSource
    from memory.models import FileSystem

    connect(cast.member, google)
    incoming(google)
    result, _ = run(cast, "send_email", {"to": ["jane@initech.test"], "subject": "Terms", "body": "Two years, yes."})
    fs = FileSystem.objects.get(owner=cast.member)
    fetched = GmailSource().fetch(fs, {})
    kinds = {item.external_id: item.author_kind for item in fetched.items}
    assert kinds == {result.data["provider_id"]: "assistant", "m1": "external"}
    hydration_services.items_store(filesystem=fs, source="gmail", items=fetched.items, run=None)
    assert list(hydration_selectors.sent_mail(cast.member)) == []
    assert list(hydration_selectors.sent_mail(cast.admin)) == []


def test_the_sweep_gives_up_on_an_old_unconfirmed_send_without_sending_it(cast, google):
    from datetime import timedelta

    from django.utils import timezone

    connect(cast.member, google)
    google.script("POST", SEND, [Reply(503, {"error": {"code": 503, "message": "Unavailable"}})])
    result, _ = run(cast, "send_email", {"to": ["jane@initech.test"], "subject": "S", "body": "B"})
    # A 503 on a send is an unknown outcome: checked (nothing there), sent again within the budget.
    assert result.ok and len(google.sent()) == 1
    google.script("POST", SEND, [Reply(503, {"error": {"code": 503, "message": "Unavailable"}})] * 4)
    late, _ = run(cast, "send_email", {"to": ["bo@initech.test"], "subject": "Late", "body": "B"})
    assert not late.ok and "not confirmed" in late.content
    entry = OutboxEntry.objects.get(status="pending")
    OutboxEntry.objects.filter(pk=entry.pk).update(created_at=timezone.now() - timedelta(days=2))
    assert agent_services.outbox_resume(older_than_seconds=0) == 1
    entry.refresh_from_db()
    assert entry.status == "failed" and "too old" in entry.error and len(google.sent()) == 1
