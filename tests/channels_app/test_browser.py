"""Support staff open the ratio dashboard in Chromium: the chart draws and the numbers over
threshold are listed. A team member cannot open it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from channels_app.models import NumberDay
from tests.channels_app.factories import SendingNumberFactory
from tests.factories import PASSWORD, TeamFactory, UserFactory, member_of
from tests.fixtures.live_browser import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _traffic():
    hot = SendingNumberFactory(phone="+13125550105", label="Hot line")
    calm = SendingNumberFactory(phone="+14155550101", label="Calm line")
    today = timezone.localdate()
    for back in range(14):
        NumberDay.objects.create(number=hot, day=today - timedelta(days=back), sent=80, received=6)
        NumberDay.objects.create(number=calm, day=today - timedelta(days=back), sent=12, received=10)


def test_support_sees_chart_and_numbers_over_threshold(browser_page):
    _traffic()
    support = UserFactory(email="support@lindy.example", is_support=True)
    page = browser_page
    login(page, support.email, PASSWORD)
    page.click("a[data-nav=channel-health]")
    page.wait_for_url("**/channels/health/")
    assert page.locator("h1").inner_text() == "Channel health"

    page.wait_for_function("window.lindyRatioChart && window.lindyRatioChart.data.datasets.length > 0")
    datasets = page.evaluate("window.lindyRatioChart.data.datasets.map(d => d.label)")
    assert "Hot line · CHI" in datasets and "Calm line · SF" in datasets  # lines by name and city
    box = page.locator("#ratio-chart").bounding_box()
    assert box["width"] > 100 and box["height"] > 50
    assert page.evaluate("window.lindyVolumeChart.data.datasets[0].data.length") == 14

    rows = page.locator("#over-threshold tbody tr[data-number]")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-number") == "+13125550105"
    assert "Critical" in rows.first.inner_text()


def test_support_meets_open_alerts_first_and_acknowledges_one_with_a_note(browser_page):
    """Issue 35: the alerts (what support acts on) come before the charts and tables, each named by
    its line with its next step; acknowledging with a note answers in place (htmx)."""
    from channels_app.models import RatioAlert
    from channels_app.services import pool

    hot = SendingNumberFactory(phone="+13125550105", label="Line 5 (CHI)")
    today = timezone.localdate()
    for back in range(3):
        pool.number_day_record(number=hot, day=today - timedelta(days=back), sent=80, received=6)  # 13.3
    assert RatioAlert.objects.filter(number=hot, level="critical").count() == 3
    support = UserFactory(email="support@lindy.example", is_support=True)
    page = browser_page
    login(page, support.email, PASSWORD)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(page.live_server_url + "/channels/health/")
        first_alert = page.locator("#open-alerts article[data-level=critical]").first
        assert "Line 5 · CHI" in first_alert.locator("[data-line-name]").inner_text()
        assert "Next step" in first_alert.inner_text()
        assert first_alert.bounding_box()["y"] < page.locator("#line-days").bounding_box()["y"] \
            < page.locator("#over-threshold").bounding_box()["y"] < page.locator("#ratio-chart").bounding_box()["y"]
    alert = RatioAlert.objects.filter(number=hot).order_by("-day").first()
    card = page.locator(f"#alert-{alert.pk}")
    card.locator("input[name=note]").fill("Paused the follow-up campaign")
    card.locator("button[type=submit]").click()
    page.wait_for_selector(f"#alert-{alert.pk} [role=status]")
    assert "Paused the follow-up campaign" in page.locator(f"#alert-{alert.pk}").inner_text()
    alert.refresh_from_db()
    assert alert.acknowledge_note == "Paused the follow-up campaign" and alert.acknowledged_by == support


def test_team_member_cannot_open_the_dashboard(browser_page):
    team = TeamFactory(name="Acme")
    member = member_of(team, email="member@acme.example")
    page = browser_page
    login(page, member.email, PASSWORD)
    assert page.locator("a[data-nav=channel-health]").count() == 0
    response = page.goto(page.live_server_url + "/channels/health/")
    assert response.status == 404
    assert page.locator("#ratio-chart").count() == 0
