"""Test helpers for the learner: drafts made by the product's own drafting call (through the
router, recorded with their replayable request) and pairs with what the user "sent"."""

from __future__ import annotations

import json

from django.utils import timezone

from drafting import prompts as draft_prompts
from drafting.learner.text import similarity, strip_quotes
from drafting.models import Draft, DraftPair
from drafting.services.context import context_read, context_write
from router import gateway, routing
from router.models import Route, Target

STALE = ("## Work context\n- Account executive.\n\n## Contacts\n"
         "- Dana Whitfield <dana@acme.test>: Head of Legal (contract, msa, nda, legal)\n\n"
         "## Style\n- Greeting: Hi\n- Sign-off: Best\n- Name: Umar\n")
SUBJECTS = ["MSA redline", "NDA for the pilot", "Contract renewal terms", "Liability clause in the MSA",
            "MSA signature page", "NDA countersignature", "Contract start date", "Legal review of the order form"]
_counter = iter(range(10**6))


def set_context(user, text: str) -> None:
    context_write(user=user, text=text, author="system", reason="test setup")


def serve_offline(*routes: str) -> None:
    """Serve these routes with the offline rules even when the real client is configured."""
    routing.ensure_defaults()
    offline = Target.objects.get(name="offline-rules")
    for name in routes:
        Route.objects.update_or_create(name=name, defaults={"baseline": offline})
    routing.invalidate()


def drafted(user, team, *, subject: str, sender: str = "Jane Park <jane@initech.test>",
            body: str | None = None) -> Draft:
    n = next(_counter)
    body = body or f"Hi Umar,\n\nCould you look at the {subject} and tell me whether it works for you?\n\nThanks,\nJane"
    thread = draft_prompts.Thread(user_name="Umar", user_email=user.email,
                                  last=draft_prompts.Message(sender=sender, to=user.email, subject=subject, body=body))
    doc = context_read(user)
    assignment = gateway.assign(draft_prompts.ROUTE, user)
    request = draft_prompts.build_draft_request(context=doc.text, thread=thread, variant=assignment.prompt_variant)
    completion = gateway.complete(route=draft_prompts.ROUTE, user=user, team=team, system=request["system"],
                                  messages=request["messages"], max_tokens=request["max_tokens"], assignment=assignment)
    reply = draft_prompts.parse_reply(completion.text)
    return Draft.objects.create(
        user=user, team=team, gmail_message_id=f"m{n}", gmail_thread_id=f"t{n}", inbound_from=sender,
        inbound_to=user.email, inbound_subject=subject, inbound_body=body, inbound_at=timezone.now(),
        status=Draft.Status.RECORDED, to=[sender], subject=f"Re: {subject}", body=reply.body,
        context_text=doc.text, context_sha256=doc.sha256, context_version=doc.version,
        context_revision_id=doc.revision_id, target_name=assignment.target.name,
        prompt_variant=assignment.prompt_variant, arm=assignment.arm, model_call_id=completion.call_id,
        request=json.loads(json.dumps(request)), thread=thread.as_dict())


def paired(draft: Draft, sent: str, *, threshold: float = 0.7, meaningful_below: float = 0.9) -> DraftPair:
    score = similarity(strip_quotes(draft.body), strip_quotes(sent))
    return DraftPair.objects.create(
        draft=draft, user=draft.user, team=draft.team, sent_message_id=f"s{draft.gmail_message_id}",
        sent_body=sent, sent_at=timezone.now(), draft_clean=draft.body, sent_clean=strip_quotes(sent),
        measure="test", similarity=score, scorable=True, heavy_edit=score < threshold,
        meaningful=score < meaningful_below, heavy_edit_threshold=threshold, meaningful_threshold=meaningful_below)


def carol_reply(draft: Draft) -> str:
    """What a user whose head of legal is now Carol sends: the draft with Dana replaced."""
    lines = [line for line in draft.body.splitlines() if not line.startswith("I'm looping in")]
    sign = lines.index("Best,") if "Best," in lines else len(lines)
    lines.insert(sign - 1 if sign else sign, "I'm copying Carol Reyes (carol@acme.test), our Head of Legal, who will "
                                             "take this from here.")
    return "\n".join(lines)
