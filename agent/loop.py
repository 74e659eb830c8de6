"""The agent loop: runs an AgentTask through the model gateway (route `agent`) with the tool
contract (lindy.tool_registry) and the user's memory context.

Every validated tool call goes to the validator (`validator.services.check`) before it
executes; exempt calls execute directly. A blocked call's reasoning and suggested next step go
back to the agent as the tool result, so it can recover (ask the user, follow the suggestion).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings

from channels_app import selectors as channel_selectors
from lindy import failures, seams, services
from lindy import tool_registry as registry
from lindy.models import AgentTask, TaskEvent
from memory import context as memory_context
from router import gateway
from router.models import CallScore
from router.services import call_score_record
from router.types import ModelError
from validator import prompts as validator_prompts
from validator import services as validator_services
from validator.models import Decision

from . import prompts, tools

logger = logging.getLogger(__name__)

ROUTE = "agent"
# The validator sends the same (validator V2): a different tool_choice would drop the cached messages.
TOOL_CHOICE = {"type": "auto"}
# The validator's own tools in the agent's list (deferred record_verdict and its loader).
VALIDATOR_TOOLS = frozenset({validator_prompts.VERDICT_TOOL, validator_prompts.TOOL_SEARCH})
MAX_TURNS = 8
MAX_TOOL_RESULT_CHARS = 8000


@dataclass
class RunResult:
    task: AgentTask
    turns: int = 0
    tool_calls: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    stopped: str = ""  # "done", "max_turns" or "model_error"
    call_ids: list[int] = field(default_factory=list)  # the agent's own model calls


def _call_event(task, tool: str, arguments: dict, justification: str, call_id: int | None) -> None:
    """The proposal, under the model call that made it."""
    recorded = dict(arguments)
    if justification:
        recorded["justification"] = justification
    services.task_event_add(task=task, actor=TaskEvent.Actor.ASSISTANT, tool_name=tool,
                            content=f"Proposed: {registry.describe(tool, arguments)}", tool_arguments=recorded,
                            model_call_id=call_id)


def _result_event(task, tool: str, content: str, call_id: int | None) -> None:
    """What became of a proposal, under the model call that proposed it."""
    services.task_event_add(task=task, actor=TaskEvent.Actor.TOOL, tool_name=tool, content=content,
                            model_call_id=call_id)


def _blocked_text(decision: Decision) -> str:
    text = f"BLOCKED by the validator (decision {decision.pk}): {decision.reasoning}"
    if decision.suggested_next_step:
        text += f"\nSuggested next step: {decision.suggested_next_step}"
    text += "\nThe user can review and authorize it on their Blocked actions page. Do not retry it as is."
    return text


def _score_proposal(agent_call_id: int | None, decision: Decision) -> None:
    """An outcome signal for model rollouts on the agent route: was the action this model
    proposed blocked? (A validator failure says nothing about the agent's proposal.)"""
    if agent_call_id is None or decision.validator_failure:
        return
    # One model turn may propose several actions: any block marks the turn as blocked.
    if decision.approved and CallScore.objects.filter(call_id=agent_call_id, metric="validator.blocked").exists():
        return
    call_score_record(call_id=agent_call_id, metric="validator.blocked", value=0.0 if decision.approved else 1.0,
                      source="validator")


def _handle_call(
    task: AgentTask, call, ctx: tools.ExecutionContext, result: RunResult, agent_call_id: int | None = None,
    agent_request: dict | None = None,
) -> tuple[str, bool]:
    """Validate (when the registry says so) and execute one tool call. (content, is_error)."""
    if call.name in VALIDATOR_TOOLS:
        # Declared in the agent's list only so the validator can share its prompt (V2); the agent
        # never gets to load or call them.
        return (f"Refused: {call.name} is Lindy's own validator tool, not one the assistant may call. "
                "Use the task's tools."), True
    try:
        spec = registry.get(call.name)
    except registry.UnknownTool:
        return f"There is no tool named {call.name!r}.", True
    arguments = dict(call.input or {})
    justification = arguments.pop("justification", "")
    if not isinstance(justification, str):
        return "justification must be a string.", True
    errors = registry.argument_errors(spec, arguments)
    if errors:
        return f"Invalid arguments for {spec.name}: " + "; ".join(errors), True
    result.tool_calls.append(spec.name)

    if not registry.is_exempt(registry.effect_for(spec, arguments, task.owner.email)):
        # The validator reads the history as it stands before this call is written into it.
        decision = validator_services.check(
            user=task.owner, team=task.team, task=task, tool=spec.name, arguments=arguments,
            justification=justification, tool_call_id=call.id, agent_request=agent_request,
        )
        result.decisions.append(decision)
        _score_proposal(agent_call_id, decision)
        _call_event(task, spec.name, arguments, justification, agent_call_id)
        if not decision.approved:
            text = _blocked_text(decision)
            _result_event(task, spec.name, text, agent_call_id)
            return text, True
        ctx.decision = decision
    else:
        _call_event(task, spec.name, arguments, "", agent_call_id)
        ctx.decision = None

    outcome = tools.execute(ctx, spec.name, arguments)
    if ctx.decision is not None:
        validator_services.decision_mark_executed(decision=ctx.decision, result=outcome.as_dict())
    _result_event(task, spec.name, outcome.content, agent_call_id)
    return outcome.content[:MAX_TOOL_RESULT_CHARS], not outcome.ok


def _opening_message(task: AgentTask, before_seq: int | None = None) -> dict[str, object]:
    """The task history, after the photos the user texted recently (images first, as the Messages
    API advises), each under the number the history uses for it ("[photo #12: ...]")."""
    events = task.events.order_by("seq")
    if before_seq is not None:
        events = events.filter(seq__lt=before_seq)
    history = prompts.history_message(task, events)
    photos = channel_selectors.recent_photos(task.owner, days=settings.LINDY_AGENT_PHOTO_DAYS,
                                             limit=settings.LINDY_AGENT_PHOTO_LIMIT)
    if not photos:
        return {"role": "user", "content": history}
    blocks: list[dict] = [{"type": "text", "text": prompts.PHOTOS_INTRO}]
    for photo in photos:
        blocks.append({"type": "text", "text": photo.label})
        if photo.block is not None:
            blocks.append(photo.block)
    blocks.append({"type": "text", "text": history})
    return {"role": "user", "content": blocks}


USER_MESSAGE_TOOLS = frozenset({"reply_to_user", "send_sms_to_user"})


def pending_proposal(task: AgentTask) -> TaskEvent | None:
    """The action the agent proposed last and never saw the result of: its worker was killed
    between the proposal and the execution. Every proposal is followed by its result event."""
    last = task.events.order_by("-seq").first()
    if last is not None and last.actor == TaskEvent.Actor.ASSISTANT and last.tool_name:
        return last
    return None


def _finish_proposal(task: AgentTask, event: TaskEvent, ctx: tools.ExecutionContext) -> tuple[str, bool]:
    """Carry a recorded proposal to its result, as _handle_call would have: the decision the
    validator took then stands (never asked again), and the execution is keyed (the outbox's
    execution key), so what already ran is not run a second time."""
    arguments = dict(event.tool_arguments or {})
    arguments.pop("justification", None)
    ctx.decision = None
    if not registry.is_exempt(registry.effect_for(registry.get(event.tool_name), arguments, task.owner.email)):
        decision = (Decision.objects.filter(task=task, tool=event.tool_name, created_at__lte=event.created_at)
                    .order_by("-pk").first())
        if decision is None or not decision.approved:
            text = _blocked_text(decision) if decision is not None else "Not executed: no validator decision."
            _result_event(task, event.tool_name, text, event.model_call_id)
            return text, True
        ctx.decision = decision
    outcome = tools.execute(ctx, event.tool_name, arguments)
    if ctx.decision is not None and ctx.decision.status == Decision.Status.ALLOWED:
        validator_services.decision_mark_executed(decision=ctx.decision, result=outcome.as_dict())
    _result_event(task, event.tool_name, outcome.content, event.model_call_id)
    return outcome.content[:MAX_TOOL_RESULT_CHARS], not outcome.ok


def resume(task: AgentTask, *, channel: str | None = None) -> RunResult | None:
    """Pick a run up from its last recorded step after its worker died: a proposed action is
    executed once, and the agent goes on from that call and its result, as the killed run would
    have. A task with nothing pending runs only when its last word is an instruction. None:
    nothing to do (answered already)."""
    task = AgentTask.objects.select_related("owner", "team").get(pk=task.pk)
    event = pending_proposal(task)
    if event is not None:
        ctx = tools.ExecutionContext(user=task.owner, team=task.team, task=task, channel=channel)
        with failures.capturing("agent_run", route=ROUTE, task_id=task.pk, user_id=task.owner_id,
                                team_id=task.team_id):
            content, is_error = _finish_proposal(task, event, ctx)
        return run(task, channel=channel, resumed=_Resumed(event, content, is_error))
    last = task.events.order_by("-seq").values_list("actor", flat=True).first()
    if last in (TaskEvent.Actor.USER, TaskEvent.Actor.SYSTEM):
        return run(task, channel=channel)
    return None


@dataclass
class _Resumed:
    """The call a killed run had proposed, now carried out: the resumed run's conversation ends
    with it, so the model goes on from the result instead of starting the instruction over."""

    event: TaskEvent
    content: str
    is_error: bool

    def messages(self) -> list[dict[str, object]]:
        call_id = f"resumed-{self.event.pk}"
        return [
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": self.event.tool_name,
                                               "input": dict(self.event.tool_arguments or {})}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": self.content,
                                          "is_error": self.is_error}]},
        ]


