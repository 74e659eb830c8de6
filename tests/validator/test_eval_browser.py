"""In headless Chromium: the eval matrix page on a phone (the wide table scrolls inside its box,
the page does not), and proposing a decision as an eval case in one click."""

from io import StringIO

import pytest
from django.core.management import call_command

from tests.factories import PASSWORD
from tests.fixtures.live_browser import login
from validator import services
from validator.models import EvalCandidate

from .test_views import blocked_payment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_matrix_page_fits_a_phone(browser_page, cast):
    call_command("validator_eval", "--offline-only", stdout=StringIO())
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, cast.superuser.email, PASSWORD)
    page.goto(page.live_server_url + "/validator/evals/")
    # The offline rules read no prompt: one cell for every variant, with quality off and on.
    assert page.locator("tr[data-cell]").count() == 2
    widths = page.evaluate("""() => {
        const box = document.querySelector('[data-scroll]');
        return {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
                box: box.clientWidth, table: box.scrollWidth, overflow: getComputedStyle(box).overflowX};
    }""")
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('[data-scroll]')).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 15)""")
    assert widths["page"] <= widths["viewport"], (widths, wide)  # no sideways scrolling of the page
    # A table wider than its box scrolls inside it, not the page.
    assert widths["overflow"] in ("auto", "scroll") and widths["table"] >= widths["box"], widths
    assert page.locator("tr[data-cell='offline-rules:default'] [data-false-blocks]").first.inner_text().endswith("%)")


def test_the_user_proposes_an_authorized_block_as_an_eval_case(browser_page, cast):
    decision = services.decision_authorize(decision_id=blocked_payment(cast).pk, user=cast.member)
    page = browser_page
    login(page, cast.member.email, PASSWORD)
    page.goto(f"{page.live_server_url}/validator/decisions/{decision.pk}/")
    page.locator("#eval-proposal summary").click()
    page.fill("#eval-proposal input[name=note]", "I did ask for this payment.")
    page.locator("button[data-action='propose-eval']").click()
    page.locator("#eval-proposal [data-eval-candidate='candidate']").wait_for()
    candidate = EvalCandidate.objects.get()
    assert (candidate.decision_id, candidate.expected_outcome, candidate.note) == (
        decision.pk, "allow", "I did ask for this payment.")
