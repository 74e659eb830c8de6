"""What a prompt-optimization run lends gepa (router.services.optimize runs the loop): its spend
against the budget stated before it started (`Spend`, kept in the run's row so it survives a
restart, and `BudgetReached` when the next call would not fit), each candidate's name
(`candidate_name`), the adapter that runs a candidate through the owner's own request builder and
the router's gateway and scores it like an offline eval (`Adapter`, which also makes gepa's
reflection calls), the callbacks that keep the run's row up to date after each generation
(`Progress`) and the run's log (`run_log`, `log_line`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

from django.db.models import F
from django.utils import timezone

from .. import gateway, prompts, routing, variants
from ..budgets import BudgetExhausted
from ..models import OptimizationRun
from ..offline import estimate_tokens
from ..types import ModelError
from . import evals

logger = logging.getLogger("router.services.optimize")

REFLECT_ROUTE = prompts.REFLECT_ROUTE
MAX_LOG = 200


class BudgetReached(Exception):  # noqa: N818 - a stop, not an error
    """The next call would exceed the run's budget."""


def log_line(text: str) -> dict:
    return {"at": timezone.now().isoformat(timespec="seconds"), "text": text}


def run_log(run_id: int, text: str, **fields) -> None:
    run = OptimizationRun.objects.filter(pk=run_id).values_list("log", flat=True).first() or []
    OptimizationRun.objects.filter(pk=run_id).update(log=[*run, log_line(text)][-MAX_LOG:], **fields)


class Spend:
    """The run's spend, kept in its row (so it survives a restart) and checked before each call."""

    def __init__(self, run: OptimizationRun, reserve_calls: int = 0):
        self.run = run
        self.target = routing.TargetInfo.from_model(run.target)
        self.reserve_calls = reserve_calls  # kept back for the held-out scoring, released after gepa

    def _reload(self) -> None:
        self.run.refresh_from_db(fields=["spent_usd", "spent_calls", "spent_tokens"])

    def check(self, *, request_text: str, max_tokens: int, target=None) -> None:
        """Raise BudgetReached unless the call, at its largest, fits all three budgets."""
        self._reload()
        run, info = self.run, target or self.target
        tokens = estimate_tokens(request_text) + max_tokens
        worst = (info.input_price * estimate_tokens(request_text) + info.output_price * max_tokens) / Decimal(1_000_000)
        if gateway.offline_mode() and info.provider != "offline":
            worst = Decimal("0")  # the offline rules stand in: nothing is billed
        if run.spent_calls + 1 > run.budget_calls - self.reserve_calls:
            raise BudgetReached(f"the call budget ({run.budget_calls}, {self.reserve_calls} of it reserved for the "
                                "held-out slice) is spent" if self.reserve_calls else
                                f"the call budget ({run.budget_calls}) is spent")
        if run.spent_tokens + tokens > run.budget_tokens:
            raise BudgetReached(f"the next call could exceed the token budget ({run.budget_tokens})")
        if run.spent_usd + worst > run.budget_usd:
            raise BudgetReached(f"the next call could exceed the budget of ${run.budget_usd}")

    def add(self, *, tokens: int, cost: Decimal, provider: str = "") -> None:
        OptimizationRun.objects.filter(pk=self.run.pk).update(
            spent_calls=F("spent_calls") + 1, spent_tokens=F("spent_tokens") + tokens,
            spent_usd=F("spent_usd") + cost, heartbeat_at=timezone.now(),
            **({"provider_used": provider} if provider else {}),
        )

    def exhausted(self) -> bool:
        self._reload()
        run = self.run
        return (run.spent_calls >= run.budget_calls - self.reserve_calls or run.spent_tokens >= run.budget_tokens
                or run.spent_usd >= run.budget_usd)


def candidate_name(run: OptimizationRun, candidate: Mapping[str, str]) -> str:
    digest = hashlib.sha256(json.dumps(dict(candidate), sort_keys=True).encode()).hexdigest()[:8]
    return f"opt{run.pk}-{digest}"


