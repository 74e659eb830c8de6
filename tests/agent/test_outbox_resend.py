"""Issue 35 part 1: a message to the user that did not reach them says so in their outbox and
offers the other channel; sending it again goes once, over that channel, and says what happened."""

from __future__ import annotations

import pytest

from agent import tools
from agent.models import OutboxEntry
from tests.conftest import client_for
from tests.validator.helpers import task_with

pytestmark = pytest.mark.django_db

CALLS: list[dict] = []


def imessage_down(*, user, body: str, channel: str | None = None) -> dict:
    """The user channel with iMessage (and its fallback) failing, SMS working."""
    CALLS.append({"user": user.email, "body": body, "channel": channel})
    if channel != "sms":
        return {"sent": False, "status": "failed", "channel": "imessage", "reason": "the iMessage provider answered 503"}
    return {"sent": True, "status": "sent", "channel": "sms", "outbound_id": len(CALLS)}


def never_texted(*, user, body: str, channel: str | None = None) -> dict:
    CALLS.append({"user": user.email, "body": body, "channel": channel})
    return {"sent": False, "status": "refused", "refusal": "never_texted",
            "reason": "The user has never texted in; the assistant does not start conversations."}


@pytest.fixture(autouse=True)
def _calls():
    CALLS.clear()


def _failed_reply(cast, seam, sender="imessage_down") -> OutboxEntry:
    seam.user_message_sender = f"tests.agent.test_outbox_resend.{sender}"
    task = task_with(cast.member, cast.team, [("user", "Ask me before paying Northwind")])
    result = tools.execute(tools.ExecutionContext(user=cast.member, team=cast.team, task=task), "reply_to_user",
                           {"body": "Shall I pay invoice NW-1 (10 USD)?"})
    assert not result.ok
    return OutboxEntry.objects.get(pk=result.data["outbox_id"])


def test_a_message_that_did_not_reach_the_user_is_sent_again_by_sms_once(cast, seam):
    failed = _failed_reply(cast, seam)
    client = client_for(cast.member)
    page = client.get("/validator/outbox/").content.decode()
    assert "Did not reach you" in page and "the iMessage provider answered 503" in page
    assert f'action="/validator/outbox/{failed.pk}/resend/"' in page and "Send it by SMS instead" in page

    response = client.post(f"/validator/outbox/{failed.pk}/resend/")
    assert response.status_code == 302 and response["Location"] == "/validator/outbox/"
    assert CALLS[-1] == {"user": cast.member.email, "body": "Shall I pay invoice NW-1 (10 USD)?", "channel": "sms"}
    resent = OutboxEntry.objects.exclude(pk=failed.pk).get()
    assert (resent.tool, resent.status, resent.task_id) == ("send_sms_to_user", "sent", failed.task_id)
    page = client.get("/validator/outbox/").content.decode()
    assert "Sent again by SMS." in page and "Send it by SMS instead" not in page
    assert f"sent again as entry {resent.pk}" in page

    # Once: a second press (a double click, a stale page) sends nothing and says why.
    again = client.post(f"/validator/outbox/{failed.pk}/resend/", follow=True)
    assert len(CALLS) == 2 and OutboxEntry.objects.count() == 2
    assert "cannot be sent again" in again.content.decode()


def test_no_other_channel_is_offered_where_none_can_carry_it_and_nobody_else_may_resend(cast, seam):
    refused = _failed_reply(cast, seam, sender="never_texted")
    client = client_for(cast.member)
    page = client.get("/validator/outbox/").content.decode()
    assert "never texted in" in page and "instead</button>" not in page
    assert client.post(f"/validator/outbox/{refused.pk}/resend/").status_code == 302
    assert len(CALLS) == 1  # refused by the service: nothing sent

    failed = _failed_reply(cast, seam)
    for other in (cast.admin, cast.other_admin):
        assert client_for(other).post(f"/validator/outbox/{failed.pk}/resend/").status_code == 404
    assert client_for(cast.member).get(f"/validator/outbox/{failed.pk}/resend/").status_code == 405
    assert client_for(cast.member).post("/validator/outbox/99999999/resend/").status_code == 404
    assert len(CALLS) == 2 and not OutboxEntry.objects.filter(tool="send_sms_to_user").exists()
