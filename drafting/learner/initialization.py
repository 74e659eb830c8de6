"""Initializing a user's context document from their mail (issue 15 part 3), in two steps each its
own Celery task: fetch (their answered threads of the last months, stored as one HistoryBlob) and
compose (a document proposed from them, then tested like every learner edit: drafts for held-out
threads replayed with and without it and judged; only an accepted document is written). Each step
is a leased job (lindy.jobs): one execution holds it, a dead holder's claim expires, and the sweep
queues a step again, at most INIT_MAX_ATTEMPTS claims in all.

    context_init_start(user=user)                        # the fetch task, then the compose task

The proposal, its comparisons and the gate are the learner run's (drafting.learner.services)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from google_workspace.errors import NotConnected
from lindy import jobs, queue
from router import gateway
from router.routing import Assignment

from .. import prompts as draft_prompts
from ..models import ContextInit, HistoryBlob, Proposal
from ..services.context import context_read
from . import prompts as learner_prompts
from . import services as learner
from . import stats

CLAIM_LEASE = timedelta(minutes=20)
# Claims of both steps (each retried up to 5 times by its task) before the sweep gives up.
INIT_MAX_ATTEMPTS = 12


def context_init_start(*, user, months: int = 3) -> ContextInit:
    """Start initializing `user`'s context document: the fetch task, then the compose task."""
    if not 1 <= months <= 24:
        raise ValueError("months must be between 1 and 24.")
    init = ContextInit.objects.create(user=user, team=learner._team_of(user), months=months)
    _enqueue_step(init, "drafting.tasks.learner_init_fetch")
    return init


INIT_ENQUEUE_FAILED = "Could not be queued: the task queue was unreachable. Start the initialization again."


def _enqueue_step(init: ContextInit, task_name: str) -> None:
    """Queue the next step, or mark the initialization failed, saying why: nothing sweeps these, so
    a step the broker never got must not leave it "fetching" or "composing" for ever."""
    if not queue.enqueue_or_log(task_name, init.pk):
        ContextInit.objects.filter(pk=init.pk).update(status=ContextInit.Status.FAILED, error=INIT_ENQUEUE_FAILED,
                                                      finished_at=timezone.now())


def _claim(init_id: int, status: str, task_id: str) -> ContextInit | None:
    """Take the step: only one execution holds it (lindy.jobs.claim; a dead holder's claim expires
    after CLAIM_LEASE, or at once when its own task is delivered again)."""
    holder = task_id or f"inline-{timezone.now().timestamp()}"
    return jobs.claim(ContextInit.objects.select_related("user", "team"), init_id, task_id=holder,
                      waiting=Q(status=status, lease_task_id=""), running=Q(status=status) & ~Q(lease_task_id=""),
                      stale_seconds=CLAIM_LEASE.total_seconds(), max_attempts=INIT_MAX_ATTEMPTS)


def _release(init: ContextInit, **fields) -> None:
    ContextInit.objects.filter(pk=init.pk).update(lease_task_id="", heartbeat_at=None, **fields)


INIT_STEP_TASKS: dict[str, str] = {ContextInit.Status.FETCHING: "drafting.tasks.learner_init_fetch",
                   ContextInit.Status.COMPOSING: "drafting.tasks.learner_init_compose"}


def context_inits_recover(*, now: datetime | None = None) -> list[int]:
    """Beat (with the cadence): queue again, once, the step of each initialization whose worker died
    holding it; one whose steps were claimed INIT_MAX_ATTEMPTS times is marked failed."""
    now = now or timezone.now()
    return jobs.recover(
        ContextInit, running=Q(status__in=list(INIT_STEP_TASKS)) & ~Q(lease_task_id=""),
        stale_seconds=CLAIM_LEASE.total_seconds(), max_attempts=INIT_MAX_ATTEMPTS, now=now,
        enqueue=lambda init: queue.enqueue_or_log(INIT_STEP_TASKS[init.status], init.pk),
        give_up={"status": ContextInit.Status.FAILED, "finished_at": now, "lease_task_id": "", "heartbeat_at": None,
                 "error": f"Its steps were taken {INIT_MAX_ATTEMPTS} times and did not finish."})


def context_init_fetch(*, init_id: int, task_id: str = "") -> int | None:
    """Task (a): fetch the user's answered threads of the last months from Gmail, sanitize and
    format them, store them as ONE HistoryBlob row and hand its id on (the claim check).
    Idempotent: a fetch that already stored its blob only queues the next step again."""
    init = _claim(init_id, ContextInit.Status.FETCHING, task_id)
    if init is None:
        return None
    if init.blob_id is None:
        from .history import fetch_answered_threads

        try:
            threads = fetch_answered_threads(init.user, months=init.months)
        except NotConnected as exc:  # the user must act: not retried
            _release(init, status=ContextInit.Status.FAILED, error=str(exc), finished_at=timezone.now())
            return None
        except Exception as exc:
            _release(init, error=f"{type(exc).__name__}: {exc}"[:2000])
            raise
        blob = HistoryBlob.objects.create(user=init.user, team=init.team, months=init.months, threads=threads,
                                          thread_count=len(threads),
                                          char_count=sum(len(str(t)) for t in threads))
        init.blob = blob
    _release(init, blob=init.blob, status=ContextInit.Status.COMPOSING, error="")
    _enqueue_step(init, "drafting.tasks.learner_init_compose")
    return init.blob_id


