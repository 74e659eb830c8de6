"""The Models pages in headless Chromium: charts drawn, htmx buttons, the eval progress bar polling."""

from datetime import timedelta

import pytest

from router import services
from router.models import EvalRun, Rollout, Target
from tests.factories import PASSWORD
from tests.fixtures.live_browser import login

from .helpers import cheap_target, offline_evidence, record_call, route, variant


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_rollout_page_chart_and_buttons(browser_page, cast):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    for days in range(3):
        record_call(rollout=rollout, arm="candidate", ago=timedelta(days=days))
        record_call(rollout=rollout, arm="baseline", ago=timedelta(days=days))
    page = browser_page
    login(page, cast.superuser.email, PASSWORD)
    page.goto(f"{page.live_server_url}/router/rollouts/{rollout.pk}/")
    page.wait_for_selector('canvas#share-chart[data-drawn="1"]')
    page.click("text=Pause")
    page.wait_for_selector("[data-status]:has-text('Paused')")
    assert Rollout.objects.get(pk=rollout.pk).status == "paused"
    page.once("dialog", lambda dialog: dialog.accept())
    page.fill("input[name=reason]", "drafts feel off")
    page.click("button:has-text('Roll back')")
    page.wait_for_selector("[data-status]:has-text('Rolled back')")
    rollout.refresh_from_db()
    assert rollout.percent == 0 and "drafts feel off" in rollout.events.last().reason

    page.goto(f"{page.live_server_url}/router/costs/")
    page.wait_for_selector('canvas#cost-chart[data-drawn="1"]')


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_eval_progress_bar_updates_by_itself(browser_page, cast):
    run = EvalRun.objects.create(route=route("validator"), target=Target.objects.get(name="offline-rules"), total=12,
                                 completed=2, status="running")
    page = browser_page
    login(page, cast.superuser.email, PASSWORD)
    page.goto(f"{page.live_server_url}/router/evals/{run.pk}/")
    assert page.get_attribute("progress", "value") == "2"
    EvalRun.objects.filter(pk=run.pk).update(completed=12, passed=11, status="done", score=11 / 12)
    page.wait_for_selector("[data-score]:has-text('92%')")
    assert page.get_attribute("progress", "value") == "12"
