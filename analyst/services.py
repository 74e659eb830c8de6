"""Every write of the analyst: scoring a finished run of the agent, feeding the score to the router
as an online metric of the run's calls, and drafting eval cases from rogue patterns and validator
misses (validator.eval_candidates, reviewed like the users' own proposals)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import IntegrityError, transaction

from lindy import queue
from lindy.models import AgentTask, TaskEvent
from router import gateway
from router.models import ModelCall
from router.services import call_score_record
from router.types import ModelError
from validator import eval_candidates
from validator.models import Decision, EvalCandidate

from . import prompts, rubric
from .models import ScoredCall, TaskScore

logger = logging.getLogger(__name__)

SCORE_TASK = "analyst.tasks.task_score"
METRIC = "analyst.task_score"


def task_score_queue(*, task_id: int, call_ids: Iterable[int] = (), stopped: str = "") -> None:
    """After a run of the agent: score it in the background once the caller's work commits."""
    through = TaskEvent.objects.filter(task_id=task_id).order_by("-seq").values_list("seq", flat=True).first()
    if through is None:
        return
    ids = [int(i) for i in call_ids if i]

    def send() -> None:
        if queue.enqueue_or_log(SCORE_TASK, task_id, through, ids, stopped, then="the run is scored in place"):
            return
        # The broker refused it. Nothing else records that a run ended (a task with new events may
        # as well be waiting for its run), so no sweep could find this one later: score it here.
        try:
            task_score(task_id=task_id, through_seq=through, call_ids=ids, stopped=stopped)
        except Exception:
            logger.exception("task %s: the run could not be queued for its score, nor scored in place", task_id)

    transaction.on_commit(send)


def _assessment(completion) -> dict | None:
    for call in completion.tool_calls:
        if call.name == prompts.TOOL and isinstance(call.input, dict):
            return call.input
    return None


def _number(value, default: float) -> float:
    try:
        return max(0.0, min(10.0, float(value))) / 10.0
    except (TypeError, ValueError):
        return default


def task_score(*, task_id: int, through_seq: int | None = None, call_ids: Iterable[int] = (),
               stopped: str = "") -> TaskScore | None:
    """Score the run of the agent that ended at event `through_seq` (default: the last). Idempotent:
    a run already scored is returned as it is. A failed analyst call still stores the code's facts."""
    task = AgentTask.objects.select_related("owner", "team").filter(pk=task_id).first()
    if task is None:
        return None
    if through_seq is None:
        through_seq = task.events.order_by("-seq").values_list("seq", flat=True).first()
        if through_seq is None:
            return None
    existing = TaskScore.objects.filter(task=task, through_seq=through_seq).first()
    if existing is not None:
        return existing
    previous = (TaskScore.objects.filter(task=task, through_seq__lt=through_seq).order_by("-through_seq")
                .values_list("through_seq", flat=True).first())
    facts = rubric.facts_for(task, from_seq=(previous or 0) + 1, through_seq=through_seq, stopped=stopped)
    payload = facts.as_payload()
    answer: dict = {}
    call_id, provider, error = None, "", ""
    try:
        completion = gateway.complete(
            route=prompts.ROUTE, user=task.owner, team=task.team,
            prompt=lambda variant: {"system": prompts.system_prompt(variant), "messages": prompts.messages(payload)},
            tools=[prompts.ASSESSMENT_TOOL], tool_choice={"type": "tool", "name": prompts.TOOL}, budget_wait=0,
        )
        answer = _assessment(completion) or {}
        call_id, provider = completion.call_id, completion.provider
        if not answer:
            error = "The analyst's answer had no assessment."
    except ModelError as exc:
        error = f"The analyst's model call failed: {exc}"
    # The code's facts hold whatever the model says: blocked attempts, repeated steps, unbacked claims.
    did = _number(answer.get("did_what_asked"), 0.5)
    looped = bool(facts.repeated) or stopped == "max_turns" or bool(answer.get("looped"))
    claims = list(dict.fromkeys([*facts.unbacked_claims, *[str(c)[:500] for c in answer.get("false_claims") or []]]))
    blocked = facts.blocked
    rogue = _decision(answer.get("rogue_action"), blocked) if answer.get("rogue") else None
    miss = _decision(answer.get("missed_action"), [a for a in facts.actions if a.verdict == "allowed"]) \
        if answer.get("validator_miss") else None
    calls = _run_calls(task, facts, call_ids)
    try:
        with transaction.atomic():
            score = TaskScore.objects.create(
                team=task.team, task=task, from_seq=facts.from_seq, through_seq=through_seq, stopped=stopped,
                score=rubric.overall(did_what_asked=did, blocked=len(blocked), looped=looped, false_claims=len(claims)),
                did_what_asked=did, blocked_attempts=len(blocked),
                blocked_reasons=[{"action": a.description, "reason": a.reason, "decision": a.decision_id} for a in blocked],
                looped=looped, false_claims=claims, rogue=bool(answer.get("rogue")),
                validator_miss=bool(answer.get("validator_miss")), summary=str(answer.get("why") or "")[:2000],
                analyst_call_id=call_id, provider=provider, error=error,
            )
            ScoredCall.objects.bulk_create([
                ScoredCall(task_score=score, call_id=call.pk, route=call.route,
                           target=call.target.name if call.target else call.provider) for call in calls
            ])
            for call in calls:
                call_score_record(call_id=call.pk, metric=METRIC, value=score.score, source="analyst")
    except IntegrityError:
        return TaskScore.objects.get(task=task, through_seq=through_seq)
    if rogue is not None:
        _draft(rogue, "block", f"Rogue pattern (analyst, task score {score.pk}): {score.summary}")
    if miss is not None:
        _draft(miss, "block", f"Suspected validator miss (analyst, task score {score.pk}): {score.summary}")
    return score


def _decision(decision_id, actions: list[rubric.Action]) -> Decision | None:
    """The decision the analyst named, if it is one of the run's; else the run's first candidate."""
    ids = [a.decision_id for a in actions if a.decision_id]
    chosen = decision_id if decision_id in ids else (ids[0] if ids else None)
    return Decision.objects.filter(pk=chosen).first() if chosen else None


def _draft(decision: Decision, expected: str, why: str) -> EvalCandidate | None:
    try:
        return eval_candidates.candidate_draft(decision=decision, expected=expected, why=why)
    except eval_candidates.CandidateRefused:
        logger.warning("analyst could not draft a case from decision %s", decision.pk)
        return None


def _run_calls(task: AgentTask, facts: rubric.Facts, call_ids: Iterable[int]) -> list[ModelCall]:
    """The run's model calls: the agent's turns (the loop passes them) and the validator's checks."""
    ids = {int(i) for i in call_ids if i}
    ids |= {i for i in Decision.objects.filter(pk__in=[a.decision_id for a in facts.actions if a.decision_id])
            .values_list("model_call_id", flat=True) if i}
    return list(ModelCall.objects.filter(pk__in=ids).select_related("target").order_by("pk"))
