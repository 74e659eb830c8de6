"""Prompt optimization against a route's eval set, with the gepa library's reflective evolution.

Any route whose owner registers it (from its AppConfig.ready(), after its eval set is usable:
a case file, a request builder or a case source in router.services.evals) can be optimized:

    register_optimizable("validator", components=lambda variant: {"system": prompts.system_prompt(variant)})

`components(variant)` returns the texts gepa may evolve, by name; the owner's prompt builders
must read each with `router.variants.pick(options, variant, route=..., component=name)` so that
a candidate being tried (variants.trying) and a stored candidate are both built by the
product's own code. The validator and the drafting app (email.draft, learner.propose,
learner.judge) register theirs.

The eval set is split three ways, by a hash of each case id (so the same case lands in the same
slice in every run, and a held-out case never trains a later run): gepa's training cases (its
reflection minibatches), gepa's validation cases (which candidates it keeps, and which are
stored), and a held-out slice gepa never sees. The run records which case went where
(OptimizationRun.split); a set too small to give each slice MIN_SLICE cases is refused. After
gepa, the parent and each stored candidate are scored on the held-out slice, once, and those
scores are what the rollout gate reads (router.services.evidence.unevaluated_candidate: a
candidate that does worse there than its parent never reaches users). The held-out scoring's
calls are reserved out of the budget before gepa starts.

A run (OptimizationRun) states its budget — model calls, tokens and dollars — before it
starts; every call of the run (the candidates' eval calls and the reflection calls) is counted
against it, and a call that would exceed any of the three is not made: the run stops there.
gepa's state is stored after every generation, so a run cut off by a worker restart resumes
from its last generation. At the end, the Pareto-best candidates scoring at least the parent on
the eval set are stored as prompt variants (PromptVariant.components) with their scores and
their diff from the parent. That is all: a stored variant reaches users only through the
router's normal path — its own offline eval per target, then an evidence-gated rollout.

Offline (no model keys) the reflection is the offline rules' deterministic mutation
(router.offline_policies.reflect), and candidates that only tie the parent are kept (the
offline rules of most routes do not read the prompt), so the whole path runs in tests. The
worked example router.triage (router/triage.py) is a route whose offline rule does read its
prompt: there the loop finds the rule the parent lacks, and the candidate beats the parent on
the held-out slice.

What the loop lends gepa (the run's spend, the adapter that runs and scores a candidate, the
per-generation callbacks, the run's log) is in router.services.candidates.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from lindy import jobs

from .. import gateway, routing, variants
from ..budgets import BudgetExhausted
from ..models import OptimizationRun, PromptVariant, Route, Target
from . import evals
from .candidates import Adapter, BudgetReached, Progress, Spend, candidate_name, log_line, run_log

logger = logging.getLogger(__name__)

OPTIMIZE_TASK = "router.tasks.optimization_run"
# Defaults of a run's budget besides the dollars, and what one run may ask for at most.
DEFAULT_CALLS, DEFAULT_TOKENS = 2_000, 5_000_000
MAX_USD, MAX_CALLS, MAX_TOKENS = Decimal("1000"), 100_000, 500_000_000
MAX_STORED = 5  # Pareto-best candidates stored per run
MINIBATCH = 3
MIN_SLICE = 3  # eval cases each of the three slices needs at least
SHARES = {"val": 0.3, "holdout": 0.3}  # the rest trains


def _stale_seconds() -> float:
    """A run whose heartbeat is this old is taken over by the next delivery and queued again by
    the recovery sweep (settings.ROUTER_OPTIMIZE_STALE_SECONDS)."""
    return settings.ROUTER_OPTIMIZE_STALE_SECONDS


@dataclass(frozen=True)
class Optimizable:
    route: str
    components: Callable[[str], dict[str, str]]


_OPTIMIZABLE: dict[str, Optimizable] = {}


def register_optimizable(route: str, *, components: Callable[[str], dict[str, str]]) -> None:
    """The owner of `route` lets its prompt be optimized: `components(variant)` gives the
    texts gepa evolves ({name: text}); the owner's builders read them through variants.pick."""
    _OPTIMIZABLE[route] = Optimizable(route=route, components=components)


