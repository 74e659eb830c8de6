"""In headless Chromium: a team admin edits a team file, sees the diff in its history,
reverts it and gets the original text back; a member cannot edit; another team gets 404."""

from __future__ import annotations

import pytest

from lindy.models import Membership
from memory.models import MemoryFile
from tests.factories import PASSWORD, TeamFactory, member_of
from tests.fixtures.live_browser import login
from tests.memory.factories import write_linked

ORIGINAL = "# Deploys\nWe always deploy to staging before prod."


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_admin_edits_diffs_and_reverts_a_team_file(browser_page):
    page = browser_page
    team = TeamFactory(name="Acme")
    other = TeamFactory(name="Globex")
    admin = member_of(team, Membership.Role.ADMIN, email="admin@acme.example")
    member = member_of(team, Membership.Role.MEMBER, email="member@acme.example")
    outsider = member_of(other, Membership.Role.ADMIN, email="admin@globex.example")
    fs = team.memory_filesystem
    write_linked(fs, {"procedures/deploy.md": ORIGINAL})
    file_url = f"{page.live_server_url}/memory/{fs.pk}/files/procedures/deploy.md"

    login(page, admin.email, PASSWORD)
    page.click('nav a[data-nav="memory"]')
    page.click(f'a[href="/memory/{fs.pk}/"]')
    page.click('a:has-text("procedures/")')
    page.click('a[href$="/files/procedures/deploy.md"]')
    assert page.url == file_url
    assert "staging before prod" in page.inner_text("[data-rendered]")

    page.click('[data-action="edit"]')
    page.fill('textarea[name="content"]', "# Deploys\nWe deploy straight to prod on Fridays.")
    page.wait_for_selector('#preview:has-text("straight to prod")')  # the live htmx preview
    page.click('[data-action="save"]')
    page.wait_for_url(file_url)
    assert "straight to prod" in page.inner_text("[data-rendered]")

    page.click('[data-action="history"]')
    diff = page.locator("article.change").first
    assert "-We always deploy to staging before prod." in diff.locator(".del").inner_text()
    assert "+We deploy straight to prod on Fridays." in diff.locator(".add").inner_text()
    diff.locator('[data-action="revert-change"]').click()  # this file's change only
    page.wait_for_selector("text=Reverted procedures/deploy.md")
    page.goto(file_url)
    assert "staging before prod" in page.inner_text("[data-rendered]")
    assert MemoryFile.objects.get(filesystem=fs, path="procedures/deploy.md").content == ORIGINAL

    page.click("button:has-text('Log out')")
    login(page, member.email, PASSWORD)
    page.goto(file_url)
    assert "staging before prod" in page.inner_text("[data-rendered]")
    assert page.locator('[data-action="edit"]').count() == 0
    response = page.goto(f"{page.live_server_url}/memory/{fs.pk}/edit/procedures/deploy.md")
    assert response.status == 403

    page.context.clear_cookies()
    login(page, outsider.email, PASSWORD)
    response = page.goto(file_url)
    assert response.status == 404
    assert "staging" not in page.content()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_who_wrote_this_reads_on_a_phone(browser_page):
    from memory import services
    from memory.services import Change

    page = browser_page
    page.set_viewport_size({"width": 375, "height": 740})
    team = TeamFactory(name="Acme")
    user = member_of(team, Membership.Role.MEMBER, email="umar@acme.example")
    fs = user.memory_filesystem
    long_line = "Jane Park (external) asked: " + "paynorthwindinvoiceINV9immediately" * 5
    services.changes_apply(filesystem=fs, changes=[Change("create", "master.md", content=long_line + "\n")],
                           author_kind="memory_agent", source_kind="hydration_run", source_id="3",
                           words_of="others", words_from="Jane Park's email (external)")
    services.file_write(filesystem=fs, path="master.md", content=f"{long_line}\nI pay invoices on Fridays.\n",
                        base_version=1, author_kind="person", author=user, source_kind="browser")

    login(page, user.email, PASSWORD)
    page.goto(f"{page.live_server_url}/memory/{fs.pk}/files/master.md")
    page.click('[data-action="who"]')
    page.wait_for_selector("[data-who]")
    assert page.inner_text('[data-author-kind="user"] .author').strip().lower() == "you"
    assert "Jane Park's email (external)" in page.inner_text('[data-author-kind="others"] .who-meta')
    # One column: no line nor its author runs off the side of a phone's screen (the site's top
    # navigation is another matter: it is wider than a phone on every page).
    wide = page.evaluate("""[...document.querySelectorAll('[data-who], [data-who] *, [data-who-summary]')]
        .filter(e => e.getBoundingClientRect().right > 375 || e.scrollWidth > e.clientWidth + 1)
        .map(e => e.tagName + '.' + e.className)""")
    assert wide == []
    page.click('[data-author-kind="user"] a[data-revision]')
    page.wait_for_url(lambda url: "/revisions/" in url)
