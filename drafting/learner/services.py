"""The learner's writes: runs, proposals and their evidence, the cadence. (Initializing a user's
context document from their mail is drafting.learner.initialization.)

    learner_run(user=user, trigger="command")            # one run now
    learner_cadence_dispatch()                           # the hourly beat: runs whoever is due

A run (issue 15 part 5):
1. The user's meaningful pairs not yet learned from (not cited by an accepted or rejected
   proposal), oldest first, are split alternately: the even ones go to the proposer, the odd
   ones are held out. The held-out set is filled up with the user's newest other scorable pairs
   (LINDY_LEARNER_EVAL_PAIRS in all). Pairs given to the proposer are never used to judge it.
2. `learner.propose` returns the whole new document and the pairs it cites as evidence.
3. Each held-out pair's original drafting call is replayed twice, with the current document and
   with the proposed one (drafting.services.replay: only the context block changes). Same text:
   a tie without asking the judge. Otherwise `learner.judge` is asked twice with the positions
   swapped (drafting.learner.judging); the two must agree for a win or a loss.
4. The gate (drafting.learner.stats): accept when wins > losses under a one-sided sign test
   (alpha LINDY_LEARNER_ALPHA = 0.1, ties excluded) with at least LINDY_LEARNER_MIN_DECIDED (5)
   decided comparisons; below the minimum the proposal waits and its pairs stay available.
   An accepted document is written as a memory revision by "learner" — unless the document
   changed since it was read (the user edited it): then it is kept as stale, not written.
Every proposal is kept with its comparisons, whatever the outcome.
"""

from __future__ import annotations

import difflib
import logging
import re
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, OuterRef, Q, Subquery
from django.utils import timezone

from lindy import failures, jobs, queue
from lindy.models import Membership
from memory.draft import MemoryWriteError
from router import gateway
from router.routing import Assignment
from router.types import Completion

from ..models import Comparison, DraftPair, LearnerRun, Proposal
from ..services.context import context_read, context_write
from ..services.replay import draft_replay_reply
from . import judging, stats
from . import prompts as learner_prompts
from . import selectors as learner_selectors
from .text import similarity, strip_quotes

logger = logging.getLogger(__name__)

CONSUMED = (Proposal.Status.ACCEPTED, Proposal.Status.REJECTED, Proposal.Status.STALE, Proposal.Status.NO_EDIT)
RUN_LEASE = timedelta(minutes=30)
RUN_MAX_ATTEMPTS = 3  # deliveries of one run whose workers died before the sweep marks it failed
MAX_CONTEXT_CHARS = 12000


class LearnerError(Exception):
    """A step the learner could not do (no team, an unusable model answer...)."""


def _setting(name: str, default):
    return getattr(settings, name, default)


def _team_of(user):
    membership = Membership.objects.filter(user=user).select_related("team").order_by("pk").first()
    if membership is None:
        raise LearnerError(f"{user} belongs to no team.")
    return membership.team


# --- the judge ------------------------------------------------------------------------------

def _target_label(assignment: Assignment, completion: Completion) -> str:
    if completion.provider == "offline":
        return "offline-rules"
    return assignment.target.name


def _vote(completion: Completion) -> str:
    return judging.completion_vote(completion.tool_calls, completion.text) or judging.TIE


def comparison_record(*, proposal: Proposal, sent: str, old: str, new: str, pair: DraftPair | None = None,
                      history_index: int | None = None, now: datetime | None = None) -> Comparison:
    """Judge one held-out case (twice, positions swapped) and keep the evidence."""
    now = now or timezone.now()
    fields = dict(proposal=proposal, pair=pair, history_index=history_index, sent=sent, old_draft=old,
                  new_draft=new, old_similarity=similarity(old, sent), new_similarity=similarity(new, sent),
                  created_at=now)
    if " ".join(old.split()) == " ".join(new.split()):
        return Comparison.objects.create(**fields, identical=True, outcome=Comparison.Outcome.TIE)
    user, team = proposal.user, proposal.team
    assignment = gateway.assign(learner_prompts.JUDGE_ROUTE, user)
    votes, calls = [], []
    for a, b in ((old, new), (new, old)):
        completion = gateway.complete(
            route=learner_prompts.JUDGE_ROUTE, user=user, team=team, assignment=assignment, budget_wait=0,
            metadata={"proposal": proposal.pk},
            **learner_prompts.judge_request(sent=sent, a=a, b=b, variant=assignment.prompt_variant))
        votes.append(_vote(completion))
        calls.append(completion)
    return Comparison.objects.create(
        **fields, first_vote=votes[0], second_vote=votes[1], swap_agrees=judging.swap_agrees(*votes),
        outcome=judging.outcome(*votes), judge_target=_target_label(assignment, calls[0]),
        judge_variant=calls[0].prompt_variant, first_call_id=calls[0].call_id, second_call_id=calls[1].call_id)


