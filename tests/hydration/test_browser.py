"""In headless Chromium, on the offline demo: a user's and the team's memory were hydrated,
the diff and its provenance are visible, and Run now shows its progress."""

from __future__ import annotations

import pytest

from hydration import services, tasks
from hydration.models import Run
from lindy import demo
from tests.fixtures.live_browser import login


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_demo_hydration_diff_and_provenance_in_the_browser(browser_page, monkeypatch):
    queued = []
    monkeypatch.setattr(tasks.hydrate, "apply_async", lambda args=(), kwargs=None, **_: queued.append(args[0]))
    ctx = demo.seed()
    runs = Run.objects.count()
    demo.seed()  # idempotent: no second run
    assert Run.objects.count() == runs
    user_fs = ctx.users["user@acme.test"].memory_filesystem
    team_fs = ctx.teams["Acme"].memory_filesystem
    # The hydration demo's run of each; the analyst's demo adds two runs of the user's memory that
    # read a malformed Gmail (analyst.demo), and changes nothing.
    assert Run.objects.filter(filesystem=team_fs).count() == 1
    assert list(Run.objects.filter(filesystem=user_fs).order_by("pk").values_list("status", flat=True)) == [
        "succeeded", "no_changes", "no_changes"]
    user_run = Run.objects.filter(filesystem=user_fs).order_by("pk").first()
    assert user_run is not None
    assert user_run.status == "succeeded" and user_run.revision_id

    page = browser_page
    login(page, "user@acme.test", demo.PASSWORD)
    page.click('nav a[data-nav="hydration"]')
    page.click(f'tr[data-fs="{user_fs.pk}"] a[href="/hydration/{user_fs.pk}/"]')
    gmail = page.locator('tr[data-source="gmail"]').inner_text()
    assert "Error" in gmail and "AttributeError" in gmail and "(disconnected)" in gmail  # the demo's malformed Gmail
    page.click(f'tr[data-run="{user_run.pk}"] a[href="/hydration/runs/{user_run.pk}/"]')
    procedures = page.locator('article[data-change="procedures.md"]')
    assert "+- Every Friday at 9am send the weekly report" in procedures.locator(".add").first.inner_text() or \
        "Every Friday at 9am" in procedures.inner_text()
    assert page.locator('article[data-change="index.md"]').count() == 1

    # Why does the assistant know this? From the file's line to the task that taught it.
    procedures.locator('a:has-text("why?")').click()
    page.click('tr:has-text("Every Friday at 9am") td.no a')
    chosen = page.locator("[data-chosen-line]")
    assert f"run {user_run.pk}" in chosen.inner_text()
    assert chosen.locator('a[href^="/tasks/"]').count() >= 1

    # The team admin sees the team's run and presses Run now; the page follows its progress.
    page.context.clear_cookies()
    login(page, "admin@acme.test", demo.PASSWORD)
    page.goto(f"{page.live_server_url}/hydration/{team_fs.pk}/")
    team_run = Run.objects.get(filesystem=team_fs)
    assert page.locator(f'tr[data-run="{team_run.pk}"] [data-status="succeeded"]').count() == 1
    page.click("button[data-run-now]")
    page.wait_for_selector('#progress[data-status="queued"]')
    new_run = Run.objects.filter(filesystem=team_fs).order_by("-pk").first()
    assert queued == [new_run.pk]
    services.run_execute(run_id=new_run.pk)  # what the worker does
    page.wait_for_selector('#progress[data-status="no_changes"]', timeout=10_000)
    assert "Nothing new" in page.inner_text("#progress")
