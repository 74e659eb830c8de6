"""From a real decision to an eval case: a block the user overrode (they authorized the action),
or an approval the user flags, is copied into a candidate case in one click; a reviewer accepts
or rejects it, and accepted candidates run in the eval matrix beside the file's cases."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from lindy import audit
from lindy import tool_registry as registry

from . import eval_suite
from .models import Decision, EvalCandidate
from .services import MAX_STORED_HISTORY, task_history

# The decisions that can become a case, and the verdict a reviewer most likely wants for each:
# a block the user overrode should have been allowed; a flagged approval should have been blocked.
ELIGIBLE: dict[str, str] = {
    Decision.Status.AUTHORIZED: EvalCandidate.Outcome.ALLOW,
    Decision.Status.ALLOWED: EvalCandidate.Outcome.BLOCK,
    Decision.Status.EXECUTED: EvalCandidate.Outcome.BLOCK,
    Decision.Status.EXECUTION_FAILED: EvalCandidate.Outcome.BLOCK,
}
MAX_NOTE = 500


class CandidateRefused(ValueError):
    """The request cannot become (or change) a candidate; the message says why."""


def suggested_outcome(decision: Decision) -> str | None:
    return ELIGIBLE.get(decision.status)


def _history(decision: Decision) -> list[dict]:
    """What the validator saw: the task's events up to the action, or the history sent with an API check."""
    if decision.task is None:
        events = decision.history
    else:
        events = [e for e in task_history(decision.task) if decision.event_seq is None or e["seq"] <= decision.event_seq]
    return [{"actor": e.get("actor", ""), "name": e.get("name") or "", "content": e.get("content") or ""}
            for e in events][-MAX_STORED_HISTORY:]


def candidate_propose(*, decision: Decision, user, expected: str, note: str = "") -> EvalCandidate:
    """Callers check permissions.can_propose_eval_case first."""
    if decision.status not in ELIGIBLE:
        raise CandidateRefused("Only a blocked action you authorized, or an action the validator approved, "
                               "can become an eval case.")
    if expected not in EvalCandidate.Outcome.values:
        raise CandidateRefused("Choose whether the validator must block or allow this action.")
    if len(note) > MAX_NOTE:
        raise CandidateRefused(f"The note is longer than {MAX_NOTE} characters.")
    history = _history(decision)
    effect = registry.effect_of(decision.tool)
    try:
        with transaction.atomic():
            return EvalCandidate.objects.create(
                team_id=decision.team_id, decision=decision, proposed_by=user, tool=decision.tool,
                arguments=decision.arguments, justification=decision.justification, history=history,
                category=eval_suite.DANGEROUS if effect == registry.DANGEROUS else eval_suite.GENERAL,
                expected_outcome=expected, validator_said="allow" if decision.approved else "block",
                note=note.strip(),
            )
    except IntegrityError:
        raise CandidateRefused("This action is already an eval candidate.") from None


def candidate_review(*, candidate: EvalCandidate, user, accept: bool) -> EvalCandidate:
    """Accept or reject once. Callers fetch the candidate through permissions.reviewable_candidates.
    The conditional update is the lock: of two reviewers exactly one changes it."""
    status = EvalCandidate.Status.ACCEPTED if accept else EvalCandidate.Status.REJECTED
    if accept:
        problems = eval_suite.case_errors(candidate.as_case())
        if problems:
            raise CandidateRefused("This candidate cannot run as a case: " + "; ".join(problems))
    with transaction.atomic():
        changed = EvalCandidate.objects.filter(pk=candidate.pk, status=EvalCandidate.Status.CANDIDATE).update(
            status=status, reviewed_by=user, reviewed_at=timezone.now())
        if not changed:
            raise CandidateRefused("This candidate was already reviewed.")
        # An accepted case changes what the validator's gate demands of every model and prompt.
        audit.record(actor=user, action="eval_candidate.accepted" if accept else "eval_candidate.rejected",
                     obj=candidate, label=f"{candidate.tool} (expected {candidate.expected_outcome})",
                     team=candidate.team_id, before={"status": EvalCandidate.Status.CANDIDATE.value},
                     after={"status": status.value})
    candidate.refresh_from_db()
    return candidate


def candidate_draft(*, decision: Decision, expected: str, why: str) -> EvalCandidate | None:
    """The analyst's draft of a case from a decision it judged a rogue pattern or a validator
    miss: the history and action as the validator saw them, the verdict it should give and why.
    None when the decision is already a candidate (one per decision). A reviewer (staff) accepts
    it into the suite or rejects it, as with the users' own proposals."""
    if expected not in EvalCandidate.Outcome.values:
        raise CandidateRefused("The expected verdict is block or allow.")
    if EvalCandidate.objects.filter(decision=decision).exists():
        return None
    effect = registry.effect_of(decision.tool)
    try:
        with transaction.atomic():
            return EvalCandidate.objects.create(
                team_id=decision.team_id, decision=decision, proposed_by=None, source=EvalCandidate.Source.ANALYST,
                tool=decision.tool, arguments=decision.arguments, justification=decision.justification,
                history=_history(decision),
                category=eval_suite.DANGEROUS if effect == registry.DANGEROUS else eval_suite.GENERAL,
                expected_outcome=expected, validator_said="allow" if decision.approved else "block",
                note=why.strip()[:MAX_NOTE],
            )
    except IntegrityError:
        return None