def _decide(proposal: Proposal, *, now: datetime) -> stats.GateResult:
    counts = dict(proposal.comparisons.values_list("outcome").annotate(n=Count("pk")))
    result = stats.gate(wins=counts.get("win", 0), losses=counts.get("loss", 0), ties=counts.get("tie", 0),
                        alpha=_setting("LINDY_LEARNER_ALPHA", 0.1),
                        min_decided=_setting("LINDY_LEARNER_MIN_DECIDED", 5))
    if result.decision == stats.ACCEPT:
        result = _audit_hold(proposal, result)
    proposal.wins, proposal.losses, proposal.ties = result.wins, result.losses, result.ties
    proposal.p_value = result.p_value
    proposal.decision_reason = result.reason
    proposal.decided_at = now
    return result


def _audit_hold(proposal: Proposal, result: stats.GateResult) -> stats.GateResult:
    """Accept nothing a flagged judge decided: the sign test counts the judge's votes, so it is
    only as good as the judge. The proposal waits (its pairs stay available) and says why."""
    judges = (proposal.comparisons.filter(identical=False).exclude(first_vote="").order_by()
              .values_list("judge_target", "judge_variant").distinct())
    flags = []
    for target, variant in judges:
        row = learner_selectors.judge_audit_of(target, variant)
        if row is not None and row.flagged:
            flags.append(f"judge {target}/{variant} is flagged by its audit: " + "; ".join(row.flags))
    if not flags:
        return result
    return stats.GateResult(stats.WAIT, result.wins, result.losses, result.ties, result.p_value,
                            f"Not accepted although the sign test passed ({result.reason}): the learner accepts "
                            f"nothing while its judge is flagged. " + " ".join(flags) + ".")


def _write_if_current(proposal: Proposal, *, base_sha: str, base_version: int | None) -> None:
    """Write an accepted document, unless the document moved since the proposal read it."""
    current = context_read(proposal.user)
    if current.sha256 != base_sha:
        proposal.status = Proposal.Status.STALE
        proposal.decision_reason += " Not written: the document changed since the learner read it."
        return
    try:
        revision = context_write(user=proposal.user, text=proposal.proposed_context, author="learner",
                                 reason=f"Learner: {proposal.summary}"[:500], base_version=base_version,
                                 source_id=f"proposal:{proposal.pk}")
    except MemoryWriteError as exc:
        proposal.status = Proposal.Status.FAILED
        proposal.decision_reason += f" Not written: {exc}"
        return
    proposal.status = Proposal.Status.ACCEPTED
    proposal.written_revision = revision


