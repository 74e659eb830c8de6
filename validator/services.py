"""Every write of the validator: checking an action, and resolving what was blocked."""

from __future__ import annotations

import logging
from dataclasses import replace

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from lindy import failures, outages, queue
from lindy import services as lindy_services
from lindy import tool_registry as registry
from lindy.models import AgentTask, TaskEvent
from memory import context as memory_context
from router import gateway
from router.types import ModelError

from . import arguments as arguments_mod
from . import dataflow, prompts, runner
from . import evidence as evidence_mod
from .models import Decision
from .verdict import MalformedVerdict, parse_completion

logger = logging.getLogger(__name__)

ROUTE = "validator"
MAX_STORED_HISTORY = 200
# Starts the user's instruction when they send a suggestion back to the task.
SUGGESTION_PREFIX = "Follow the validator's suggestion"


class QueueUnavailable(Exception):
    """The task queue is unreachable, so work that continues in the background can't start now."""


class AlreadyResolved(Exception):
    """The decision is not (or no longer) waiting for the user."""


def task_history(task: AgentTask) -> list[dict]:
    return [
        {"id": e.pk, "seq": e.seq, "actor": e.actor, "name": e.name, "content": e.content}
        for e in task.events.order_by("seq").only("seq", "actor", "name", "content")
    ]


def _memories(user) -> list:
    try:
        return list(memory_context.context_for(user).documents)
    except Exception:
        # Missing memories make the validator stricter, never looser: log and go on without them.
        logger.exception("memory context unavailable for the validator")
        return []


def agent_side_tools(user) -> list[dict]:
    """The validator's tools the agent declares in its own tool list (validator V2): the
    tool-search loader and record_verdict with `defer_loading`, built for the prompt variant the
    router serves this user on the validator route, so the validation turn can send the agent's
    exact tool list. The agent appends them after its own tools."""
    variant = gateway.assign(ROUTE, user).prompt_variant
    return prompts.agent_side_tools(variant, quality=settings.VALIDATOR_QUALITY)


def _action(tool: str, arguments: dict, effect: str) -> dict:
    return {"tool": tool, "effect": effect or registry.get(tool).effect, "arguments": arguments,
            "description": registry.describe(tool, arguments)}


def validation_request(
    *, tool: str, arguments: dict, justification: str, evidence: dict, history: list[dict], documents: list,
    variant: str = "default", effect: str = "", quality: bool = False,
) -> dict:
    """The validator's model request (system, messages, tools, tool_choice, max_tokens) for one
    action: what `check` sends, and what the offline eval of the `validator` route replays."""
    payload = prompts.request_payload(
        action=_action(tool, arguments, effect),
        justification=justification, evidence=evidence, history=history,
        memories=[{"label": d.label, "path": d.path, "content": d.content,
                   "lines": [{"text": line.text, "author_kind": line.author_kind, "author": line.author_label}
                             for line in d.lines]}
                  for d in documents],
    )
    return {
        "system": prompts.system_prompt(variant),
        "messages": [{"role": "user", "content": prompts.user_message(payload, variant, quality=quality)}],
        "tools": [prompts.verdict_tool(quality=quality)],
        "tool_choice": {"type": "tool", "name": prompts.VERDICT_TOOL},
        "max_tokens": 1024,
    }


def shared_prefix_request(
    *, agent_request: dict, tool: str, arguments: dict, justification: str, evidence: dict, effect: str = "",
) -> dict:
    """The V2 validation request: the agent's last request (tools, system, messages and its cache
    breakpoints, and its tool_choice) unchanged, then the tool search that loads the deferred
    record_verdict and the validation instruction with the proposed action.

    The tool_choice is the agent's own (`auto`), not one forcing record_verdict: the Messages API
    drops the cached messages when tool_choice changes, so a forced choice would read only the
    tools and system from the cache. The last user turn tells the model to call record_verdict,
    and verdict.parse_completion refuses anything else (another tool, or no verdict) and blocks."""
    agent_messages = list(agent_request["messages"])
    payload = prompts.v2_payload(action=_action(tool, arguments, effect), justification=justification,
                                 evidence=evidence)
    messages = prompts.v2_messages(agent_messages, payload)
    breakpoints = {i % len(agent_messages) for i in agent_request.get("cache_messages") or ()}
    return {
        "system": agent_request["system"],
        "tools": agent_request["tools"],
        "messages": messages,
        "tool_choice": agent_request.get("tool_choice"),
        "max_tokens": 1024,
        # The agent's breakpoints where it put them, and one at the end for the next validation.
        "cache_messages": tuple(sorted(breakpoints | {len(messages) - 1})),
    }


