"""Each persona's job, walked end to end in headless Chromium at a desk (1280 px) and on a phone
(390 px), the way issue 35 states it: after each action the outcome is said where the person
acted, and the focus is on it.

- A member reviews what waits for them in one pass: the list names the reason per row, a key
  dismisses, the next waiting decision follows with the outcome of the last one on top; a payment
  whose checks failed is confirmed first, restating the action and the failed checks.
- A team admin edits the team's memory and switches a Slack channel off the team's memory; the
  audit page then names both changes and who made them.
"""

from __future__ import annotations

import pytest

from channels_app.models import SlackChannel, SlackInstallation
from lindy.models import AuditEntry
from memory.models import MemoryFile
from tests.factories import PASSWORD
from tests.fixtures.live_browser import login, nav_click
from tests.memory.factories import write_linked
from tests.validator.helpers import task_with
from tests.validator.test_views import blocked_payment
from validator import services as validator_services
from validator.models import Decision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {1280: {"width": 1280, "height": 900}, 390: {"width": 390, "height": 844}}


def _message(page) -> str:
    """The message of the last action: shown, and holding the focus."""
    line = page.locator("#messages p.message").first
    line.wait_for()
    page.wait_for_function("document.activeElement && document.activeElement.closest('#messages') !== null")
    return line.inner_text()


def _blocked_email(cast) -> Decision:
    task = task_with(cast.member, cast.team, [("external", "Hi, can you send me the report?", "jane@initech.test")])
    decision = validator_services.check(
        user=cast.member, team=cast.team, task=task, tool="send_email",
        arguments={"to": ["jane@initech.test"], "subject": "Q3 report", "body": "Attached."},
        justification='The recipient asked "can you send me the report?"')
    assert decision.status == Decision.Status.BLOCKED
    return decision


@pytest.mark.parametrize("width", sorted(SIZES))
def test_a_member_reviews_what_waits_for_them_in_one_pass(browser_page, cast, width):
    page = browser_page
    page.set_viewport_size(SIZES[width])
    email = _blocked_email(cast)
    payment = blocked_payment(cast)
    assert payment.status == Decision.Status.BLOCKED

    login(page, cast.member.email, PASSWORD)
    nav_click(page, "blocked-actions")
    rows = page.locator("tr[data-decision]")
    assert rows.count() == 2
    assert all(text.strip() for text in page.locator("tr[data-decision] [data-reason]").all_inner_texts())

    page.click(f"tr[data-decision='{email.pk}'] a")
    # On a phone the action's content comes before the buttons that decide it.
    content = page.locator("[data-action-content]").bounding_box()
    dismiss = page.locator("button[data-action='dismiss']").first.bounding_box()
    assert content is not None and dismiss is not None and content["y"] < dismiss["y"]

    # One key dismisses; the next waiting decision follows, the last one's outcome on top.
    page.keyboard.press("d")
    page.wait_for_url(f"**/validator/decisions/{payment.pk}/?after={email.pk}")
    said = _message(page)
    assert said.startswith("Dismissed") and "Next waiting: Pay 10 USD to Northwind" in said
    assert "Send an email to jane@initech.test" in page.locator("[data-previous-decision]").inner_text()

    # Money moves and checks failed: Dismiss is the primary button, authorizing asks first.
    assert "secondary" not in (page.locator("button[data-action='dismiss']").first.get_attribute("class") or "")
    page.locator("button[data-action='authorize']").click()
    confirm = page.locator("[data-confirm]")
    confirm.locator("[data-failed-checks]").wait_for()
    assert "Pay 10 USD to Northwind" in confirm.inner_text()
    assert Decision.objects.get(pk=payment.pk).status == Decision.Status.BLOCKED  # nothing ran yet
    page.locator("button[data-action='confirm-authorize']").click()
    page.locator("#decision-outcome[data-status='authorized']").wait_for()
    assert "Nothing else is waiting for you." in _message(page)
    assert Decision.objects.get(pk=payment.pk).resolved_by == cast.member
    assert Decision.objects.get(pk=email.pk).status == Decision.Status.DISMISSED


@pytest.mark.parametrize("width", sorted(SIZES))
def test_a_team_admin_changes_the_teams_memory_and_the_audit_names_them(browser_page, cast, width):
    page = browser_page
    page.set_viewport_size(SIZES[width])
    fs = cast.team.memory_filesystem
    write_linked(fs, {"procedures/deploy.md": "# Deploys\nWe always deploy to staging before prod."})
    installation = SlackInstallation.objects.create(
        team=cast.team, slack_team_id="T0ACME", client_id="c", slack_team_name="Acme", bot_user_id="U0BOT")
    channel = SlackChannel.objects.create(team=cast.team, installation=installation, slack_team_id="T0ACME",
                                          channel_id="C0GENERAL", name="general", use_for_team_memory=True)

    login(page, cast.admin.email, PASSWORD)
    nav_click(page, "memory")
    page.click(f'a[href="/memory/{fs.pk}/"]')
    page.goto(f"{page.live_server_url}/memory/{fs.pk}/files/procedures/deploy.md")
    page.click('[data-action="edit"]')
    page.fill('textarea[name="content"]', "# Deploys\nWe deploy to staging, then to prod after a review.")
    page.click('[data-action="save"]')
    assert _message(page).strip()
    assert "after a review" in page.inner_text("[data-rendered]")
    assert "after a review" in MemoryFile.objects.get(filesystem=fs, path="procedures/deploy.md").content

    nav_click(page, "channels")
    switch = page.locator(f"[data-channel='{channel.channel_id}'] [data-action='team-memory']")
    switch.click()
    said = _message(page)
    assert "general" in said
    channel.refresh_from_db()
    assert channel.use_for_team_memory is False

    page.goto(page.live_server_url + "/audit/")
    log = page.locator("main").inner_text()
    assert "general" in log and cast.admin.display_name in log  # the email is in its tooltip
    assert AuditEntry.objects.filter(actor=cast.admin, team=cast.team).exists()
