"""In headless Chromium: the user opens a blocked action, reads the suggested next step,
authorizes it and it runs once; a team admin of the same team cannot authorize it."""

import pytest

from agent.models import OutboxEntry
from tests.factories import PASSWORD
from tests.fixtures.live_browser import login
from validator import services
from validator.models import Decision

from .helpers import task_with

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_user_authorizes_a_blocked_action_once_and_an_admin_cannot(browser_page, cast):
    task = task_with(cast.member, cast.team, [
        ("external", "Hi, can you send me the report?", "jane@initech.test"),
    ])
    decision = services.check(user=cast.member, team=cast.team, task=task, tool="send_email",
                              arguments={"to": ["jane@initech.test"], "subject": "Q3 report", "body": "Attached."},
                              justification='The recipient asked "can you send me the report?"')
    assert decision.status == Decision.Status.BLOCKED
    page = browser_page

    # A team admin of the same team sees no such action and cannot authorize it.
    login(page, cast.admin.email, PASSWORD)
    response = page.goto(f"{page.live_server_url}/validator/decisions/{decision.pk}/")
    assert response.status == 404
    status = page.evaluate(
        """async (url) => {
            const token = document.cookie.split('; ').find(c => c.startsWith('csrftoken='));
            const r = await fetch(url, {method: 'POST', headers: {'X-CSRFToken': token ? token.split('=')[1] : ''}});
            return r.status;
        }""",
        f"{page.live_server_url}/validator/decisions/{decision.pk}/authorize/",
    )
    assert status in (403, 404)
    page.context.clear_cookies()

    # The user finds it through the badge, reads the suggestion and authorizes.
    login(page, cast.member.email, PASSWORD)
    page.goto(page.live_server_url + "/")
    assert page.locator("[data-badge='blocked-actions']").inner_text() == "1"
    page.click("a[data-nav='blocked-actions']")
    page.click(f"tr[data-decision='{decision.pk}'] a")
    assert "Send an email to jane@initech.test" in page.locator("h1").inner_text()
    assert "Have the assistant ask you" in page.locator("[data-suggestion]").inner_text()

    # Checks failed: the authorization is confirmed first, then a double click: htmx disables the
    # button while the first request runs, and the server's conditional update would refuse a
    # second one anyway.
    page.locator("button[data-action='authorize']").click()
    page.locator("[data-confirm] [data-failed-checks]").wait_for()
    page.locator("button[data-action='confirm-authorize']").dblclick()
    page.locator("#decision-outcome[data-status='authorized']").wait_for()
    assert "Authorized by you" in page.locator("[data-outcome]").inner_text()
    assert page.locator("button[data-action='authorize']").count() == 0

    decision.refresh_from_db()
    assert decision.status == "authorized" and decision.resolved_by == cast.member
    assert OutboxEntry.objects.filter(decision=decision).count() == 1
    page.goto(page.live_server_url + "/validator/")
    assert page.locator("[data-badge='blocked-actions']").count() == 0
    # The email had no live integration: the outcome and the user's outbox both say it was recorded, not sent.
    page.goto(f"{page.live_server_url}/validator/decisions/{decision.pk}/")
    assert "Recorded, not sent" in page.locator("[data-execution]").inner_text()
    page.click("[data-execution] a")
    row = page.locator("tr[data-outbox]")
    assert row.count() == 1 and "Recorded, not sent" in row.inner_text()
    assert "no live integration" in page.locator("[data-integration='Email (Gmail)']").inner_text()
