"""Initialization, gated (issue 15 part 3): task (a) fetches the user's answered threads from Gmail
(scripted fake Gmail), stores ONE blob and hands its id on; task (b) composes the document and
tests it on held-out threads (replayed drafts with and without it, judged both ways) before
writing it. A document that helps is written by the learner; one that hurts is refused."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from drafting.learner import initialization
from drafting.models import ContextInit, HistoryBlob, Proposal
from drafting.services.context import context_read
from lindy import queue
from memory.models import Revision
from tests.agent.google_helpers import connect
from tests.factories import TeamFactory, member_of
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.gmail_api import EMAIL, FakeGmail

from .learner_helpers import serve_offline
from .test_learner import _fake_model

SUBJECTS = ["MSA redline", "NDA for the pilot", "Contract renewal terms", "Invoice 1042", "Payment schedule",
            "Billing contact", "Liability clause in the MSA", "Overdue invoice", "NDA countersignature",
            "Contract start date", "Invoice 1043", "Legal review", "MSA signature page", "Payment terms",
            "Contract amendment"]


def _reply(subject: str) -> str:
    legal = any(w in subject.lower() for w in ("msa", "nda", "contract", "legal", "liability"))
    who = ("I'm copying Carol Reyes (carol@acme.test), our Head of Legal, who will take this from here." if legal else
           "I'm copying Priya Nair (priya@acme.test), our Finance lead, who will take this from here.")
    return (f"Hey Jane,\n\nThanks for your note about {subject}. I'll look into it and get back to you shortly.\n"
            f"{who}\n\nCheers,\nUmar\n\nOn Tue, Jane Park wrote:\n> Could you look at the {subject}?")


def _mailbox(fake: FakeGmail, count: int = 15) -> None:
    now_ms = int(time.time() * 1000)
    for i, subject in enumerate(SUBJECTS[:count]):
        at = now_ms - (count - i) * 86_400_000
        fake.add_message(f"in{i}", internal_ms=at, subject=subject, sender="Jane Park <jane@initech.test>",
                         body=f"Hi Umar,\n\nCould you look at the {subject} and tell me whether it works?\n\nJane")
        fake.add_message(f"out{i}", internal_ms=at + 3_600_000, subject=f"Re: {subject}", sender=EMAIL,
                         body=_reply(subject), labels=("SENT",))
        fake.messages[f"in{i}"]["threadId"] = fake.messages[f"out{i}"]["threadId"] = f"th{i}"
    # a thread the user started: nothing answered, so not an example
    fake.add_message("own", internal_ms=now_ms - 3_600_000, subject="Hello", sender=EMAIL, body="Hi all", labels=("SENT",))


@pytest.fixture
def umar(db):
    team = TeamFactory(name="Acme")
    return member_of(team, email="umar@acme.test", name="Umar Haddad"), team


def _run_both_steps(init: ContextInit, monkeypatch) -> ContextInit:
    queued = []
    monkeypatch.setattr(queue, "enqueue", lambda name, *args, **kw: queued.append((name, args)))
    blob_id = initialization.context_init_fetch(init_id=init.pk, task_id="task-a")
    assert queued == [("drafting.tasks.learner_init_compose", (init.pk,))]  # only the id travels
    assert HistoryBlob.objects.get(pk=blob_id).thread_count == 15
    # a redelivered fetch does not fetch or store again
    assert initialization.context_init_fetch(init_id=init.pk, task_id="task-a") is None
    assert HistoryBlob.objects.count() == 1
    initialization.context_init_compose(init_id=init.pk, task_id="task-b")
    return ContextInit.objects.get(pk=init.pk)


def test_an_initialization_that_helps_is_tested_then_written(umar, monkeypatch):
    user, team = umar
    with FakeGmail() as gmail, override_settings(**gmail.settings()):
        connect(user, gmail)
        _mailbox(gmail)
        init = ContextInit.objects.create(user=user, team=team)
        init = _run_both_steps(init, monkeypatch)
    blob = init.blob
    first = blob.threads[0]
    assert first["thread"]["last"]["subject"] == "MSA redline" and "On Tue" not in first["sent"]  # quotes removed
    assert init.status == ContextInit.Status.ACCEPTED, init.proposal.decision_reason
    text = context_read(user).text
    assert "- Carol Reyes <carol@acme.test>: Head of Legal" in text and "- Sign-off: Cheers" in text
    assert init.proposal.kind == Proposal.Kind.INIT and init.proposal.written_revision.author_kind == \
        Revision.AuthorKind.LEARNER
    held = list(init.proposal.comparisons.values_list("history_index", flat=True))
    assert held == [2, 5, 8, 11, 14]  # every third thread held out, never shown to the composer
    assert init.proposal.wins == 5 and init.proposal.losses == 0


def test_an_initialization_that_hurts_is_refused(umar, monkeypatch):
    user, team = umar
    # plausible-looking and wrong: a recruiter looped in on everything, a formal greeting and sign-off
    wrong = ("## Work context\n- Hiring.\n\n## Contacts\n- Tom Baker <tom@acme.test>: Recruiter "
             "(look, works)\n\n## Style\n- Greeting: Dear\n- Sign-off: Yours faithfully\n- Name: U. Haddad\n")
    with FakeGmail() as gmail, FakeAnthropic() as model, override_settings(**gmail.settings(), **model.settings()):
        serve_offline("email.draft")
        model.default("POST", "/v1/messages", _fake_model(proposal_text=wrong))
        connect(user, gmail)
        _mailbox(gmail)
        # the composer answers with the write_context tool; reuse the scripted proposer's answer
        monkeypatch.setattr("drafting.learner.prompts.INIT_TOOL", "propose_context")
        init = ContextInit.objects.create(user=user, team=team)
        init = _run_both_steps(init, monkeypatch)
    assert init.status in (ContextInit.Status.REFUSED, ContextInit.Status.WAITING)
    assert init.proposal.status in (Proposal.Status.REJECTED, Proposal.Status.WAITING)
    assert init.proposal.wins == 0
    assert context_read(user).text == ""  # nothing written


def test_initialization_without_gmail_fails_clearly(umar, monkeypatch):
    user, team = umar
    monkeypatch.setattr(queue, "enqueue", lambda *a, **k: None)
    init = initialization.context_init_start(user=user)
    assert initialization.context_init_fetch(init_id=init.pk) is None
    init.refresh_from_db()
    assert init.status == ContextInit.Status.FAILED and "not connected" in init.error
    with pytest.raises(ValueError):
        initialization.context_init_start(user=user, months=0)