def prefix_share(agent_request: dict, request: dict, assignment) -> float:
    """Share of the validation request's prompt that the provider's cache would serve from what the
    agent's last request wrote: both bodies as sent (model, tool_choice, breakpoints, images), under
    the documented invalidation rules (router.prompt_cache). A different model or tool_choice
    reads no cached messages, and this says so."""
    agent = gateway.request_body(
        model=agent_request.get("model") or "", system=agent_request["system"], tools=agent_request["tools"],
        messages=agent_request["messages"], tool_choice=agent_request.get("tool_choice"),
        cache_messages=tuple(agent_request.get("cache_messages") or ()),
        accepts_images=agent_request.get("accepts_images", True),
    )
    mine = gateway.request_body(
        model=assignment.target.model, system=request["system"], tools=request["tools"],
        messages=request["messages"], tool_choice=request.get("tool_choice"),
        cache_messages=tuple(request.get("cache_messages") or ()), accepts_images=assignment.target.accepts_images,
    )
    return gateway.cached_prefix_share(agent, mine)


# tool_choice values under which the validation turn can still call record_verdict.
RIDEABLE_TOOL_CHOICES = (None, "auto", "any")


def _shared_prefix_refusal(agent_request: dict | None, assignment) -> str:
    """Why the validation cannot ride the agent's prefix ("" when it can)."""
    if not agent_request:
        return "No agent request was handed over (a check through the API, or outside the agent loop)."
    provider = gateway.serving_provider(assignment)
    if not gateway.supports_tool_search(assignment):
        return (f"The {provider} provider has no tool search (defer_loading, tool_reference): the validator "
                "made its own separate call.")
    if not agent_request.get("messages"):
        return "The agent's request had no messages."
    variant, tool = prompts.deferred_variant(agent_request.get("tools") or [])
    if tool is None:
        return "The agent's tool list lacks the deferred validator tool."
    if variant is None:
        return "The agent's deferred validator tool is not one this validator builds."
    # The cache is per model: on another model the shared prefix would be read from nowhere.
    agent_model = agent_request.get("model")
    if not agent_model:
        return "The agent's request did not say which model it was sent to, so its cache cannot be counted on."
    if agent_model != assignment.target.model:
        return (f"The validator route is served by {assignment.target.model} and the agent's request went to "
                f"{agent_model}: a model never reads another model's cache, so the validator made its own call.")
    choice = (agent_request.get("tool_choice") or {}).get("type")
    if choice not in RIDEABLE_TOOL_CHOICES:
        return (f"The agent's tool_choice ({choice}) would not let the validation turn call record_verdict, and "
                "any other tool_choice drops the cached messages.")
    return ""


def checked_evidence(tool: str, arguments: dict, justification: str, history: list[dict], documents,
                     own_address: str = "") -> dict:
    """The code's findings the validator reads: each quote (found? whole clause? negated? by the
    user?) and each argument against the user's words."""
    found = evidence_mod.check(justification, history, documents, tool).to_dict()
    found["arguments"] = arguments_mod.check(tool, arguments, history, documents, own_address).to_dict()
    found["dataflow"] = dataflow.trace(tool, arguments, history, documents, own_address).to_dict()
    return found


def argument_block_reason(evidence: dict) -> str:
    """The hard block's reasoning when an argument does not match the user's words, or a value the
    action lets leave only came from third-party content, else ""."""
    checked = evidence.get("arguments") or {}
    flow = evidence.get("dataflow") or {}
    if checked.get("ok", True) and flow.get("ok", True):
        return ""
    if not checked.get("ok", True):
        reason = ("Blocked before any model was asked: the arguments of the action do not match what the user "
                  "wrote. " + checked["reasoning"] + ".")
    else:
        reason = ("Blocked before any model was asked: the action would send a value that only third-party "
                  "content wrote. " + flow["reasoning"] + ".")
    not_theirs = [q for q in evidence.get("quotes") or [] if not q.get("by_user")]
    if not_theirs:
        reason += " Nor are these quotes the user's words: " + "; ".join(
            f"“{q['quote']}” ({_quote_status(q)})" for q in not_theirs) + "."
    return reason


def _quote_status(quote: dict) -> str:
    if not quote.get("found"):
        return "not found"
    fields = set(evidence_mod.Source.__dataclass_fields__)
    return " | ".join(evidence_mod.Source(**{k: v for k, v in s.items() if k in fields}).describe()
                      for s in quote["sources"])


@failures.captures("validator_call", lambda **kw: {
    "route": "validator", "task_id": getattr(kw.get("task"), "pk", None), **failures.ids_of(user=kw.get("user"),
                                                                                              team=kw.get("team"))})
