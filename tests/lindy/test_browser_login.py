"""Headless Chromium: each role signs in and sees its navigation."""

import pytest

from tests.fixtures.live_browser import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_member_signs_in_and_sees_the_workspace(browser_page, cast):
    login(browser_page, "member@acme.example", "pw-for-tests-1")
    assert browser_page.locator("[data-nav=tasks]").is_visible()
    assert browser_page.locator("[data-nav=admin]").count() == 0
    browser_page.click("[data-nav=tasks]")
    assert browser_page.locator("h1").inner_text() == "Tasks"


def test_support_sees_no_workspace(browser_page, cast):
    login(browser_page, "support@lindy.example", "pw-for-tests-1")
    assert browser_page.locator("[data-nav=tasks]").count() == 0
    assert "support staff" in browser_page.content()