def run(task: AgentTask, *, channel: str | None = None, max_turns: int = MAX_TURNS,
        resumed: _Resumed | None = None) -> RunResult:
    """Run the agent on the task; when it stops, the analyst scores the run in the background."""
    with failures.capturing("agent_run", route=ROUTE, task_id=task.pk, user_id=task.owner_id, team_id=task.team_id):
        result = _run(task, channel=channel, max_turns=max_turns, resumed=resumed)
    seams.agent_run_finished.send(sender=AgentTask, task_id=result.task.pk, call_ids=result.call_ids,
                                  stopped=result.stopped)
    return result


def _run(task: AgentTask, *, channel: str | None, max_turns: int, resumed: _Resumed | None = None) -> RunResult:
    task = AgentTask.objects.select_related("owner", "team").get(pk=task.pk)
    user, team = task.owner, task.team
    memory = memory_context.context_for(user)
    assignment = gateway.assign(ROUTE, user)
    system = prompts.system_prompt(user=user, team=team, memory_text=memory.text,
                                         variant=assignment.prompt_variant)
    if resumed is None:
        messages: list[dict[str, object]] = [_opening_message(task)]
    else:
        messages = [_opening_message(task, before_seq=resumed.event.seq), *resumed.messages()]
    ctx = tools.ExecutionContext(user=user, team=team, task=task, channel=channel)
    result = RunResult(task=task)
    # The validator's tools go last, deferred (V2): the agent's prompt is the same with or without
    # them, and the validation turn can send this exact list.
    agent_tools = registry.agent_tools() + validator_services.agent_side_tools(user)
    while result.turns < max_turns:
        result.turns += 1
        # What this turn sends, as sent: the validator rides its prefix (and cache).
        sent_messages = list(messages)
        # The model, tool_choice and image handling are part of what the cache keys on.
        sent = {"system": system, "tools": agent_tools, "messages": sent_messages, "cache_messages": (-1,),
                "tool_choice": TOOL_CHOICE, "model": assignment.target.model,
                "accepts_images": assignment.target.accepts_images}
        try:
            completion = gateway.complete(
                route=ROUTE, user=user, team=team, assignment=assignment, system=system, messages=sent_messages,
                tools=agent_tools, tool_choice=TOOL_CHOICE, cache_messages=(-1,),
            )
        except ModelError as exc:
            logger.warning("agent turn failed on task %s: %s", task.pk, exc)
            services.task_event_add(task=task, actor=TaskEvent.Actor.ASSISTANT,
                                    content=f"The assistant could not continue: the model call failed ({exc}).")
            result.stopped = "model_error"
            return result
        if completion.call_id:
            result.call_ids.append(completion.call_id)
        if completion.text.strip():
            services.task_event_add(task=task, actor=TaskEvent.Actor.ASSISTANT, content=completion.text.strip(),
                                    model_call_id=completion.call_id)
        if not completion.tool_calls:
            result.stopped = "done"
            return result
        messages.append(completion.assistant_message())
        tool_results: list[dict[str, object]] = []
        for call in completion.tool_calls:
            content, is_error = _handle_call(task, call, ctx, result, completion.call_id, sent)
            tool_results.append({"type": "tool_result", "tool_use_id": call.id, "content": content,
                                 "is_error": is_error})
        messages.append({"role": "user", "content": tool_results})
    result.stopped = "max_turns"
    return result
