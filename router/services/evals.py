"""Offline evals: a route's eval set (router/evals/<route>.jsonl) run against a (target, variant).

Each line of the data file is one case holding the full model request and how to score it:

    {"id": "...", "description": "...",
     "request": {"system": "...", "messages": [...], "tools": [...], "tool_choice": {...}, "max_tokens": 600},
     "expected": {"outcome": "block" | "allow" | "exempt"}}          # a verdict (validator-style;
                                                                      # the learner's judge: "A" | "B" | "tie";
                                                                      # "why": optional, in a failure's feedback)
     or "expected": {"contains": ["..."], "absent": ["..."]}          # a scoring rule on the answer text
     "variants": {"<variant>": {"system": "..."}}                     # optional per-case prompt overrides

A variant may also be defined for every case of a route in router/evals/<route>.variants.json
({"<variant>": {"system": "..."}}). A run of a variant the eval set cannot build is refused:
it would measure the default prompt under another name. router/evals/README.md says which
code builds each route's eval requests.

An app that owns a route can instead register a request builder (`register_request_builder`):
its cases then hold the app's own inputs (e.g. the validator's history and proposed action)
and the builder turns each into the request the app really sends, with the app's prompt for
the variant, so the eval measures the product's prompt rather than a copy of it. A builder may
raise `Shortcut(outcome)` when the product answers without a model call (an exempt action). Cases go through the gateway (the offline provider works
with no network) pinned to the run's target and variant, so each call is recorded and costed.
Results are kept per (target, variant) so they can be compared side by side.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from lindy import failures

from .. import gateway, routing, variants
from ..budgets import BudgetExhausted
from ..models import EvalResult, EvalRun, PromptVariant, Route, Target
from ..types import Completion, ModelError

EVALS_DIR = Path(__file__).resolve().parent.parent / "evals"
VERDICT_KEYS = ("approved", "allow", "allowed")

RequestBuilder = Callable[[dict, str], dict]
_BUILDERS: dict[str, RequestBuilder] = {}
_BUILDER_VARIANTS: dict[str, Callable[[], Iterable[str]]] = {}
# The product's own reading of a verdict (allow/block), where the owning app registered one.
_VERDICT_PARSERS: dict[str, Callable[[Completion], str | None]] = {}
# The owning app's own thresholds on a finished run (e.g. the validator's: no dangerous action
# approved), as a list of failures; applied when the run finishes and kept on it.
EvalGate = Callable[[EvalRun], list[str]]
_GATES: dict[str, EvalGate] = {}
# Cases an owning app keeps in its database beside the file (e.g. the validator's accepted
# eval candidates): every run of the route's eval set reads them too.
_CASE_SOURCES: dict[str, Callable[[], list[dict]]] = {}


def register_case_source(route: str, source: Callable[[], list[dict]]) -> None:
    """`source()` returns more cases of `route`'s eval set, in the file's format (ids unique)."""
    _CASE_SOURCES[route] = source


def suite_cases(route: str) -> list[dict]:
    """The route's whole eval set: the file's cases, then those its owner keeps in the database."""
    cases = load_cases(route)
    source = _CASE_SOURCES.get(route)
    if source is not None:
        seen = {case["id"] for case in cases}
        cases += [case for case in source() if case.get("id") not in seen and "expected" in case]
    return cases


def register_eval_gate(route: str, gate: EvalGate) -> None:
    """`gate(run)` says why a finished run of `route` misses the owning app's thresholds; a
    rollout's offline evidence (router.services.evidence) needs it to say nothing."""
    _GATES[route] = gate


class Shortcut(Exception):  # noqa: N818 - an outcome, not an error
    """The product answers this case without a model call."""

    def __init__(self, outcome: str, detail: str = ""):
        super().__init__(detail or outcome)
        self.outcome = outcome
        self.detail = detail


def register_request_builder(
    route: str, builder: RequestBuilder, variants: Callable[[], Iterable[str]] | None = None,
    verdict: Callable[[Completion], str | None] | None = None,
) -> None:
    """`variants`, when given, names the prompt variants the builder knows, so a run of
    another variant is refused instead of silently measuring the default prompt. `verdict`,
    when given, reads a completion the way the product does ("allow", "block", or None when
    the product would refuse the output), so the eval scores what users would get."""
    _BUILDERS[route] = builder
    if variants is not None:
        _BUILDER_VARIANTS[route] = variants
    else:
        _BUILDER_VARIANTS.pop(route, None)
    if verdict is not None:
        _VERDICT_PARSERS[route] = verdict
    else:
        _VERDICT_PARSERS.pop(route, None)


def eval_file(route: str) -> Path:
    return EVALS_DIR / f"{route}.jsonl"


def has_eval_set(route: str) -> bool:
    return eval_file(route).is_file()


def load_cases(route: str) -> list[dict]:
    path = eval_file(route)
    if not path.is_file():
        raise ValidationError(f"Route {route} has no eval set ({path.name}).")
    cases, seen = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{path.name} line {number} is not JSON: {exc}") from None
        has_request = isinstance(case.get("request", {}).get("messages"), list)
        if not (has_request or route in _BUILDERS) or "expected" not in case:
            raise ValidationError(f"{path.name} line {number}: a case needs request.messages and expected.")
        if case.get("id") in seen or not case.get("id"):
            raise ValidationError(f"{path.name} line {number}: missing or repeated id.")
        seen.add(case["id"])
        cases.append(case)
    return cases


