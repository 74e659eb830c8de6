"""Inbound Gmail mail -> a draft in the user's thread (or a recorded skip), the user's sent
reply -> a scored pair; against the fake Gmail and the offline provider."""

from __future__ import annotations

import pytest

from drafting import services
from drafting.models import Draft, DraftPair, SentMail
from router.models import CallScore, ModelCall

from .helpers import EMAIL, connect, fetch_items, inbound, sent_reply

pytestmark = pytest.mark.django_db

CONTEXT = """# How I work
## Contacts
- Dana Lee <dana@acme.test>: Head of Legal (msa, contract, legal)
## Style
- Greeting: Hey
- Sign-off: Cheers
- Name: Umar
"""


def _process_all(user):
    return {item.external_id: services.item_process(item_id=item.pk) for item in fetch_items(user)}


def test_newsletter_noreply_and_automated_mail_are_skipped_by_rule_without_a_model_call(cast, google):
    connect(cast.member, google)
    inbound(google, "n1", subject="Weekly digest", body="Can you read our news?",
            sender="Acme News <news@acme-news.test>", headers={"List-Unsubscribe": "<mailto:u@acme-news.test>"})
    inbound(google, "n2", subject="Your receipt", body="Could you rate us?", sender="Shop <no-reply@shop.test>")
    inbound(google, "n3", subject="Out of office", body="Can you wait?", sender="Bob <bob@x.test>",
            headers={"Auto-Submitted": "auto-replied"})
    inbound(google, "n4", subject="Sale!", body="Would you buy?", sender="Deals <deals@x.test>",
            labels=("INBOX", "CATEGORY_PROMOTIONS"))
    results = _process_all(cast.member)
    assert all(r.startswith("skipped") for r in results.values()), results
    drafts = {d.gmail_message_id: d for d in Draft.objects.all()}
    assert "List-Unsubscribe" in drafts["n1"].skip_reason
    assert "automated sender" in drafts["n2"].skip_reason
    assert "Auto-Submitted" in drafts["n3"].skip_reason
    assert "Promotions" in drafts["n4"].skip_reason
    assert not ModelCall.objects.filter(route="email.draft").exists()
    assert not google.drafts


def test_a_real_question_gets_a_draft_in_its_thread_with_the_context_and_reply_headers(cast, google):
    connect(cast.member, google)
    services.context_write(user=cast.member, text=CONTEXT, author="learner", reason="test context")
    inbound(google, "q1", subject="MSA clause 7", body="Can you confirm we can change clause 7 of the MSA?",
            thread_id="t-msa", headers={"References": "<earlier@initech.test>"})
    assert _process_all(cast.member) == {"q1": "saved"}

    draft = Draft.objects.get(gmail_message_id="q1")
    assert (draft.status, draft.gmail_thread_id, draft.user, draft.team) == ("saved", "t-msa", cast.member, cast.team)
    assert draft.body.startswith("Hey Jane,") and "Dana Lee" in draft.body and draft.body.rstrip().endswith("Umar")
    assert draft.request["cc"] == ["dana@acme.test"]
    # What Gmail received: a draft in the thread, answering the inbound message.
    saved_id = google.drafts[draft.gmail_draft_id]
    mime = google.raw[saved_id]
    assert google.messages[saved_id]["threadId"] == "t-msa"
    assert mime["In-Reply-To"] == "<q1@initech.test>"
    assert mime["References"] == "<earlier@initech.test> <q1@initech.test>"
    assert mime["Cc"] == "dana@acme.test" and mime["Subject"] == "Re: MSA clause 7"
    # Everything needed to replay it: the context used, the router's assignment and call, the request.
    context = services.context_read(cast.member)
    assert (draft.context_version, draft.context_sha256, draft.context_text) == (context.version, context.sha256, CONTEXT)
    assert draft.context_revision_id == context.revision_id is not None
    call = ModelCall.objects.get(pk=draft.model_call_id)
    assert (call.route, call.prompt_variant) == ("email.draft", draft.prompt_variant)
    assert draft.target_name and draft.arm
    assert "Dana Lee" in draft.request["system"][draft.request["context_block"]]["text"]
    # Idempotent: processing the item again drafts nothing more.
    item = draft.item
    assert services.item_process(item_id=item.pk) == "already handled"
    assert Draft.objects.count() == 1 and len(google.drafts) == 1


