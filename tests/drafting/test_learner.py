"""The learner (issue 15 part 5) against the product's own drafting call: an edit that helps is
accepted and written as a revision by the learner; one that hurts is rejected and nothing is
written; a positionally biased judge (the fake Messages API always answering "A") decides
nothing and the audit shows it; too few decided comparisons wait."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from drafting.learner import selectors, services
from drafting.models import Comparison, LearnerRun, Proposal
from drafting.services.context import context_read
from memory.models import Revision
from tests.factories import TeamFactory, member_of
from tests.fakes.anthropic_api import FakeAnthropic, message, tool_use_block
from tests.fakes.http import Reply

from .learner_helpers import STALE, SUBJECTS, carol_reply, drafted, paired, serve_offline, set_context

pytestmark = pytest.mark.django_db


@pytest.fixture
def umar(db):
    team = TeamFactory(name="Acme")
    user = member_of(team, email="umar@acme.test", name="Umar Haddad")
    set_context(user, STALE)
    return user, team


def _legal_pairs(user, team, count):
    pairs = []
    for i in range(count):
        draft = drafted(user, team, subject=SUBJECTS[i % len(SUBJECTS)])
        pairs.append(paired(draft, carol_reply(draft)))
    return pairs


def test_an_edit_that_helps_is_accepted_and_written_by_the_learner(umar):
    user, team = umar
    _legal_pairs(user, team, 12)
    run = services.learner_run(user=user)
    assert run.outcome == LearnerRun.Outcome.ACCEPTED, run.message
    proposal = run.proposals.get()
    assert proposal.status == Proposal.Status.ACCEPTED
    assert "Carol Reyes <carol@acme.test>: Head of Legal" in context_read(user).text
    assert proposal.written_revision.author_kind == Revision.AuthorKind.LEARNER
    assert proposal.wins >= 5 and proposal.losses == 0 and proposal.p_value <= 0.1
    assert "+- Carol Reyes" in proposal.diff and "-- Dana Whitfield" in proposal.diff
    # judged only on pairs it was not proposed from
    proposed_from = set(proposal.proposed_from.values_list("pk", flat=True))
    judged = set(proposal.comparisons.values_list("pair_id", flat=True))
    assert proposed_from and not proposed_from & judged
    # every decided comparison was asked twice, positions swapped, and both orders agreed
    for c in proposal.comparisons.filter(identical=False):
        assert (c.first_vote, c.second_vote) == ("B", "A") and c.swap_agrees
        assert c.new_similarity > c.old_similarity
    # the pairs it learned from are not proposed again
    again = services.learner_run(user=user)
    assert again.outcome in (LearnerRun.Outcome.NOTHING, LearnerRun.Outcome.NO_EDIT, LearnerRun.Outcome.WAITING,
                             LearnerRun.Outcome.REJECTED)
    assert not Proposal.objects.filter(pk__gt=proposal.pk, summary__icontains="Carol").exists()


PROPOSE_TOOL = "propose_context"


def _fake_model(*, proposal_text: str | None = None, judge: str = "fair"):
    """A Messages API that answers learner.propose with `proposal_text` and learner.judge either
    fairly (Jaccard word overlap with the sent email) or always "A" (positional bias)."""

    def respond(recorded):
        body = recorded.json
        system = body.get("system")
        system_text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system or [])
        tool_names = [t["name"] for t in body.get("tools") or []]
        if "record_choice" in tool_names:
            text = body["messages"][-1]["content"]
            payload = json.loads(text[text.index("<judge_input>") + 13:text.index("</judge_input>")])
            if judge == "always_a":
                closer = "A"
            else:
                sent = set(payload["sent_email"].lower().split())
                a_words, b_words = set(payload["draft_a"].lower().split()), set(payload["draft_b"].lower().split())
                a = len(sent & a_words) / len(sent | a_words)  # Jaccard: no reward for length
                b = len(sent & b_words) / len(sent | b_words)
                closer = "tie" if abs(a - b) < 1e-9 else ("A" if a > b else "B")
            return Reply(200, message([tool_use_block("record_choice", {"closer": closer})]))
        if PROPOSE_TOOL in tool_names:
            return Reply(200, message([tool_use_block(PROPOSE_TOOL, {"context": proposal_text, "summary": "scripted",
                                                                     "evidence": [1]})]))
        raise AssertionError(f"unexpected call: {system_text[:80]}")

    return respond


def test_an_edit_that_hurts_is_rejected_and_nothing_is_written(umar):
    user, team = umar
    hurtful = STALE.replace("Sign-off: Best", "Sign-off: Kind regards").replace("Greeting: Hi", "Greeting: Dear")
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        serve_offline("email.draft")
        fake.default("POST", "/v1/messages", _fake_model(proposal_text=hurtful))
        for i in range(12):  # the user writes exactly what the drafts say, with a different legal contact
            draft = drafted(user, team, subject=SUBJECTS[i % len(SUBJECTS)])
            paired(draft, carol_reply(draft))
        before = context_read(user)
        run = services.learner_run(user=user)
    proposal = run.proposals.get()
    assert run.outcome == LearnerRun.Outcome.REJECTED and proposal.status == Proposal.Status.REJECTED
    assert proposal.losses >= 5 and proposal.wins == 0
    assert context_read(user).sha256 == before.sha256
    assert proposal.proposer_target != "offline-rules"  # the real client served the proposer
    assert all(c.judge_target != "offline-rules" for c in proposal.comparisons.filter(identical=False))


def test_a_positionally_biased_judge_decides_nothing_and_the_audit_flags_it(umar):
    user, team = umar
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        serve_offline("email.draft", "learner.propose")
        fake.default("POST", "/v1/messages", _fake_model(judge="always_a"))
        _legal_pairs(user, team, 24)
        run = services.learner_run(user=user)
    proposal = run.proposals.get()
    # every non-identical comparison: A then A, the orders disagree, a tie
    judged = proposal.comparisons.filter(identical=False)
    assert judged.count() >= 10
    assert set(judged.values_list("first_vote", "second_vote", "outcome")) == {("A", "A", "tie")}
    assert proposal.status == Proposal.Status.WAITING and context_read(user).text.startswith("## Work context")
    assert "Carol" not in context_read(user).text
    [row] = [r for r in selectors.judge_audit(user) if r.target != "offline-rules"]
    assert row.swap_agreement == 0 and row.position_a_rate == 1
    assert any("position bias" in flag for flag in row.flags)


def test_the_offline_judge_is_audited_as_consistent(umar):
    user, team = umar
    _legal_pairs(user, team, 24)
    services.learner_run(user=user)
    [row] = selectors.judge_audit(user)
    assert row.target == "offline-rules" and row.swap_agreement == 1 and row.similarity_agreement == 1
    assert not [f for f in row.flags if "position" in f]


def test_too_few_decided_comparisons_wait_and_keep_the_pairs(umar):
    user, team = umar
    _legal_pairs(user, team, 6)  # 3 to propose from, 3 held out (+ nothing else): fewer than 5 decided
    run = services.learner_run(user=user)
    assert run.outcome == LearnerRun.Outcome.WAITING
    assert "Carol" not in context_read(user).text
    _legal_pairs(user, team, 8)
    assert services.learner_run(user=user).outcome == LearnerRun.Outcome.ACCEPTED


def test_an_edit_is_not_written_over_the_users_own_change(umar, monkeypatch):
    user, team = umar
    _legal_pairs(user, team, 12)
    real = services._decide

    def user_edits_meanwhile(proposal, *, now):
        set_context(user, STALE + "- Prefers short replies\n")
        return real(proposal, now=now)

    monkeypatch.setattr(services, "_decide", user_edits_meanwhile)
    run = services.learner_run(user=user)
    assert run.proposals.get().status == Proposal.Status.STALE
    assert "Carol" not in context_read(user).text


def test_comparisons_keep_their_evidence(umar):
    user, team = umar
    _legal_pairs(user, team, 12)
    proposal = services.learner_run(user=user).proposals.get()
    c = Comparison.objects.filter(proposal=proposal, identical=False).first()
    assert "Dana Whitfield" in c.old_draft and "Carol Reyes" in c.new_draft and "Carol Reyes" in c.sent
    assert c.first_call.route == c.second_call.route == "learner.judge"
