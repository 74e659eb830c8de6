"""Drafts and pairs as the pipeline leaves them, for page tests (the pipeline itself is tested
end to end in test_pipeline.py)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from drafting import prompts
from drafting.models import Draft, DraftPair
from drafting.services import pair_create

_n = iter(range(1, 10**9))


def draft(user, team, *, body="Hi Jane,\n\nFriday works for me.\n\nThanks", status=Draft.Status.SAVED,
          target="offline-rules", variant="default", subject="Renewal", days_ago=0) -> Draft:
    n = next(_n)
    thread = prompts.Thread(user_name=user.display_name, user_email=user.email,
                            last=prompts.Message(sender="Jane <jane@initech.test>", to=user.email, subject=subject,
                                                 body="Can you confirm Friday?"))
    made = Draft.objects.create(
        user=user, team=team, gmail_message_id=f"m{n}", gmail_thread_id=f"t{n}", inbound_from="Jane <jane@initech.test>",
        inbound_subject=subject, inbound_body="Can you confirm Friday?", status=status, body=body,
        target_name=target, prompt_variant=variant, arm="baseline", thread=thread.as_dict(),
        request=prompts.build_draft_request(context="", thread=thread, variant=variant))
    if days_ago:
        Draft.objects.filter(pk=made.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return made


def pair(user, team, *, sent: str, days_ago=0, **kwargs) -> DraftPair:
    d = draft(user, team, **kwargs)
    made = pair_create(draft=d, sent_message_id=f"s{d.pk}", sent_body=sent)
    if days_ago:
        DraftPair.objects.filter(pk=made.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
        made.refresh_from_db()
    return made
