"""Replaying a draft's model call with only the context document changed (for the learner and
the initialization gate): same route, target, prompt variant, instructions and thread."""

from __future__ import annotations

from router import gateway, routing
from router.models import Target

from .. import prompts
from ..models import Draft


def _assignment(draft: Draft) -> routing.Assignment:
    target_id = Target.objects.filter(name=draft.target_name).values_list("pk", flat=True).first()
    if target_id is None:  # the target is gone: whatever serves the route now
        return gateway.assign(draft.route, draft.user)
    return routing.assign_target(draft.route, target_id, draft.prompt_variant or "default")


def draft_replay_reply(*, draft: Draft, context: str, metadata: dict | None = None) -> prompts.Reply:
    """The original call of `draft` with `context` in place of its context document, parsed.
    Raises ValueError for a draft with no recorded request, router's ModelError on failure."""
    if not draft.request.get("messages"):
        raise ValueError(f"Draft {draft.pk} has no recorded request to replay.")
    request = prompts.with_context(draft.request, context)
    completion = gateway.complete(
        route=draft.route, user=draft.user, team=draft.team, system=request["system"],
        messages=request["messages"], max_tokens=request.get("max_tokens"), assignment=_assignment(draft),
        metadata={"replay_of_draft": draft.pk, **(metadata or {})}, budget_wait=0,
    )
    return prompts.parse_reply(completion.text)


def draft_replay(*, draft: Draft, context: str) -> str:
    """The reply body the original drafting call gives with `context` instead of the context
    document it used ("" when it now judges that no reply is needed)."""
    return draft_replay_reply(draft=draft, context=context).body