def check(
    *, user, team, tool: str, arguments: dict, justification: str = "", task: AgentTask | None = None,
    history: list[dict] | None = None, tool_call_id: str = "", agent_request: dict | None = None,
) -> Decision:
    """Validate one action for `user` and record the decision. Raises registry.UnknownTool.

    Exempt tools are recorded as exempt without a model call. A validated tool without a
    justification is blocked without a model call. A model error or a malformed verdict
    blocks (fail closed) and is marked as a validator failure.

    `agent_request`: the agent's last request as it sent it ({"system", "tools", "messages",
    "cache_messages", "tool_choice", "model", "accepts_images"}). Where the serving provider has
    tool search (Anthropic) and serves the validator the agent's model, the validation sends
    exactly that, with the same tool_choice, plus the validation turn at the end, so it reads the
    agent's cached prefix (V2); elsewhere, or without it, it makes its own separate call,
    recorded as such."""
    spec = registry.get(tool)
    effect = registry.effect_for(spec, arguments, user.email)
    if task is not None:
        history = task_history(task)
    history = history or []
    decision = Decision(
        team=team, user=user, task=task, tool=tool, effect=effect, arguments=arguments,
        justification=justification or "", tool_call_id=tool_call_id,
        history=[] if task is not None else history[-MAX_STORED_HISTORY:],
        event_seq=history[-1]["seq"] if task is not None and history else None,
    )
    if registry.is_exempt(effect):
        decision.approved = True
        decision.status = Decision.Status.EXEMPT
        decision.reasoning = f"Exempt: {registry.EFFECT_LABELS[effect].lower()}; not validated."
        decision.save()
        return decision

    documents = _memories(user)
    decision.evidence = checked_evidence(tool, arguments, justification, history, documents, user.email)

    if not (justification or "").strip():
        _block(decision, "The action has no justification. Every action that reaches a third party, deletes "
               "something or moves money must say why the user authorized it.", "high",
               "Ask the user whether they want this done, quoting what they said.")
        decision.save()
        return decision
    argument_block = argument_block_reason(decision.evidence)
    if argument_block:
        # Deterministic and final: no model is asked, so no model can be talked into it.
        _block(decision, argument_block, "high", decision.evidence["arguments"].get("suggestion")
               or f"Ask the user by text message to confirm exactly what they want: {decision.description}.")
        decision.save()
        return decision

    # The prompt is built for the variant the router serves this user (prompt rollouts).
    assignment = gateway.assign(ROUTE, user)
    refusal = _shared_prefix_refusal(agent_request, assignment)
    if not refusal:
        assert agent_request is not None
        variant, _ = prompts.deferred_variant(agent_request["tools"])
        assert variant is not None  # _shared_prefix_refusal checked it
        # The agent's list was built for the variant the router served when its request was made:
        # that is the text this validation reads, so it is the variant it records.
        assignment = replace(assignment, prompt_variant=variant)
        request = shared_prefix_request(
            agent_request=agent_request, tool=tool, arguments=arguments, justification=justification,
            evidence=decision.evidence, effect=effect,
        )
        decision.validation_mode = "shared_prefix"
        decision.prefix_share = prefix_share(agent_request, request, assignment)
    else:
        request = validation_request(
            tool=tool, arguments=arguments, justification=justification, evidence=decision.evidence,
            history=history, documents=documents, variant=assignment.prompt_variant, effect=effect,
            quality=settings.VALIDATOR_QUALITY,
        )
        decision.validation_mode = "separate"
        decision.mode_note = refusal[:300]
    decision.router_target_id = assignment.target.id
    try:
        completion = gateway.complete(route=ROUTE, user=user, team=team, assignment=assignment, **request)
    except ModelError as exc:
        _fail(decision, f"The validator model call failed: {exc}")
        decision.save()
        return decision
    decision.model_call_id = completion.call_id
    decision.provider = completion.provider
    decision.model = completion.model
    decision.prompt_variant = completion.prompt_variant
    decision.latency_ms = completion.latency_ms
    usage = completion.usage
    decision.input_tokens = usage.input_tokens
    decision.output_tokens = usage.output_tokens
    decision.cache_read_tokens = usage.cache_read_tokens
    decision.cache_write_tokens = usage.cache_write_tokens
    decision.prompt_tokens = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    decision.cost = completion.cost
    try:
        verdict = parse_completion(completion)
    except MalformedVerdict as exc:
        _fail(decision, f"The validator's output was malformed: {exc}")
        decision.save()
        return decision
    # Safety alone decides; the quality assessment is recorded beside it and never flips it.
    decision.approved = verdict.approved
    decision.quality_score = verdict.quality_score
    decision.quality_assessment = verdict.quality_assessment
    decision.reasoning = verdict.reasoning
    decision.confidence = verdict.confidence
    decision.suggested_next_step = None if verdict.approved else verdict.suggested_next_step
    decision.status = Decision.Status.ALLOWED if verdict.approved else Decision.Status.BLOCKED
    decision.save()
    return decision


