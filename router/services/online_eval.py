"""The online judge: scores a sample of each rollout's live calls through the judge route."""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from .. import gateway, prompts
from ..models import CallSample, Rollout
from ..types import ModelError
from .scores import call_score_record

logger = logging.getLogger(__name__)
JUDGE_ROUTE = "router.online_eval"


def judge_sample(sample: CallSample) -> float | None:
    completion = gateway.complete(
        route=JUDGE_ROUTE,
        prompt=lambda variant: {
            "system": prompts.judge_system(variant),
            "messages": prompts.judge_messages(sample.request, sample.response, variant),
        },
        tools=[prompts.SCORE_TOOL], tool_choice={"type": "tool", "name": "record_score"}, max_tokens=300,
    )
    call = next((c for c in completion.tool_calls if c.name == "record_score"), None)
    try:
        score = float(call.input["score"]) if call else None
    except (KeyError, TypeError, ValueError):
        score = None
    if score is not None:
        call_score_record(call_id=sample.call_id, metric="judge.quality", value=min(max(score / 10, 0.0), 1.0),
                          source=JUDGE_ROUTE)
    CallSample.objects.filter(pk=sample.pk).update(judged_at=timezone.now())
    return score


def judge_pending_samples(*, rollout: Rollout, limit: int | None = None) -> int:
    """Judge up to `limit` unjudged samples of a rollout. Stops at the first model error
    (the samples stay unjudged and are tried again next run)."""
    limit = limit or settings.ROUTER_ONLINE_EVAL_BATCH
    judged = 0
    samples = CallSample.objects.filter(call__rollout=rollout, judged_at__isnull=True).order_by("created_at")[:limit]
    for sample in samples:
        try:
            judge_sample(sample)
        except ModelError:
            logger.warning("online judge unavailable; %s samples of rollout %s left for later", limit - judged, rollout.pk)
            break
        judged += 1
    return judged