def _draft_for_thread(*, user, team, thread: dict, context: str, assignment: Assignment) -> str:
    request = draft_prompts.build_draft_request(context=context, thread=draft_prompts.Thread.from_dict(thread),
                                                variant=assignment.prompt_variant)
    completion = gateway.complete(route=draft_prompts.ROUTE, user=user, team=team, system=request["system"],
                                  messages=request["messages"], max_tokens=request["max_tokens"],
                                  assignment=assignment, budget_wait=0, metadata={"learner": "init"})
    return draft_prompts.parse_reply(completion.text).body


def context_init_compose(*, init_id: int, task_id: str = "") -> ContextInit | None:
    """Task (b): compose the context document from the blob, then test it before writing it:
    drafts for held-out answered threads are replayed with and without it and judged (the same
    gate as every learner edit). Only an accepted document is written."""
    init = _claim(init_id, ContextInit.Status.COMPOSING, task_id)
    if init is None:
        return None
    try:
        return _compose(init)
    except Exception as exc:
        _release(init, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise


def _compose(init: ContextInit) -> ContextInit:
    user, team, now = init.user, init.team, timezone.now()
    threads = init.blob.threads if init.blob else []
    if init.proposal_id:  # a retry after the proposal was decided: finish the bookkeeping only
        proposal = init.proposal
    else:
        every = max(2, learner._setting("LINDY_LEARNER_INIT_HOLDOUT_EVERY", 3))
        held = [(i, t) for i, t in enumerate(threads) if i % every == every - 1][: learner._setting("LINDY_LEARNER_EVAL_PAIRS", 30)]
        held_ids = {i for i, _ in held}
        learn = [t for i, t in enumerate(threads) if i not in held_ids][-60:]
        if not learn or not held:
            _release(init, status=ContextInit.Status.WAITING, finished_at=now,
                     error=f"Only {len(threads)} answered thread(s): too few to compose and test a document.")
            return ContextInit.objects.get(pk=init.pk)
        doc = context_read(user)
        assignment = gateway.assign(learner_prompts.INIT_ROUTE, user)
        completion = gateway.complete(
            route=learner_prompts.INIT_ROUTE, user=user, team=team, assignment=assignment, budget_wait=0,
            **learner_prompts.init_request(user=user.display_name, threads=[_thread_for_prompt(t)
                                                                                           for t in learn],
                                           variant=assignment.prompt_variant))
        proposed, summary, _ = learner._proposed_document(completion, learner_prompts.INIT_TOOL)
        proposal = Proposal.objects.create(
            user=user, team=team, kind=Proposal.Kind.INIT, base_context=doc.text, proposed_context=proposed,
            diff=learner._diff(doc.text, proposed), summary=summary, created_at=now, propose_call_id=completion.call_id,
            proposer_target=learner._target_label(assignment, completion), proposer_variant=completion.prompt_variant)
        ContextInit.objects.filter(pk=init.pk).update(proposal=proposal)
        draft_assignment = gateway.assign(draft_prompts.ROUTE, user)
        for index, thread in held:
            old = _draft_for_thread(user=user, team=team, thread=thread["thread"], context=doc.text,
                                    assignment=draft_assignment)
            new = _draft_for_thread(user=user, team=team, thread=thread["thread"], context=proposed,
                                    assignment=draft_assignment)
            learner.comparison_record(proposal=proposal, sent=thread["sent"], old=old, new=new, history_index=index, now=now)
        result = learner._decide(proposal, now=now)
        if result.decision == stats.ACCEPT:
            learner._write_if_current(proposal, base_sha=doc.sha256, base_version=doc.version)
        else:
            proposal.status = Proposal.Status.REJECTED if result.decision == stats.REJECT else Proposal.Status.WAITING
        proposal.save()
    statuses: dict[str, str] = {Proposal.Status.ACCEPTED: ContextInit.Status.ACCEPTED,
                                Proposal.Status.WAITING: ContextInit.Status.WAITING}
    status = statuses.get(str(proposal.status if proposal else ""), ContextInit.Status.REFUSED)
    _release(init, status=status, finished_at=timezone.now(), error="")
    return ContextInit.objects.get(pk=init.pk)


def _thread_for_prompt(entry: dict) -> dict:
    last = (entry.get("thread") or {}).get("last") or {}
    return {"inbound_from": last.get("sender", ""), "subject": last.get("subject", ""),
            "inbound": last.get("body", ""), "sent": entry.get("sent", "")}