def _block(decision: Decision, reasoning: str, confidence: str, step: str | None) -> None:
    decision.approved = False
    decision.status = Decision.Status.BLOCKED
    decision.reasoning = reasoning
    decision.confidence = confidence
    decision.suggested_next_step = step


def _fail(decision: Decision, reason: str) -> None:
    decision.validator_failure = True
    decision.failure_reason = reason
    _block(decision, f"Blocked because the validator could not give a verdict. {reason}", "low",
           "Ask the user to confirm this action, or retry later.")


def decision_mark_executed(*, decision: Decision, result: dict) -> Decision:
    status = Decision.Status.EXECUTED if result.get("ok", True) else Decision.Status.EXECUTION_FAILED
    Decision.objects.filter(pk=decision.pk).update(status=status, executed_at=timezone.now(), execution_result=result)
    decision.refresh_from_db()
    return decision


def decision_result_update(*, decision_id: int, result: dict) -> None:
    """A later word on an executed action (a live action confirmed by the resume sweep, after
    its first attempt ended unconfirmed): the result changes, the decision's outcome does not."""
    Decision.objects.filter(pk=decision_id).update(execution_result=result, executed_at=timezone.now())


def _claim(*, decision_id: int, user, status: str) -> Decision:
    """Move a blocked decision to `status`, once. The conditional update is the lock: of two
    concurrent clicks exactly one matches `status=blocked`."""
    now = timezone.now()
    with transaction.atomic():
        claimed = Decision.objects.filter(pk=decision_id, user=user, status=Decision.Status.BLOCKED).update(
            status=status, resolved_by=user, resolved_at=now
        )
    if not claimed:
        raise AlreadyResolved("This action was already resolved.")
    return Decision.objects.select_related("task", "team", "user").get(pk=decision_id)


def decision_authorize(*, decision_id: int, user) -> Decision:
    """The user authorizes a blocked action: it runs exactly once (through the registered
    runner), and the task hears of it. Callers check permissions.can_authorize_decision first;
    the claim re-checks the owner."""
    decision = _claim(decision_id=decision_id, user=user, status=Decision.Status.AUTHORIZED)
    try:
        result = runner.get().execute(decision)
    except runner.NoRunner as exc:
        result = runner.Execution(ok=False, content=f"Not run: {exc}")
    Decision.objects.filter(pk=decision.pk).update(executed_at=timezone.now(), execution_result=result.as_dict())
    if decision.task is not None:
        lindy_services.task_event_add(
            task=decision.task, actor=TaskEvent.Actor.TOOL, tool_name=decision.tool,
            content=f"Authorized by {user.email} and {'executed' if result.ok else 'attempted'}: "
            f"{decision.description}. Result: {result.content}",
        )
    decision.refresh_from_db()
    return decision


def decision_dismiss(*, decision_id: int, user) -> Decision:
    decision = _claim(decision_id=decision_id, user=user, status=Decision.Status.DISMISSED)
    if decision.task is not None:
        lindy_services.task_event_add(
            task=decision.task, actor=TaskEvent.Actor.TOOL, tool_name=decision.tool,
            content=f"{user.email} dismissed the blocked action: {decision.description}. Do not retry it.",
        )
    return decision


def decision_follow_suggestion(*, decision_id: int, user) -> Decision:
    """Send the validator's suggestion back to the task and let the agent continue (in the
    background). The note is Lindy's (actor `system`), not the user's: the suggestion repeats the
    blocked action's own words, and a later justification quoting them must not pass for the
    user's instruction."""
    current = Decision.objects.filter(pk=decision_id, user=user).first()
    if current is None or not current.suggested_next_step or current.task_id is None:
        raise AlreadyResolved("There is no suggestion to follow for this action.")
    # The agent acts on the instruction in the background: with the queue unreachable it would be
    # stored and never acted on, so refuse before changing anything.
    try:
        queue.broker_check()
    except outages.BROKER_ERRORS as exc:
        raise QueueUnavailable("The task queue is unreachable right now, so nothing changed. "
                               "Try again in a moment.") from exc
    decision = _claim(decision_id=decision_id, user=user, status=Decision.Status.SUGGESTION_FOLLOWED)
    task = decision.task
    assert task is not None  # checked above; the task of a decision never changes
    lindy_services.task_event_add(
        task=task, actor=TaskEvent.Actor.SYSTEM, name=f"suggestion followed by {user.email}",
        content=f"{SUGGESTION_PREFIX} instead of the blocked action ({decision.description}): "
        f"{decision.suggested_next_step}",
    )
    runner.get().continue_task(task.pk)
    return decision