class Adapter:
    """gepa's adapter: a candidate's texts run through the owner's own request builder (with the
    candidate lent to variants.pick) and the router's gateway, scored like an offline eval."""

    propose_new_texts = None

    def __init__(self, run: OptimizationRun, spend: Spend, seed: dict[str, str]):
        self.run, self.spend, self.seed = run, spend, seed
        self.route = run.route.name
        self.shared = evals.route_variants(self.route)
        self.assignment = routing.assign_target(self.route, run.target_id, run.parent_variant)

    def _name(self, candidate: Mapping[str, str]) -> str:
        return self.run.parent_variant if dict(candidate) == self.seed else candidate_name(self.run, candidate)

    def _one(self, case: dict, candidate: Mapping[str, str], name: str) -> dict:
        want = str(case["expected"].get("outcome", "rule"))
        with variants.trying(self.route, name, candidate):
            try:
                request = evals.request_for(case, name, self.shared, self.route)
            except evals.Shortcut as shortcut:
                passed = shortcut.outcome == case["expected"].get("outcome") or (
                    case["expected"].get("outcome") == "exempt" and shortcut.outcome == "allow")
                return {"case": case["id"], "score": float(passed), "expected": want, "got": shortcut.outcome,
                        "feedback": shortcut.detail or "answered without a model call"}
        if self.route not in evals._BUILDERS and variants.SYSTEM in candidate:
            request["system"] = candidate[variants.SYSTEM]  # a file-built route: the case holds the request
        text = json.dumps([request.get("system", ""), request["messages"], request.get("tools")], default=str)
        max_tokens = request.get("max_tokens") or self.assignment.max_tokens
        self.spend.check(request_text=text, max_tokens=max_tokens)
        assignment = replace(self.assignment, prompt_variant=name)
        try:
            completion = gateway.complete(
                route=self.route, assignment=assignment, system=request.get("system", ""),
                messages=request["messages"], tools=request.get("tools"), tool_choice=request.get("tool_choice"),
                max_tokens=max_tokens, budget_wait=0,
                metadata={"optimization_run": self.run.pk, "eval_case": case["id"]},
            )
        except BudgetExhausted:
            raise
        except ModelError as exc:
            self.spend.add(tokens=0, cost=Decimal("0"))
            return {"case": case["id"], "score": 0.0, "expected": want, "got": "error", "feedback": str(exc)[:300]}
        usage = completion.usage
        self.spend.add(tokens=usage.input_tokens + usage.output_tokens + usage.cache_read_tokens
                       + usage.cache_write_tokens, cost=completion.cost, provider=completion.provider)
        passed, score, expected, got, detail = evals.score_case(case, completion, self.route)
        return {"case": case["id"], "score": float(score), "expected": str(expected), "got": str(got),
                "feedback": detail}

    def evaluate(self, batch: list[dict], candidate: dict[str, str], capture_traces: bool = False):
        from gepa.core.adapter import EvaluationBatch

        name = self._name(candidate)
        outputs = [self._one(case, candidate, name) for case in batch]
        traces = [{"input": case.get("description") or case["id"], **out} for case, out in zip(batch, outputs, strict=True)]
        return EvaluationBatch(outputs=outputs, scores=[o["score"] for o in outputs],
                               trajectories=traces if capture_traces else None)

    def make_reflective_dataset(self, candidate, eval_batch, components_to_update) -> dict[str, list[dict]]:
        rows = [{"input": t["input"], "got": t["got"], "expected": t["expected"], "score": t["score"],
                 "feedback": t["feedback"]} for t in eval_batch.trajectories or []]
        return {component: rows for component in components_to_update}

    def propose(self, candidate: dict[str, str], reflective_dataset, components_to_update: list[str]) -> dict[str, str]:
        """The reflection: one call per component on the router's reflection route."""
        new = {}
        for component in components_to_update:
            examples = list(reflective_dataset.get(component, []))[:20]
            messages = prompts.reflect_messages(component=component, text=candidate[component], examples=examples)
            assignment = gateway.assign(REFLECT_ROUTE)
            self.spend.check(request_text=json.dumps([prompts.reflect_system(), messages]),
                             max_tokens=assignment.max_tokens, target=assignment.target)
            try:
                completion = gateway.complete(
                    route=REFLECT_ROUTE, assignment=assignment, system=prompts.reflect_system(assignment.prompt_variant),
                    messages=messages, tools=[prompts.PROPOSE_TOOL],
                    tool_choice={"type": "tool", "name": prompts.PROPOSE_TOOL["name"]}, budget_wait=0,
                    metadata={"optimization_run": self.run.pk},
                )
            except BudgetExhausted:
                raise
            except ModelError as exc:
                self.spend.add(tokens=0, cost=Decimal("0"))
                logger.warning("optimization %s: reflection failed: %s", self.run.pk, exc)
                new[component] = candidate[component]
                continue
            usage = completion.usage
            self.spend.add(tokens=usage.input_tokens + usage.output_tokens, cost=completion.cost)
            text = next((str(c.input.get("text") or "") for c in completion.tool_calls
                         if c.name == prompts.PROPOSE_TOOL["name"]), "")
            limit = max(4 * len(candidate[component]), 2000)
            new[component] = text.strip()[:limit] if text.strip() else candidate[component]
        return new


class Progress:
    """gepa callbacks: after each generation, its state goes into the run's row."""

    def __init__(self, run: OptimizationRun, run_dir: str):
        self.run, self.run_dir = run, run_dir

    def on_state_saved(self, event) -> None:
        path = os.path.join(self.run_dir, "gepa_state.bin")
        with open(path, "rb") as handle:
            blob = handle.read()
        OptimizationRun.objects.filter(pk=self.run.pk).update(
            state=blob, generation=event["iteration"], heartbeat_at=timezone.now())

    def on_valset_evaluated(self, event) -> None:
        score = float(event["average_score"])
        fields: dict[str, Any] = {"candidates_seen": max(event["candidate_idx"] + 1, 1)}
        if event["candidate_idx"] == 0:
            fields["parent_score"] = score
        current = OptimizationRun.objects.filter(pk=self.run.pk).values_list("best_score", flat=True).first()
        if current is None or score > current:
            fields["best_score"] = score
        OptimizationRun.objects.filter(pk=self.run.pk).update(**fields)
        if event["candidate_idx"]:
            run_log(self.run.pk, f"Generation {event['iteration']}: candidate {event['candidate_idx']} scored "
                              f"{score:.3f} on {event['num_examples_evaluated']} cases.")
