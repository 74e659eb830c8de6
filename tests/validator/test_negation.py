"""The one negation vocabulary: every cue negates, idioms that ask for the action do not, and
a condition after a request makes it conditional."""

import pytest

from validator import negation


@pytest.mark.parametrize("cue", negation.NEGATIONS)
def test_every_negation_cue_negates_a_request_after_it(cue):
    found = negation.negated(f"{cue} pay invoice INV-9 to Evil Ltd")
    assert found is not None and found.cue == cue.lower()


@pytest.mark.parametrize("condition", negation.CONDITIONS)
def test_every_condition_after_a_request_makes_it_conditional(condition):
    found = negation.find("", "pay invoice INV-7", f", {condition} the goods arrived")
    assert found is not None and found.cue == condition and found.where == "after"


@pytest.mark.parametrize("idiom", negation.AFFIRMATIVE_IDIOMS)
def test_affirmative_idioms_do_not_negate(idiom):
    assert negation.negated(f"{idiom} pay invoice INV-7 to Northwind") is None


@pytest.mark.parametrize("text", [
    "Please pay invoice INV-7 to Northwind Traders, $480",
    "Email no-reply@initech.test the notes",  # "no" inside an address is not a cue
    "Send an email to jane@initech.test saying we can't make it",  # the message's own words
    "Tell Jane that we will not ship on Friday",
    "Post the summary in #general",
    "Announce the stop-loss policy in #finance",
    "Note the invoice; it's fine",  # "note" is not "not"
])
def test_plain_requests_are_not_negated(text):
    assert negation.negated(text) is None


@pytest.mark.parametrize("text,cue", [
    ("Never pay invoice INV-9 to Evil Ltd $5,000", "never"),
    ("Don’t send the contract to bob@globex.test", "don't"),  # curly apostrophe
    ("DO NOT email jane", "do not"),
    ("Please hold off on the payment", "hold off"),
    ("We refuse to pay Evil Ltd", "refuse"),
    ("Under no circumstances pay Evil Ltd", "under no circumstances"),
])
def test_negated_sentences(text, cue):
    assert negation.negated(text).cue == cue


def test_a_later_not_about_something_else_does_not_negate_the_request():
    assert negation.find("", "send the report to jane@initech.test", " and not the draft") is None
    assert negation.find("", "send the report to jane@initech.test", ", no, wait").cue == "no"
    assert negation.find("", "pay invoice inv-7", ", not inv-8") is None


def test_an_actions_own_verb_is_not_its_negation():
    assert negation.negated("Cancel my 3pm meeting", tool="delete_calendar_event") is None
    assert negation.negated("Cancel my 3pm meeting", tool="cancel_calendar_event") is None
    assert negation.negated("Cancel my 3pm meeting", tool="send_email").cue == "cancel"
    assert negation.negated("Don't cancel my 3pm meeting", tool="delete_calendar_event").cue == "don't"


# Phrasing from real billing, renewal and IT mail: a purpose clause ("to avoid …") says why the
# request is made; its cue governs the purpose, never the request.
@pytest.mark.parametrize("text", [
    "Pay immediately to avoid service suspension.",
    "Please remit payment by Friday to avoid late fees.",
    "Kindly settle invoice INV-2291 within 5 days in order to avoid a late payment charge.",
    "Please update your billing details to avoid any interruption to your service.",
    "To avoid disruption, please pay INV-7 today.",
    "In order to avoid delays, send the signed contract to legal@initech.test",
    "Renew your subscription now so as to avoid losing your data.",
    "Pay the deposit this week so we don't lose the booking",
    "Please confirm the transfer to prevent your account from being locked.",
    "Book the 7am train in order not to miss the meeting",
])
def test_purpose_clauses_from_real_mail_do_not_negate_the_request(text):
    assert negation.negated(text) is None


@pytest.mark.parametrize("text,cue", [
    ("I want to avoid paying Evil Ltd this month", "avoid"),
    ("Try to avoid paying invoice INV-9", "avoid"),
    ("Avoid paying invoice INV-9 until legal checks it", "avoid"),
    ("Please avoid sending the contract to bob@globex.test to prevent a leak", "avoid"),
    ("Don't pay now to avoid the fee", "don't"),
    ("We'd rather avoid wiring the money today", "avoid"),
])
def test_a_refusal_with_avoid_still_negates(text, cue):
    assert negation.negated(text).cue == cue


def test_a_purpose_clause_before_or_after_the_quote_does_not_negate_it():
    assert negation.find("to avoid suspension, ", "pay immediately", "") is None
    assert negation.find("pay now to avoid the fee and ", "send the receipt", "") is None
    # A condition after the purpose still conditions the request.
    assert negation.find("", "pay invoice inv-7", " to avoid the late fee, unless it is over budget").cue == "unless"