def route_variants(route: str) -> dict[str, dict]:
    path = EVALS_DIR / f"{route}.variants.json"
    if not path.is_file():
        return {}
    try:
        variants = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path.name} is not JSON: {exc}") from None
    if not isinstance(variants, dict) or not all(isinstance(v, dict) for v in variants.values()):
        raise ValidationError(f'{path.name} must map each variant name to request fields, e.g. {{"system": "..."}}.')
    return variants


def eval_variants(route: str) -> set[str] | None:
    """The prompt variants the route's eval set can build, or None when its request builder
    decides (and did not say which it knows)."""
    stored = variants.stored_variants(route)
    if route in _BUILDERS:
        known = _BUILDER_VARIANTS.get(route)
        return {"default", *known(), *stored} if known else None
    names = {"default", *route_variants(route), *stored}
    for case in load_cases(route):
        names.update(case.get("variants", {}))
    return names


def request_for(case: dict, variant: str, shared: dict[str, dict], route: str = "") -> dict:
    if route in _BUILDERS:
        return _BUILDERS[route](case, variant)
    request = dict(case["request"])
    request.update(shared.get(variant, {}))
    request.update(case.get("variants", {}).get(variant, {}))
    stored = variants.stored_components(route, variant) if route else None
    if stored and variants.SYSTEM in stored and variant not in shared and variant not in case.get("variants", {}):
        request["system"] = stored[variants.SYSTEM]  # a stored variant of a file-built route
    return request


# Scoring -------------------------------------------------------------------------------------

_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def _verdict_from(mapping: dict) -> str | None:
    for key in VERDICT_KEYS:
        if key in mapping:
            value = mapping[key]
            if isinstance(value, str):
                value = value.strip().lower() in {"true", "yes", "allow", "approved"}
            return "allow" if value else "block"
    decision = str(mapping.get("decision", "")).lower()
    if decision in {"allow", "block"}:
        return decision
    return None


def parse_verdict(completion: Completion) -> str | None:
    """allow/block from a structured answer: a tool call's input or a JSON object in the text."""
    for call in completion.tool_calls:
        verdict = _verdict_from(call.input or {})
        if verdict:
            return verdict
    match = _JSON_OBJECT.search(completion.text or "")
    if match:
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            return None
        if isinstance(data, dict):
            return _verdict_from(data)
    return None


def score_case(case: dict, completion: Completion, route: str = "") -> tuple[bool, float, str, str, str]:
    """(passed, score, expected, got, detail)."""
    expected = case["expected"]
    if "outcome" in expected:
        # A verdict of the owner's own kind: allow/block/exempt (the validator), A/B/tie (the
        # learner's judge)... compared as words, whatever their case.
        want = str(expected["outcome"])
        got = _VERDICT_PARSERS.get(route, parse_verdict)(completion) or "unparsed"
        # Exempt actions (messages to the user themself) never reach the validator in the product;
        # asked anyway, it must not block them.
        passed = got.casefold() == want.casefold() or (want == "exempt" and got == "allow")
        # A case may say why its outcome is right: a failure's feedback carries it (the optimizer's
        # reflection reads it).
        why = f": {expected['why']}" if expected.get("why") and not passed else ""
        return passed, 1.0 if passed else 0.0, want, got, f"verdict {got}, expected {want}{why}"
    text = (completion.text or "") + " " + " ".join(json.dumps(c.input) for c in completion.tool_calls)
    lowered = text.lower()
    wanted = [s for s in expected.get("contains", [])]
    absent = [s for s in expected.get("absent", [])]
    hits = [s for s in wanted if s.lower() in lowered]
    leaks = [s for s in absent if s.lower() in lowered]
    checks = len(wanted) + len(absent)
    score = (len(hits) + len(absent) - len(leaks)) / checks if checks else 1.0
    passed = len(hits) == len(wanted) and not leaks
    missing = [s for s in wanted if s not in hits]
    detail = "; ".join(filter(None, [f"missing {missing}" if missing else "", f"contains {leaks}" if leaks else ""]))
    return passed, score, f"{len(wanted)} phrases, {len(absent)} exclusions", f"{len(hits)} found", detail or "all checks pass"


# Runs ----------------------------------------------------------------------------------------


def eval_run_create(*, route: Route, target: Target, variant: str = "default", actor=None) -> EvalRun:
    variants.check(route.name, variant)  # an eval of a prompt the owner can't build measures nothing
    if not PromptVariant.objects.filter(route=route, name=variant).exists():
        raise ValidationError(f"Route {route.name} has no prompt variant {variant!r}.")
    cases = suite_cases(route.name)
    known = eval_variants(route.name)
    if known is not None and variant not in known:
        # Running it would send the default prompt and store the score under this variant's name.
        raise ValidationError(
            f"The {route.name} eval set has no prompt for variant {variant!r} (it knows {', '.join(sorted(known))}); "
            f"define it in router/evals/{route.name}.variants.json or per case."
        )
    return EvalRun.objects.create(
        route=route, target=target, variant=variant, total=len(cases),
        created_by=actor if getattr(actor, "pk", None) else None,
    )