def test_the_model_may_decide_no_reply_is_needed(cast, google):
    connect(cast.member, google)
    inbound(google, "f1", subject="FYI", body="The deck is attached for your records.")
    assert _process_all(cast.member)["f1"].startswith("skipped: The model")
    draft = Draft.objects.get()
    assert draft.triage_call_id == draft.model_call_id is not None and not google.drafts


def test_a_sent_reply_pairs_with_the_draft_and_scores_it(cast, google, settings):
    settings.LINDY_DRAFT_HEAVY_EDIT_THRESHOLD = 0.7
    connect(cast.member, google)
    inbound(google, "q1", subject="Renewal", body="Can you confirm the renewal?", thread_id="t-ren")
    _process_all(cast.member)
    draft = Draft.objects.get()
    sent_reply(google, "s1", thread_id="t-ren", body="Jane, no: legal still has the redlines, next week instead.\n\n"
               "On Mon, Dec 1, 2026 at 9:00 AM Jane <jane@initech.test> wrote:\n> Can you confirm the renewal?")
    sent_reply(google, "s2", thread_id="t-other", body="Unrelated mail.")
    results = _process_all(cast.member)
    assert results == {"s1": "paired", "s2": "no draft"}
    pair = DraftPair.objects.get()
    assert pair.draft == draft and pair.scorable and pair.measure == "difflib_words"
    assert "wrote:" not in pair.sent_clean and "Can you confirm" not in pair.sent_clean
    assert pair.similarity < 0.7 and pair.heavy_edit and pair.meaningful
    assert pair.heavy_edit_threshold == 0.7
    # The router's rollout metric comes from the pair.
    score = CallScore.objects.get(call_id=draft.model_call_id)
    assert (score.metric, score.value, score.source) == ("draft.heavy_edit", 1.0, "drafting")
    assert SentMail.objects.filter(paired=True).count() == 1
    # A sent message is looked at once.
    assert services.item_process(item_id=pair.sent_item_id) == "already looked at"


def test_a_light_edit_is_not_heavy(cast, google):
    connect(cast.member, google)
    inbound(google, "q1", subject="Renewal", body="Can you confirm the renewal?", thread_id="t-ren")
    _process_all(cast.member)
    draft = Draft.objects.get()
    sent_reply(google, "s1", thread_id="t-ren", body=draft.body.replace("shortly", "soon"))
    _process_all(cast.member)
    pair = DraftPair.objects.get()
    assert pair.scorable and pair.similarity > 0.9 and not pair.heavy_edit
    assert CallScore.objects.get(call_id=draft.model_call_id).value == 0.0


def test_an_unscorable_pair_is_kept_and_counted_apart(cast, google):
    connect(cast.member, google)
    inbound(google, "q1", subject="Renewal", body="Can you confirm the renewal?", thread_id="t-ren")
    _process_all(cast.member)
    sent_reply(google, "s1", thread_id="t-ren",
               body="On Mon, Dec 1, 2026 at 9:00 AM Jane <jane@initech.test> wrote:\n> Can you confirm the renewal?")
    _process_all(cast.member)
    pair = DraftPair.objects.get()
    assert not pair.scorable and pair.similarity is None and "no text of its own" in pair.unscorable_reason
    assert not pair.heavy_edit and not CallScore.objects.exists()


def test_mail_older_than_the_lookback_gets_no_draft(cast, google):
    connect(cast.member, google)
    inbound(google, "old", subject="Old question", body="Can you help?", at_ms=1_700_000_000_000)
    assert _process_all(cast.member) == {"old": "too old to draft"}
    assert not Draft.objects.exists()


def test_gmail_actions_off_records_the_draft_without_saving_it(cast, google):
    connect(cast.member, google, gmail=False)
    inbound(google, "q1", subject="Renewal", body="Can you confirm the renewal?")
    assert _process_all(cast.member) == {"q1": "recorded"}
    assert Draft.objects.get().status == Draft.Status.RECORDED and not google.drafts


def test_user_mail_is_never_drafted(cast, google):
    connect(cast.member, google)
    inbound(google, "me1", subject="Note to self", body="Can you remember this?", sender=f"Umar <{EMAIL}>")
    assert _process_all(cast.member)["me1"] == "skipped: Mail from the user."
