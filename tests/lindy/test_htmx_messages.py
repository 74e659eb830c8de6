"""An htmx action's message travels in its own response (an HX-Trigger event the page shows),
so nothing is left in the session for the next page; the rollout actions swap only the
rollout's card; and in Chromium, authorize, dismiss and pause show their message once."""

from __future__ import annotations

import json

import pytest

from router import services as router_services
from router.models import Rollout
from tests.conftest import client_for
from tests.factories import PASSWORD
from tests.fixtures.live_browser import login
from tests.router.helpers import cheap_target, offline_evidence, route, variant
from tests.validator.helpers import task_with
from validator import services as validator_services
from validator.models import Decision

HX = {"HTTP_HX_REQUEST": "true"}


def _decision(cast, subject="Q3 report"):
    task = task_with(cast.member, cast.team, [("external", "Hi, can you send me the report?", "jane@initech.test")])
    decision = validator_services.check(
        user=cast.member, team=cast.team, task=task, tool="send_email",
        arguments={"to": ["jane@initech.test"], "subject": subject, "body": "Attached."},
        justification='The recipient asked "can you send me the report?"')
    assert decision.status == Decision.Status.BLOCKED
    return decision


def _rollout():
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    return router_services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")


def _messages(response) -> list[dict]:
    return json.loads(response["HX-Trigger"])["lindy:messages"]["messages"]


@pytest.mark.django_db
def test_an_htmx_authorize_carries_its_message_and_leaves_none_for_the_next_page(cast):
    first, second = _decision(cast), _decision(cast, subject="Q4 report")
    client = client_for(cast.member)
    done = "Authorized: recorded in your outbox, not sent (no live integration)."
    # Another decision waits: the browser is sent there, and the message waits for that page, once.
    response = client.post(f"/validator/decisions/{first.pk}/authorize/", {"confirm": "yes"}, **HX)
    assert response.status_code == 204 and response["HX-Redirect"] == f"/validator/decisions/{second.pk}/?after={first.pk}"
    assert "HX-Trigger" not in response
    assert f"{done} Next waiting: Send an email" in client.get(response["HX-Redirect"]).content.decode()
    assert done not in client.get(f"/validator/decisions/{second.pk}/").content.decode()
    # The last one: the outcome swaps in place and its message travels with the response.
    last = client.post(f"/validator/decisions/{second.pk}/authorize/", {"confirm": "yes"}, **HX)
    assert last.status_code == 200 and "<html" not in last.content.decode()
    assert _messages(last) == [{"level": "success", "text": f"{done} Nothing else is waiting for you."}]
    page = client.get("/validator/").content.decode()
    assert done not in page and 'id="messages"' in page
    # Resolving it again: the refusal is the message of that response, and again not kept.
    again = client.post(f"/validator/decisions/{first.pk}/dismiss/", **HX)
    assert [m["level"] for m in _messages(again)] == ["error"]
    assert "already" not in client.get("/validator/").content.decode().lower().split("<main", 1)[1].split(
        'id="messages"', 1)[1].split("</section>", 1)[0]


@pytest.mark.django_db
def test_without_htmx_the_message_waits_for_the_page_after_the_redirect(cast):
    decision = _decision(cast)
    client = client_for(cast.member)
    response = client.post(f"/validator/decisions/{decision.pk}/dismiss/")
    assert response.status_code == 302 and "HX-Trigger" not in response
    assert "Dismissed: the action will not run." in client.get(response["Location"]).content.decode()
    assert "Dismissed: the action will not run." not in client.get(response["Location"]).content.decode()


@pytest.mark.django_db
def test_rollout_pause_swaps_only_its_card_and_nothing_reaches_the_admin(cast):
    rollout = _rollout()
    client = client_for(cast.superuser)
    response = client.post(f"/router/rollouts/{rollout.pk}/pause/", **HX)
    body = response.content.decode()
    assert response.status_code == 200 and "HX-Redirect" not in response
    assert body.count('id="rollout-panel"') == 1 and body.count("data-status") == 1 and "<html" not in body
    assert "Paused" in body and "Resume" in body and ">Pause<" not in body
    # The stage history gains the pause: it comes along, swapped out of band.
    history = body.split('id="stage-history"', 1)[1]
    assert 'hx-swap-oob="true"' in body and 'data-kind="paused"' in history
    assert _messages(response) == [{"level": "success", "text": "Rollout pause: done."}]
    assert Rollout.objects.get(pk=rollout.pk).status == "paused"
    admin = client.get("/admin/").content.decode()
    assert "Rollout pause: done." not in admin
    # A refused action: 409, the message says why, the card (not swapped) stays as it was.
    refused = client.post(f"/router/rollouts/{rollout.pk}/pause/", **HX)
    assert refused.status_code == 409 and _messages(refused)[0]["level"] == "error"
    assert Rollout.objects.get(pk=rollout.pk).status == "paused"
    assert "Only a running rollout can be paused." not in client.get("/admin/").content.decode()


