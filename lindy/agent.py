"""The agent loop: runs an AgentTask through the model gateway (route `agent`) with the tool
registry and the user's memory context.

Every validated tool call goes through the validator before it executes; exempt calls execute
directly. A blocked call's reasoning and suggested next step go back to the agent as the tool
result, so it can recover (ask the user, follow the suggestion).

`handle_inbound` is the seam channels_app calls (settings.LINDY_INBOUND_HANDLER). It runs the
loop synchronously: channels calls it from its own debounce Celery task, so the work already
happens in a worker. Pages that restart a task (following a suggestion) enqueue
`validator.tasks.agent_run` instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import context as memory_context
from router import gateway
from router.models import CallScore
from router.services.scores import call_score_record
from router.types import ModelError
from validator import registry
from validator import services as validator_services
from validator.models import Conversation, Decision

from . import agent_prompts, services, tools
from .models import AgentTask, Membership, TaskEvent

logger = logging.getLogger(__name__)

MAX_TURNS = 8
MAX_TOOL_RESULT_CHARS = 8000


@dataclass
class RunResult:
    task: AgentTask
    turns: int = 0
    tool_calls: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    stopped: str = ""  # "done", "max_turns" or "model_error"


def _team_of(user):
    membership = Membership.objects.filter(user=user).select_related("team").order_by("team__name").first()
    if membership is None:
        raise ValueError(f"{user} belongs to no team: the assistant has nowhere to record the task.")
    return membership.team


def _received_at(value) -> datetime:
    if isinstance(value, datetime):
        return value
    parsed = parse_datetime(value) if isinstance(value, str) else None
    return parsed or timezone.now()


def _message_text(message: dict) -> str:
    parts = [str(message.get("text") or "").strip()]
    if message.get("reaction"):
        parts.append(f"[reacted {message['reaction']}]")
    for attachment in message.get("attachments") or []:
        if isinstance(attachment, dict):
            label = attachment.get("name") or attachment.get("filename") or attachment.get("url") or "file"
        else:
            label = str(attachment)
        parts.append(f"[attachment: {label}]")
    return " ".join(p for p in parts if p)


def conversation_task(*, user, channel: str, conversation_ref: str, first_text: str) -> AgentTask:
    """The user's open task for this conversation, or a new one when the last message is older
    than LINDY_AGENT_CONVERSATION_IDLE_HOURS."""
    idle = timedelta(hours=getattr(settings, "LINDY_AGENT_CONVERSATION_IDLE_HOURS", 12))
    now = timezone.now()
    with transaction.atomic():
        conversation = (
            Conversation.objects.select_for_update().select_related("task")
            .filter(user=user, channel=channel, conversation_ref=conversation_ref).first()
        )
        if conversation is not None and now - conversation.last_inbound_at < idle:
            conversation.last_inbound_at = now
            conversation.save(update_fields=["last_inbound_at"])
            return conversation.task
        title = (first_text or "Conversation").strip().splitlines()[0][:120] or "Conversation"
        task = services.task_create(team=_team_of(user), owner=user, title=f"{title} ({channel})")
        Conversation.objects.update_or_create(
            user=user, channel=channel, conversation_ref=conversation_ref,
            defaults={"task": task, "last_inbound_at": now},
        )
        return task


def handle_inbound(*, user, channel: str, conversation_ref: str, messages: list[dict]) -> AgentTask:
    """Record a debounced bundle of the user's messages on their conversation task, then run
    the agent on it (synchronously, see the module docstring)."""
    texts = [_message_text(m) for m in messages]
    task = conversation_task(user=user, channel=channel, conversation_ref=conversation_ref,
                             first_text=next((t for t in texts if t), ""))
    for message, text in zip(messages, texts, strict=True):
        if text:
            services.task_event_add(task=task, actor=TaskEvent.Actor.USER, content=text,
                                    created_at=_received_at(message.get("received_at")))
    run(task, channel=channel)
    return task


def _call_event(task, tool: str, arguments: dict, justification: str) -> None:
    recorded = dict(arguments)
    if justification:
        recorded["justification"] = justification
    services.task_event_add(task=task, actor=TaskEvent.Actor.ASSISTANT, tool_name=tool,
                            content=f"Proposed: {registry.describe(tool, arguments)}", tool_arguments=recorded)


def _result_event(task, tool: str, content: str) -> None:
    services.task_event_add(task=task, actor=TaskEvent.Actor.TOOL, tool_name=tool, content=content)


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
) -> tuple[str, bool]:
    """Validate (when the registry says so) and execute one tool call. (content, is_error)."""
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
            justification=justification, tool_call_id=call.id,
        )
        result.decisions.append(decision)
        _score_proposal(agent_call_id, decision)
        _call_event(task, spec.name, arguments, justification)
        if not decision.approved:
            text = _blocked_text(decision)
            _result_event(task, spec.name, text)
            return text, True
        ctx.decision = decision
    else:
        _call_event(task, spec.name, arguments, "")
        ctx.decision = None

    outcome = tools.execute(ctx, spec.name, arguments)
    if ctx.decision is not None:
        validator_services.decision_mark_executed(decision=ctx.decision, result=outcome.as_dict())
    _result_event(task, spec.name, outcome.content)
    return outcome.content[:MAX_TOOL_RESULT_CHARS], not outcome.ok


def run(task: AgentTask, *, channel: str | None = None, max_turns: int = MAX_TURNS) -> RunResult:
    task = AgentTask.objects.select_related("owner", "team").get(pk=task.pk)
    user, team = task.owner, task.team
    memory = memory_context.context_for(user)
    assignment = gateway.assign("agent", user)
    system = agent_prompts.system_prompt(user=user, team=team, memory_text=memory.text,
                                         variant=assignment.prompt_variant)
    messages = [{"role": "user", "content": agent_prompts.history_message(task, task.events.order_by("seq"))}]
    ctx = tools.ExecutionContext(user=user, team=team, task=task, channel=channel)
    result = RunResult(task=task)
    agent_tools = registry.agent_tools()
    while result.turns < max_turns:
        result.turns += 1
        try:
            completion = gateway.complete(
                route="agent", user=user, team=team, assignment=assignment, system=system, messages=messages,
                tools=agent_tools, tool_choice={"type": "auto"},
            )
        except ModelError as exc:
            logger.warning("agent turn failed on task %s: %s", task.pk, exc)
            services.task_event_add(task=task, actor=TaskEvent.Actor.ASSISTANT,
                                    content=f"The assistant could not continue: the model call failed ({exc}).")
            result.stopped = "model_error"
            return result
        if completion.text.strip():
            services.task_event_add(task=task, actor=TaskEvent.Actor.ASSISTANT, content=completion.text.strip())
        if not completion.tool_calls:
            result.stopped = "done"
            return result
        messages.append(completion.assistant_message())
        tool_results = []
        for call in completion.tool_calls:
            content, is_error = _handle_call(task, call, ctx, result, completion.call_id)
            tool_results.append({"type": "tool_result", "tool_use_id": call.id, "content": content,
                                 "is_error": is_error})
        messages.append({"role": "user", "content": tool_results})
    result.stopped = "max_turns"
    return result