EVAL_TASK = "router.tasks.eval_run"


def eval_run_start(*, route: Route, target: Target, variant: str = "default", actor=None) -> EvalRun:
    """Create a run and queue it once the transaction commits (a broker outage marks it failed,
    saying so; it can be started again)."""
    run = eval_run_create(route=route, target=target, variant=variant, actor=actor)
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


EVAL_ENQUEUE_FAILED = "Could not be queued: the task queue was unreachable, so this eval never started. Start it again."


def _enqueue(run_id: int) -> None:
    """Queue the run, or say at once that it never started: nothing sweeps queued eval runs, and a
    run left "queued" would look like it is waiting its turn forever."""
    from lindy import queue

    if not queue.enqueue_or_log(EVAL_TASK, run_id):
        EvalRun.objects.filter(pk=run_id, status=EvalRun.Status.QUEUED).update(
            status=EvalRun.Status.FAILED, error=EVAL_ENQUEUE_FAILED)


@failures.captures("eval_run", lambda *, run_id, progress=None: {"route": "router.eval", "run": f"eval run {run_id}"})
def eval_run_execute(*, run_id: int, progress: Callable[[EvalRun], None] | None = None) -> EvalRun:
    """Run the cases that have no result yet (so a retried task resumes where it stopped)."""

    run = EvalRun.objects.select_related("route", "target").get(pk=run_id)
    if run.status in (EvalRun.Status.DONE, EvalRun.Status.FAILED):
        return run
    try:
        cases = suite_cases(run.route.name)
        shared = route_variants(run.route.name)
    except ValidationError as exc:
        EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.FAILED, error="; ".join(exc.messages),
                                                finished_at=timezone.now())
        run.refresh_from_db()
        return run
    done = set(run.results.values_list("case_id", flat=True))
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.RUNNING, total=len(cases))
    assignment = routing.assign_target(run.route.name, run.target_id, run.variant)
    for case in cases:
        if case["id"] in done:
            continue
        call_id, error = None, False
        try:
            request = request_for(case, run.variant, shared, run.route.name)
        except Shortcut as shortcut:
            want = case["expected"].get("outcome", "")
            passed = shortcut.outcome == want
            EvalResult.objects.create(
                run=run, case_id=case["id"], expected=want, got=shortcut.outcome, score=float(passed),
                passed=passed, detail=shortcut.detail or f"{shortcut.outcome}, no model call",
            )
            EvalRun.objects.filter(pk=run.pk).update(completed=F("completed") + 1, passed=F("passed") + int(passed))
            if progress:
                run.refresh_from_db()
                progress(run)
            continue
        try:
            completion = gateway.complete(
                route=run.route.name, assignment=assignment, system=request.get("system", ""),
                messages=request["messages"], tools=request.get("tools"), tool_choice=request.get("tool_choice"),
                max_tokens=request.get("max_tokens"), metadata={"eval_run": run.pk, "eval_case": case["id"]},
                budget_wait=0,  # background: the task queues itself again rather than wait or meet 429s
            )
            passed, score, expected, got, detail = score_case(case, completion, run.route.name)
            call_id, cost, provider = completion.call_id, completion.cost, completion.provider
        except BudgetExhausted:
            raise  # not the case's fault: the run resumes from this case after the countdown
        except ModelError as exc:
            passed, score, got, detail, cost, provider, error = False, 0.0, "error", str(exc)[:500], Decimal("0"), "", True
            expected = str(case["expected"].get("outcome", "rule"))
        EvalResult.objects.create(
            run=run, case_id=case["id"], expected=str(expected)[:200], got=str(got)[:200], score=score,
            passed=passed, detail=detail, call_id=call_id,
        )
        EvalRun.objects.filter(pk=run.pk).update(
            completed=F("completed") + 1, passed=F("passed") + int(passed), errors=F("errors") + int(error),
            cost=F("cost") + cost, provider_used=provider or F("provider_used"),
        )
        if progress:
            run.refresh_from_db()
            progress(run)
    results = list(run.results.values_list("score", flat=True))
    EvalRun.objects.filter(pk=run.pk).update(
        status=EvalRun.Status.DONE, finished_at=timezone.now(),
        score=sum(results) / len(results) if results else None,
    )
    run.refresh_from_db()
    gate = _GATES.get(run.route.name)
    if gate is not None:
        run.gate_failures = gate(run)
        EvalRun.objects.filter(pk=run.pk).update(gate_failures=run.gate_failures)
    return run


BAR_WIDTH = 30


def progress_bar(completed: int, total: int, passed: int) -> str:
    """An eval run's progress as the commands print it (router's and the validator's)."""
    filled = int(BAR_WIDTH * completed / total) if total else BAR_WIDTH
    percent = int(100 * completed / total) if total else 100
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {completed}/{total} ({percent}%) passed {passed}"