def optimizable(route: str) -> bool:
    return route in _OPTIMIZABLE and evals.has_eval_set(route)


def optimizable_routes() -> list[str]:
    return sorted(r for r in _OPTIMIZABLE if evals.has_eval_set(r))


def split_cases(route: str, cases: list[dict]) -> dict[str, list[str]]:
    """{train, val, holdout: [case ids]}: cases ordered by a hash of (route, id), the first
    SHARES["holdout"] of them held out, the next SHARES["val"] gepa's validation, the rest its
    training. Raises ValidationError when a slice would have fewer than MIN_SLICE cases."""
    ids = [str(case["id"]) for case in cases]
    need = 3 * MIN_SLICE
    if len(ids) < need:
        raise ValidationError(f"Route {route} has {len(ids)} eval cases: too few to split into gepa's training "
                              f"and validation cases and a held-out slice ({need} needed, {MIN_SLICE} per slice).")
    ordered = sorted(ids, key=lambda i: hashlib.sha256(f"{route}\0{i}".encode()).hexdigest())
    holdout = max(MIN_SLICE, round(len(ids) * SHARES["holdout"]))
    val = max(MIN_SLICE, round(len(ids) * SHARES["val"]))
    train = len(ids) - holdout - val
    if train < MIN_SLICE:
        holdout, val = holdout - (MIN_SLICE - train + 1) // 2, val - (MIN_SLICE - train) // 2
    return {"holdout": ordered[:holdout], "val": ordered[holdout:holdout + val],
            "train": ordered[holdout + val:]}


def _slices(cases: list[dict], split: dict[str, list[str]]) -> dict[str, list[dict]]:
    by_id = {str(case["id"]): case for case in cases}
    return {name: [by_id[i] for i in split.get(name, []) if i in by_id] for name in ("train", "val", "holdout")}




# Creating and starting ---------------------------------------------------------------------------


def optimization_run_create(*, route: Route, target: Target, budget_usd: Decimal | float | str,
                            budget_calls: int | None = None, budget_tokens: int | None = None,
                            parent_variant: str | None = None, actor=None) -> OptimizationRun:
    """Validate and record a run (queued). Raises ValidationError (a 4xx) for bad input."""
    if not optimizable(route.name):
        raise ValidationError(f"Route {route.name} cannot be optimized: its owner registered no optimizable "
                              "prompt or it has no eval set.")
    try:
        usd = Decimal(str(budget_usd))
    except ArithmeticError:
        raise ValidationError("The budget in dollars must be a number.") from None
    if not usd.is_finite() or usd <= 0 or usd > MAX_USD:
        raise ValidationError(f"The budget in dollars must be more than 0 and at most {MAX_USD}.")
    if usd != usd.quantize(Decimal("0.0001")):
        # Stored to the hundredth of a cent: a finer budget would be kept as another number (even $0).
        raise ValidationError("The budget in dollars has at most 4 decimal places.")
    calls = DEFAULT_CALLS if budget_calls is None else budget_calls
    tokens = DEFAULT_TOKENS if budget_tokens is None else budget_tokens
    if not (isinstance(calls, int) and 0 < calls <= MAX_CALLS):
        raise ValidationError(f"The call budget must be between 1 and {MAX_CALLS}.")
    if not (isinstance(tokens, int) and 0 < tokens <= MAX_TOKENS):
        raise ValidationError(f"The token budget must be between 1 and {MAX_TOKENS}.")
    parent = parent_variant or route.baseline_variant
    variants.check(route.name, parent)
    if OptimizationRun.objects.filter(route=route, status__in=OptimizationRun.ACTIVE).exists():
        raise ValidationError(f"Route {route.name} already has an optimization running.")
    cases = evals.suite_cases(route.name)
    split = split_cases(route.name, cases)
    reserve = _holdout_reserve(split)
    if calls <= reserve:
        raise ValidationError(f"The call budget must exceed the {reserve} calls reserved for scoring the parent and "
                              f"up to {MAX_STORED} candidates on the {len(split['holdout'])} held-out cases.")
    try:
        with transaction.atomic():
            return OptimizationRun.objects.create(
                route=route, target=target, parent_variant=parent, budget_usd=usd,
                budget_calls=calls, budget_tokens=tokens, case_count=len(cases), split=split,
                created_by=actor if getattr(actor, "pk", None) else None,
                log=[log_line(f"Queued: {len(cases)} eval cases, parent {parent!r} on {target.name}; budget "
                           f"${usd}, {calls} calls, {tokens} tokens."),
                     log_line(f"Split: {len(split['train'])} cases train gepa, {len(split['val'])} choose its candidates, "
                           f"{len(split['holdout'])} are held out for the rollout gate ({reserve} calls reserved "
                           "to score them).")],
            )
    except IntegrityError:
        raise ValidationError(f"Route {route.name} already has an optimization running.") from None


