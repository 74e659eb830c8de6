"""The `email.draft` route's offline eval cases, built by the drafting app's own prompt.

A case in router/evals/email.draft.jsonl holds what the product has when it drafts:

    {"id", "description",
     "context": "<the user's context document (drafting.md)>",
     "thread": {"user_name", "user_email",
                "last": {"sender", "to", "subject", "body"},
                "earlier": [{"sender", "to", "subject", "body"}, ...]},
     "expected": {"contains": [...], "absent": [...]}}

The request is `prompts.build_draft_request` for the variant under test — byte for byte what
drafting.services.inbound sends — so a score is the score of the prompt users get. An answer
that needs no reply is scored on its text like any other: a case expects "NO_REPLY_NEEDED" in
it (or absent from it).
"""

from __future__ import annotations

from . import prompts


def draft_eval_request(case: dict, variant: str) -> dict:
    thread = prompts.Thread.from_dict(case["thread"])
    return prompts.build_draft_request(context=case.get("context", ""), thread=thread, variant=variant)


def components(variant: str) -> dict[str, str]:
    """What the prompt optimizer evolves: the instructions, placeholders unfilled."""
    return {"system": prompts.instructions_template(variant)}