@pytest.mark.django_db
def test_another_teams_decision_and_a_members_rollout_action_are_404(cast):
    decision = _decision(cast)
    assert client_for(cast.other_admin).post(f"/validator/decisions/{decision.pk}/authorize/", {"confirm": "yes"}, **HX).status_code == 404
    rollout = _rollout()
    assert client_for(cast.member).post(f"/router/rollouts/{rollout.pk}/pause/", **HX).status_code == 404
    assert Decision.objects.get(pk=decision.pk).status == "blocked"
    assert Rollout.objects.get(pk=rollout.pk).status == "running"


WIDTHS = [390, 1280]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_authorize_and_dismiss_show_their_message_once_in_the_browser(browser_page, cast, width):
    first, second = _decision(cast), _decision(cast, subject="Q4 report")
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, cast.member.email, PASSWORD)
    page.goto(f"{page.live_server_url}/validator/decisions/{first.pk}/")
    # Checks failed: authorizing asks first, in place, restating what failed.
    page.click("button[data-action='authorize']")
    page.locator("#decision-outcome [data-confirm] [data-failed-checks]").wait_for()
    page.click("button[data-action='confirm-authorize']")
    # Then the next waiting decision, with the outcome of the last one at the top, focused.
    page.wait_for_url(f"**/validator/decisions/{second.pk}/?after={first.pk}")
    messages = page.locator("#messages p.message")
    assert messages.count() == 1 and messages.inner_text().startswith(
        "Authorized: recorded in your outbox, not sent (no live integration). Next waiting:")
    assert page.evaluate("document.activeElement.id") == "messages"
    page.reload()
    assert page.locator("#messages p.message").count() == 0 and page.locator("#messages").is_hidden()

    page.click("button[data-action='dismiss']")
    page.locator("#decision-outcome[data-status='dismissed']").wait_for()
    page.locator("#messages p.message").first.wait_for()
    assert page.locator("#messages p.message").all_inner_texts() == [
        "Dismissed: the action will not run. Nothing else is waiting for you."]
    assert page.evaluate("document.activeElement.id") == "messages"
    page.goto(f"{page.live_server_url}/validator/")
    assert page.locator("#messages p.message").count() == 0


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_rollout_pause_replaces_its_card_in_the_browser(browser_page, cast, width):
    rollout = _rollout()
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, cast.superuser.email, PASSWORD)
    page.goto(f"{page.live_server_url}/router/rollouts/{rollout.pk}/")
    before = page.locator("#stage-history tr[data-kind]").count()
    page.click("#rollout-panel button:has-text('Pause')")
    page.wait_for_selector("#rollout-panel [data-status]:has-text('Paused')")
    page.wait_for_selector("#stage-history tr[data-kind=paused]")
    assert page.locator("#stage-history").count() == 1
    assert page.locator("#stage-history tr[data-kind]").count() == before + 1
    assert page.locator("#rollout-panel").count() == 1 and page.locator("[data-status]").count() == 1
    assert page.locator("#rollout-panel button:has-text('Resume')").count() == 1
    assert page.locator("#rollout-panel button:has-text('Pause')").count() == 0
    page.locator("#messages p.message").first.wait_for()
    assert page.locator("#messages p.message").all_inner_texts() == ["Rollout pause: done."]
    page.click("#rollout-panel button:has-text('Resume')")
    page.wait_for_selector("#rollout-panel [data-status]:has-text('Running')")
    page.wait_for_selector("#messages p.message:has-text('Rollout resume: done.')")
    assert page.locator("#messages p.message").count() == 1 and page.locator("[data-status]").count() == 1
    page.goto(f"{page.live_server_url}/admin/")
    assert "Rollout" not in " ".join(page.locator(".messagelist").all_inner_texts())
    page.goto(f"{page.live_server_url}/router/")
    assert page.locator("#messages p.message").count() == 0