def _holdout_reserve(split: dict[str, list[str]]) -> int:
    """Calls kept back from gepa to score the parent and every stored candidate on the held-out slice."""
    return len(split.get("holdout", [])) * (1 + MAX_STORED)


def optimization_run_start(**kwargs) -> OptimizationRun:
    """Create a run and queue it once the transaction commits."""
    from lindy import queue

    run = optimization_run_create(**kwargs)
    transaction.on_commit(lambda: queue.enqueue_or_log(OPTIMIZE_TASK, run.pk))
    return run


# The run ---------------------------------------------------------------------------------------------


def _claim(run_id: int, task_id: str) -> OptimizationRun | None:
    """Take the run for this delivery, unless another live worker holds it, it is finished or it
    used up its attempts. The same message redelivered (its worker died) takes over at once;
    another delivery waits until the holder has been quiet for the stale window."""
    return jobs.claim(OptimizationRun.objects.select_related("route", "target"), run_id, task_id=task_id,
                      waiting=Q(status=OptimizationRun.Status.QUEUED),
                      running=Q(status=OptimizationRun.Status.RUNNING), stale_seconds=_stale_seconds(),
                      max_attempts=settings.ROUTER_OPTIMIZE_MAX_ATTEMPTS, status=OptimizationRun.Status.RUNNING)


def _finish(run: OptimizationRun, *, status: str, stop_reason: str = "", error: str = "") -> OptimizationRun:
    OptimizationRun.objects.filter(pk=run.pk).update(status=status, stop_reason=stop_reason, error=error,
                                                     finished_at=timezone.now())
    run_log(run.pk, f"{'Failed' if error else 'Stopped'}: {error or stop_reason}")
    run.refresh_from_db()
    return run


def optimization_run_execute(*, run_id: int, task_id: str = "") -> OptimizationRun | None:
    """Run (or resume) an optimization until its budget is spent. Idempotent: a finished run is
    left alone; a run cut off by a restart resumes from its last stored generation."""
    run = _claim(run_id, task_id)
    if run is None:
        return OptimizationRun.objects.filter(pk=run_id).first()
    # A thread beats while gepa works (one model call may block for minutes): a run whose beats stop
    # is taken over within the stale window and one sweep period (under a minute).
    with jobs.beating(run, interval=settings.ROUTER_OPTIMIZE_HEARTBEAT_SECONDS):
        return _execute(run)


