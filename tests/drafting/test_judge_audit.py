"""A judge audit that can fail: test judges with known faults, served through the real anthropic
client against the fake Messages API, are caught by the audit, and while a judge is flagged the
learner accepts nothing it decided and says why on its pages.

- always-first: answers "A" whatever the drafts. Its two orders never agree, so it decides
  nothing; the audit shows swap agreement 0 of n with its interval, and flags position bias.
- prefers-longer: picks the longer draft, in both orders. It agrees with itself (swap agreement
  1.0) so the swap alone cannot catch it; the length measure does: on comparisons where the
  shorter draft is the closer one, it picks the longer every time. Given an edit that makes the
  drafts longer and further from what the user sends, it hands the edit a clean sign test, and
  the learner still accepts nothing."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from drafting.learner import selectors, services
from drafting.learner.stats import wilson
from drafting.models import LearnerRun, Proposal
from drafting.services.context import context_read
from tests.conftest import client_for
from tests.factories import TeamFactory, member_of
from tests.fakes.anthropic_api import FakeAnthropic, message, tool_use_block
from tests.fakes.http import Reply

from .learner_helpers import STALE, SUBJECTS, carol_reply, drafted, paired, serve_offline, set_context

pytestmark = pytest.mark.django_db

# Longer greetings and sign-offs than the user writes: every draft grows and moves away from the sent email.
WORDY = STALE.replace("Sign-off: Best", "Sign-off: With kind regards").replace("Greeting: Hi", "Greeting: Dear")


def faulty_judge(kind: str, *, proposal_text: str):
    """The fake Messages API's answer: learner.propose returns `proposal_text`; learner.judge is a
    judge with a known fault."""

    def respond(recorded):
        body = recorded.json
        tools = [t["name"] for t in body.get("tools") or []]
        if "record_choice" in tools:
            text = body["messages"][-1]["content"]
            payload = json.loads(text[text.index("<judge_input>") + 13:text.index("</judge_input>")])
            if kind == "always_first":
                closer = "A"
            elif kind == "prefers_longer":
                a, b = len(payload["draft_a"]), len(payload["draft_b"])
                closer = "tie" if a == b else ("A" if a > b else "B")
            else:
                raise AssertionError(kind)
            return Reply(200, message([tool_use_block("record_choice", {"closer": closer})]))
        if "propose_context" in tools:
            return Reply(200, message([tool_use_block("propose_context", {
                "context": proposal_text, "summary": "scripted edit", "evidence": [1]})]))
        raise AssertionError(f"unexpected call with tools {tools}")

    return respond


@pytest.fixture
def umar(db):
    team = TeamFactory(name="Acme")
    user = member_of(team, email="umar@acme.test", name="Umar Haddad")
    set_context(user, STALE)
    return user, team


def _run_with(kind: str, user, team, *, proposal_text: str, pairs: int = 24) -> LearnerRun:
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        serve_offline("email.draft")
        fake.default("POST", "/v1/messages", faulty_judge(kind, proposal_text=proposal_text))
        for i in range(pairs):
            draft = drafted(user, team, subject=SUBJECTS[i % len(SUBJECTS)])
            paired(draft, carol_reply(draft))
        return services.learner_run(user=user)


def _audit(user):
    [row] = [r for r in selectors.judge_audit(user) if r.target != "offline-rules"]
    return row


def test_the_wilson_interval():
    assert wilson(0, 0) is None
    low, high = wilson(0, 12)
    assert low == 0 and 0.2 < high < 0.25
    low, high = wilson(12, 12)
    assert 0.75 < low < 0.8 and high == 1
    low, high = wilson(50, 100)
    assert low == pytest.approx(0.404, abs=1e-3) and high == pytest.approx(0.596, abs=1e-3)


def test_an_always_first_judge_is_flagged_for_position_bias_and_decides_nothing(umar):
    user, team = umar
    before = context_read(user).sha256
    run = _run_with("always_first", user, team, proposal_text=WORDY)
    proposal = run.proposals.get()
    assert proposal.status == Proposal.Status.WAITING and proposal.wins == proposal.losses == 0
    assert context_read(user).sha256 == before
    row = _audit(user)
    n = row.comparisons
    assert n >= 10 and row.swap_agreement == 0 and row.position_a_rate == 1
    assert row.swap_interval == wilson(0, n) and row.swap_interval[1] < selectors.SWAP_FLOOR
    assert any(flag.startswith(f"position bias: the two orders agree on 0 of {n} comparisons (0%, 95% interval 0%–")
               for flag in row.flags)
    assert [r.target for r in selectors.flagged_judges()] == [row.target]


def test_a_judge_that_prefers_longer_drafts_is_flagged_and_the_learner_accepts_nothing(umar):
    user, team = umar
    before = context_read(user).sha256
    run = _run_with("prefers_longer", user, team, proposal_text=WORDY)
    proposal = run.proposals.get()
    # The judge hands the wordier document a clean sign test...
    assert proposal.wins >= 5 and proposal.losses == 0 and proposal.p_value <= 0.1
    assert all(c.new_similarity < c.old_similarity and len(c.new_draft) > len(c.old_draft)
               for c in proposal.comparisons.filter(identical=False))
    # ...which the audit does not trust: nothing is written, and the proposal says why.
    assert run.outcome == LearnerRun.Outcome.WAITING and proposal.status == Proposal.Status.WAITING
    assert context_read(user).sha256 == before
    assert "the learner accepts nothing while its judge is flagged" in proposal.decision_reason
    assert "length bias: where the shorter draft was closer to the sent email it picked the longer one" in (
        proposal.decision_reason)
    row = _audit(user)
    assert row.swap_agreement == 1  # consistent with itself: the swap alone would not catch it
    assert row.length_votes == 2 * row.comparisons and row.longer_against_closeness == 1
    assert row.longer_against_interval == wilson(row.length_votes, row.length_votes)
    assert row.longer_against_interval[0] > 0.5

    # The learner's pages say why, with the figures.
    client = client_for(user)
    page = client.get("/drafting/learner/").content.decode()
    assert "data-judge-flagged" in page and "The learner accepts nothing while its judge is flagged." in page
    assert f"picked the longer one {row.length_votes} of {row.length_votes} times" in page
    audit_page = client.get("/drafting/learner/judge/").content.decode()
    assert f'data-longer-against="{row.longer_against_closeness}"' in audit_page
    assert f"(n={row.length_votes}," in audit_page


def test_the_offline_judge_passes_its_audit(umar):
    user, team = umar
    for i in range(24):
        draft = drafted(user, team, subject=SUBJECTS[i % len(SUBJECTS)])
        paired(draft, carol_reply(draft))
    run = services.learner_run(user=user)
    assert run.outcome == LearnerRun.Outcome.ACCEPTED, run.message
    [row] = selectors.judge_audit(user)
    assert row.swap_agreement == 1 and row.swap_interval[0] > 0.7 and not row.flags
    assert selectors.flagged_judges() == []
