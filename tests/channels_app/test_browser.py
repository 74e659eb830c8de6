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
    assert "Hot line" in datasets and "Calm line" in datasets
    box = page.locator("#ratio-chart").bounding_box()
    assert box["width"] > 100 and box["height"] > 50
    assert page.evaluate("window.lindyVolumeChart.data.datasets[0].data.length") == 14

    rows = page.locator("#over-threshold tbody tr[data-number]")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-number") == "+13125550105"
    assert "Critical" in rows.first.inner_text()


def test_team_member_cannot_open_the_dashboard(browser_page):
    team = TeamFactory(name="Acme")
    member = member_of(team, email="member@acme.example")
    page = browser_page
    login(page, member.email, PASSWORD)
    assert page.locator("a[data-nav=channel-health]").count() == 0
    response = page.goto(page.live_server_url + "/channels/health/")
    assert response.status == 404
    assert page.locator("#ratio-chart").count() == 0
