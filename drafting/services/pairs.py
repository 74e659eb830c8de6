"""Draft-sent pairs: a draft and what the user really sent in its thread, compared after quotes
and signatures are removed (drafting.similarity), with the thresholds of the settings.

The pair's heavy-edit outcome is also reported to the router against the drafting call
(metric `draft.heavy_edit`, 1 = heavily edited), so a rollout of `email.draft` is judged on
real pairs. An unscorable pair reports nothing: it has no similarity."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction

from router.services import call_score_record

from .. import similarity
from ..models import Draft, DraftPair

logger = logging.getLogger(__name__)

METRIC = "draft.heavy_edit"


def pair_create(*, draft: Draft, sent_message_id: str, sent_body: str, sent_at=None, sent_item=None) -> DraftPair:
    """Pair `draft` with the email sent in its thread (once: a second call returns the pair)."""
    heavy_at = settings.LINDY_DRAFT_HEAVY_EDIT_THRESHOLD
    meaningful_at = settings.LINDY_DRAFT_MEANINGFUL_THRESHOLD
    scored = similarity.score(draft.body, sent_body)
    value = scored.similarity
    try:
        with transaction.atomic():
            pair = DraftPair.objects.create(
                draft=draft, user_id=draft.user_id, team_id=draft.team_id, sent_item=sent_item,
                sent_message_id=sent_message_id[:255], sent_body=sent_body, sent_at=sent_at,
                draft_clean=scored.draft_clean, sent_clean=scored.sent_clean, measure=similarity.MEASURE,
                similarity=value, scorable=scored.scorable, unscorable_reason=scored.reason[:200],
                heavy_edit=value is not None and value < heavy_at,
                meaningful=value is not None and value < meaningful_at,
                heavy_edit_threshold=heavy_at, meaningful_threshold=meaningful_at,
            )
    except IntegrityError:
        return DraftPair.objects.get(draft=draft)
    if pair.scorable and draft.model_call_id:
        try:
            call_score_record(call_id=draft.model_call_id, metric=METRIC, value=1.0 if pair.heavy_edit else 0.0,
                              source="drafting")
        except ValueError:  # the call was deleted: the pair stands on its own
            logger.warning("draft %s: its model call is gone; no %s score", draft.pk, METRIC)
    return pair