def _execute(run: OptimizationRun) -> OptimizationRun:
    import gepa
    from gepa.strategies.eval_policy import FullEvaluationPolicy

    owner = _OPTIMIZABLE.get(run.route.name)
    if owner is None:
        return _finish(run, status=OptimizationRun.Status.FAILED,
                       error=f"Route {run.route.name} is not optimizable in this deployment.")
    try:
        split = run.split or split_cases(run.route.name, evals.suite_cases(run.route.name))
        slices = _slices(evals.suite_cases(run.route.name), split)
        if min(len(cases) for cases in slices.values()) < 1:
            raise ValidationError("The eval cases this run split no longer exist: start a new run.")
        seed = {k: str(v) for k, v in owner.components(run.parent_variant).items()}
    except (ValidationError, variants.UnknownVariant) as exc:
        return _finish(run, status=OptimizationRun.Status.FAILED, error="; ".join(getattr(exc, "messages", [str(exc)])))
    spend = Spend(run, reserve_calls=_holdout_reserve(split))
    adapter = Adapter(run, spend, seed)
    resuming = bool(run.state)
    run_log(run.pk, f"Resumed at generation {run.generation} (attempt {run.attempts})." if resuming
         else f"Started: parent {run.parent_variant!r}, components {', '.join(sorted(seed))}.")

    class Policy(FullEvaluationPolicy):
        def get_seed_eval_batch(self, loader):
            return [] if resuming else list(loader.all_ids())  # resuming: the stored state has it

    offline = gateway.offline_mode()
    stop_reason = ""
    with tempfile.TemporaryDirectory(prefix=f"lindy-opt-{run.pk}-") as run_dir:
        if resuming:
            with open(os.path.join(run_dir, "gepa_state.bin"), "wb") as handle:
                handle.write(bytes(run.state or b""))
        try:
            gepa.optimize(
                seed_candidate=seed, trainset=slices["train"], valset=slices["val"],
                adapter=adapter,  # type: ignore[arg-type]
                custom_candidate_proposer=adapter.propose,
                reflection_minibatch_size=min(MINIBATCH, len(slices["train"])),
                stop_callbacks=[lambda _state: spend.exhausted()], run_dir=run_dir,
                callbacks=[Progress(run, run_dir)],  # type: ignore[list-item]
                val_evaluation_policy=Policy(),
                # Offline, the rules of most routes ignore the prompt: ties are kept so the path runs.
                acceptance_criterion="improvement_or_equal" if offline else "strict_improvement",
                skip_perfect_score=not offline, seed=0, raise_on_exception=True,
                logger=_Quiet(), display_progress_bar=False,
            )
            stop_reason = "The budget is spent." if spend.exhausted() else "gepa stopped."
        except BudgetReached as exc:
            stop_reason = f"Stopped at the budget: {exc}."
        except BudgetExhausted:
            raise  # the provider's rate budget: the task queues itself again and resumes
        except Exception as exc:
            logger.exception("optimization %s failed", run.pk)
            return _finish(run, status=OptimizationRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        state = _final_state(run_dir)
    if state is None:
        return _finish(run, status=OptimizationRun.Status.DONE,
                       stop_reason=stop_reason + " The budget did not cover one evaluation of the parent; nothing stored.")
    stored = store_candidates(run=run, state=state, seed=seed)
    held = score_holdout(run=run, adapter=adapter, spend=spend, seed=seed, stored=stored, cases=slices["holdout"])
    run = _finish(run, status=OptimizationRun.Status.DONE,
                  stop_reason=f"{stop_reason} {len(stored)} candidate(s) stored as prompt variants. {held}")
    return run


def score_holdout(*, run: OptimizationRun, adapter: Adapter, spend: Spend, seed: dict[str, str],
                  stored: list[PromptVariant], cases: list[dict]) -> str:
    """Score the parent and each stored candidate on the held-out slice (gepa never saw it), with
    the calls reserved for it; the scores go on each candidate, for the rollout gate. Returns a
    sentence for the run's stop reason."""
    if not stored or not cases:
        return ""
    spend.reserve_calls = 0

    def mean(candidate: dict[str, str]) -> float:
        name = adapter._name(candidate)
        return sum(adapter._one(case, candidate, name)["score"] for case in cases) / len(cases)

    try:
        parent = mean(seed)
        lines = []
        for variant in stored:
            score = mean({k: str(v) for k, v in variant.components.items()})
            PromptVariant.objects.filter(pk=variant.pk).update(holdout_score=score, parent_holdout_score=parent)
            variant.holdout_score, variant.parent_holdout_score = score, parent
            lines.append(f"{variant.name} {score:.3f}")
    except BudgetReached as exc:
        run_log(run.pk, f"Held-out slice not fully scored: {exc}. Candidates without a held-out score cannot roll out.")
        return "The budget ran out before the held-out slice was scored."
    summary = (f"On the {len(cases)} held-out cases gepa never saw: parent {parent:.3f}, " + ", ".join(lines) + ".")
    run_log(run.pk, summary)
    return summary


class _Quiet:
    def log(self, message: str) -> None:
        logger.debug("gepa: %s", message)


def _final_state(run_dir: str):
    path = os.path.join(run_dir, "gepa_state.bin")
    if not os.path.exists(path):
        return None
    from gepa.core.state import GEPAState

    return GEPAState.load(run_dir)


def _diff(parent: dict[str, str], child: dict[str, str]) -> str:
    out: list[str] = []
    for component in sorted(child):
        out += difflib.unified_diff(parent.get(component, "").splitlines(), child[component].splitlines(),
                                    fromfile=f"parent/{component}", tofile=f"candidate/{component}", lineterm="")
    return "\n".join(out)


def store_candidates(*, run: OptimizationRun, state, seed: dict[str, str]) -> list[PromptVariant]:
    """The Pareto-best candidates (best on at least one case) scoring at least the parent on
    the whole eval set become stored prompt variants. Idempotent per (run, candidate)."""
    from gepa.core.result import GEPAResult

    result = GEPAResult.from_state(state)
    scores = result.val_aggregate_scores
    parent_score = scores[0]
    front = set().union(*result.per_val_instance_best_candidates.values()) if result.per_val_instance_best_candidates else set()
    chosen = sorted((i for i in front if i and scores[i] >= parent_score and result.candidates[i] != seed),
                    key=lambda i: (-scores[i], i))[:MAX_STORED]
    stored = []
    for index in chosen:
        candidate = {k: str(v) for k, v in result.candidates[index].items()}
        name = candidate_name(run, candidate)
        parent_index = (result.parents[index] or [0])[0] or 0
        parent_texts = {k: str(v) for k, v in result.candidates[parent_index].items()}
        variant, _ = PromptVariant.objects.get_or_create(
            route=run.route, name=name,
            defaults={
                "description": f"Optimizer run {run.pk}, candidate {index}: {scores[index]:.3f} on "
                               f"{len(result.val_subscores[index])} cases (parent {run.parent_variant!r}: {parent_score:.3f}).",
                "components": candidate, "parent": run.parent_variant, "eval_score": scores[index],
                "parent_score": parent_score, "diff": _diff(seed if parent_index == 0 else parent_texts, candidate),
                "optimization": run,
            },
        )
        stored.append(variant)
    routing.invalidate()
    if stored:
        run_log(run.pk, "Stored: " + ", ".join(f"{v.name} ({v.eval_score:.3f})" for v in stored))
    return stored


def optimization_recover(*, now=None) -> list[int]:
    """Beat: queue again the runs whose worker went quiet (a whole worker killed keeps its
    message unacknowledged for the broker's visibility timeout), and queued runs no worker picked
    up. Each once (lindy.jobs.recover): a run it queued is not queued again by the next sweep, and a
    run whose workers died ROUTER_OPTIMIZE_MAX_ATTEMPTS times is marked failed instead."""
    from lindy import queue

    now = now or timezone.now()
    cap = settings.ROUTER_OPTIMIZE_MAX_ATTEMPTS
    cutoff = now - timedelta(seconds=_stale_seconds())
    return jobs.recover(
        OptimizationRun, running=Q(status=OptimizationRun.Status.RUNNING),
        also=Q(status=OptimizationRun.Status.QUEUED, created_at__lt=cutoff), stale_seconds=_stale_seconds(),
        max_attempts=cap, now=now, enqueue=lambda run: queue.enqueue_or_log(OPTIMIZE_TASK, run.pk),
        give_up={"status": OptimizationRun.Status.FAILED, "finished_at": now,
                 "error": f"Its worker died in each of {cap} attempts."})


__all__ = [
    "BudgetReached", "optimizable", "optimizable_routes", "optimization_recover", "optimization_run_create",
    "optimization_run_execute", "optimization_run_start", "register_optimizable", "score_holdout", "split_cases",
    "store_candidates",
]