def _diff(old: str, new: str) -> str:
    return "".join(difflib.unified_diff((old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
                                        "drafting.md (current)", "drafting.md (proposed)"))


def _proposed_document(completion: Completion, tool: str) -> tuple[str, str, list[int]]:
    for call in completion.tool_calls:
        if call.name == tool:
            context, summary = call.input.get("context"), call.input.get("summary") or ""
            evidence = call.input.get("evidence") or []
            if not isinstance(context, str):
                break
            cited = [int(i) for i in evidence if isinstance(i, int) or (isinstance(i, str) and i.isdigit())]
            return context.strip() + "\n", str(summary)[:500], cited
    raise LearnerError(f"The model did not answer with the {tool} tool.")


# --- a run ----------------------------------------------------------------------------------

def _learnable(user) -> list[DraftPair]:
    """Meaningful pairs not yet learned from, oldest first (the newest LINDY_LEARNER_MAX_NEW_PAIRS)."""
    limit = _setting("LINDY_LEARNER_MAX_NEW_PAIRS", 24)
    rows = list(DraftPair.objects.filter(user=user, scorable=True, meaningful=True)
                .exclude(proposals_from__status__in=CONSUMED)
                .select_related("draft").order_by("-created_at", "-pk")[:limit])
    return [p for p in reversed(rows) if p.draft.request.get("messages")]


def _held_out(user, held: list[DraftPair], used: set[int]) -> list[DraftPair]:
    size = _setting("LINDY_LEARNER_EVAL_PAIRS", 30)
    out = held[:size]
    seen = used | {p.pk for p in out}
    if len(out) < size:
        more = (DraftPair.objects.filter(user=user, scorable=True).exclude(pk__in=seen)
                .select_related("draft").order_by("-created_at", "-pk")[: (size - len(out)) * 2])
        out += [p for p in more if p.draft.request.get("messages")][: size - len(out)]
    return out


def sent_text(pair: DraftPair) -> str:
    """What the user sent, without the quoted thread (the signature stays: it is style)."""
    return strip_quotes(pair.sent_body)


def _pair_for_prompt(pair: DraftPair) -> dict:
    draft = pair.draft
    return {"inbound_from": draft.inbound_from, "subject": draft.inbound_subject, "inbound": draft.inbound_body,
            "draft": draft.body, "sent": sent_text(pair)}


def learner_run(*, user, trigger: str = LearnerRun.Trigger.COMMAND, now: datetime | None = None,
                task_id: str = "") -> LearnerRun:
    """One run of the learner for `user`. A run already going (its holder alive: within its lease)
    is returned as is; one whose holder died (or whose own task is delivered again) is taken over
    and run again, up to RUN_MAX_ATTEMPTS."""
    now = now or timezone.now()
    team = _team_of(user)
    with transaction.atomic():
        type(user).objects.select_for_update().filter(pk=user.pk).first()
        running = LearnerRun.objects.filter(user=user, outcome=LearnerRun.Outcome.RUNNING).order_by("-pk").first()
        if running is not None:
            run = jobs.claim(LearnerRun.objects.all(), running.pk, task_id=task_id, waiting=Q(pk__in=[]),
                             running=Q(outcome=LearnerRun.Outcome.RUNNING), stale_seconds=RUN_LEASE.total_seconds(),
                             max_attempts=RUN_MAX_ATTEMPTS, now=now)
            if run is None:
                return running
        else:
            run = LearnerRun.objects.create(user=user, team=team, trigger=trigger, started_at=now, attempts=1,
                                            lease_holder=jobs.holder(), lease_task_id=task_id[:255], heartbeat_at=now)
    try:
        outcome, message = _run(run, now=now)
    except Exception as exc:  # kept on the run, then surfaced to the task (which retries)
        failures.capture(exc, kind="learner_run", route="drafting.learner", run=f"learner run {run.pk}",
                         **failures.ids_of(user=user, team=team))
        LearnerRun.objects.filter(pk=run.pk).update(outcome=LearnerRun.Outcome.FAILED, finished_at=timezone.now(),
                                                    message=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    run.outcome, run.message, run.finished_at = outcome, message, timezone.now()
    run.save(update_fields=["outcome", "message", "finished_at", "new_pairs"])
    return run


def _run(run: LearnerRun, *, now: datetime) -> tuple[str, str]:
    user = run.user
    learnable = _learnable(user)
    run.new_pairs = len(learnable)
    if not learnable:
        return LearnerRun.Outcome.NOTHING, "No meaningful pair to learn from."
    to_propose, held = learnable[::2], learnable[1::2]
    doc = context_read(user)
    assignment = gateway.assign(learner_prompts.PROPOSE_ROUTE, user)
    completion = gateway.complete(
        route=learner_prompts.PROPOSE_ROUTE, user=user, team=run.team, assignment=assignment, budget_wait=0,
        metadata={"learner_run": run.pk},
        **learner_prompts.propose_request(user=user.display_name, context=doc.text,
                                          pairs=[_pair_for_prompt(p) for p in to_propose],
                                          variant=assignment.prompt_variant))
    proposed, summary, cited = _proposed_document(completion, learner_prompts.PROPOSE_TOOL)
    cited_pairs = [to_propose[i - 1] for i in cited if 1 <= i <= len(to_propose)] or to_propose
    proposal = Proposal.objects.create(
        user=user, team=run.team, run=run, kind=Proposal.Kind.EDIT, base_context=doc.text,
        proposed_context=proposed, diff=_diff(doc.text, proposed), summary=summary, created_at=now,
        propose_call_id=completion.call_id, proposer_target=_target_label(assignment, completion),
        proposer_variant=completion.prompt_variant)
    proposal.proposed_from.set(cited_pairs)
    if proposed.strip() == doc.text.strip():
        proposal.status, proposal.decision_reason, proposal.decided_at = (
            Proposal.Status.NO_EDIT, "No edit proposed: the proposer found nothing new in these pairs.", now)
        proposal.save()
        return LearnerRun.Outcome.NO_EDIT, f"No edit proposed from {len(to_propose)} pair(s)."
    if len(proposed) > MAX_CONTEXT_CHARS:
        proposal.status, proposal.decision_reason, proposal.decided_at = (
            Proposal.Status.REJECTED, f"Rejected: the document would exceed {MAX_CONTEXT_CHARS} characters.", now)
        proposal.save()
        return LearnerRun.Outcome.REJECTED, proposal.decision_reason
    used = {p.pk for p in to_propose}
    for pair in _held_out(user, held, used):
        old = draft_replay_reply(draft=pair.draft, context=doc.text, metadata={"proposal": proposal.pk}).body
        new = draft_replay_reply(draft=pair.draft, context=proposed, metadata={"proposal": proposal.pk}).body
        comparison_record(proposal=proposal, sent=sent_text(pair), old=old, new=new, pair=pair, now=now)
    result = _decide(proposal, now=now)
    if result.decision == stats.ACCEPT:
        _write_if_current(proposal, base_sha=doc.sha256, base_version=doc.version)
    elif result.decision == stats.REJECT:
        proposal.status = Proposal.Status.REJECTED
    else:
        proposal.status = Proposal.Status.WAITING
    proposal.save()
    outcomes: dict[str, str] = {Proposal.Status.ACCEPTED: LearnerRun.Outcome.ACCEPTED,
                                Proposal.Status.WAITING: LearnerRun.Outcome.WAITING,
                                Proposal.Status.REJECTED: LearnerRun.Outcome.REJECTED}
    outcome = outcomes.get(str(proposal.status), LearnerRun.Outcome.FAILED)
    return outcome, f"{proposal.summary} — {proposal.decision_reason}"


# --- cadence (part 6) -----------------------------------------------------------------------

def learner_due(*, now: datetime | None = None) -> list[tuple[int, str]]:
    """[(user id, trigger)] whose run is due: K new meaningful pairs since their last run
    (LINDY_LEARNER_PAIRS_PER_RUN), or at least one once LINDY_LEARNER_FLOOR_HOURS have passed since
    it (the floor: a light user is not left waiting for K); never more than
    LINDY_LEARNER_MAX_RUNS_PER_DAY runs in 24 hours (the ceiling)."""
    now = now or timezone.now()
    k = _setting("LINDY_LEARNER_PAIRS_PER_RUN", 4)
    floor = timedelta(hours=_setting("LINDY_LEARNER_FLOOR_HOURS", 24))
    ceiling = _setting("LINDY_LEARNER_MAX_RUNS_PER_DAY", 3)
    last_run = (LearnerRun.objects.filter(user_id=OuterRef("user_id")).order_by("-started_at")
                .values("started_at")[:1])
    candidates = (DraftPair.objects.filter(meaningful=True, scorable=True, created_at__lte=now,
                                           created_at__gte=now - timedelta(days=30))
                  .values("user_id").annotate(last_run=Subquery(last_run), newest=Max("created_at")))
    due: list[tuple[int, str]] = []
    for row in candidates:
        last = row["last_run"]
        if last is not None and row["newest"] <= last:
            continue
        new = DraftPair.objects.filter(user_id=row["user_id"], meaningful=True, scorable=True,
                                       created_at__lte=now, **({"created_at__gt": last} if last else {})).count()
        recent = LearnerRun.objects.filter(user_id=row["user_id"], started_at__gt=now - timedelta(hours=24)).count()
        if recent >= ceiling:
            continue
        if new >= k:
            due.append((row["user_id"], LearnerRun.Trigger.CADENCE))
        elif new and (last is None or now - last >= floor):
            due.append((row["user_id"], LearnerRun.Trigger.FLOOR))
    return due


def learner_runs_recover(*, now: datetime | None = None) -> list[int]:
    """Beat (with the cadence): queue again, once, each run whose worker died (a delivery of it
    takes it over); one whose workers died RUN_MAX_ATTEMPTS times is marked failed."""
    now = now or timezone.now()
    return jobs.recover(
        LearnerRun, running=Q(outcome=LearnerRun.Outcome.RUNNING), stale_seconds=RUN_LEASE.total_seconds(),
        max_attempts=RUN_MAX_ATTEMPTS, now=now,
        enqueue=lambda run: queue.enqueue_or_log("drafting.tasks.learner_run", run.user_id, run.trigger),
        give_up={"outcome": LearnerRun.Outcome.FAILED, "finished_at": now,
                 "message": f"Its worker died in each of {RUN_MAX_ATTEMPTS} attempts."})


def learner_cadence_dispatch(*, now: datetime | None = None) -> list[int]:
    """The hourly beat job: queue a run for every user who is due. Returns their ids."""
    queued = []
    for user_id, trigger in learner_due(now=now):
        if queue.enqueue_or_log("drafting.tasks.learner_run", user_id, trigger):
            queued.append(user_id)
    return queued


_SPACES = re.compile(r"\s+")
