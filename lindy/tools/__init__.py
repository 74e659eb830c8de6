"""Tool execution behind one interface.

    result = execute(ExecutionContext(user=..., team=..., task=...), "send_email", {...})

Each tool runs through a real adapter where one is configured (the user's own channel through
channels_app, Slack through slack_sdk); everything else is written to the outbox as a recorded
action, with the reason. Nothing is ever a silent no-op. Validation happens before this call:
this module executes, it does not judge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from validator import registry

from . import outbox, search, slack, user_channel


@dataclass
class ExecutionContext:
    user: object
    team: object
    task: object = None
    decision: object = None
    channel: str | None = None  # the channel the user wrote from, for direct replies


@dataclass
class ToolResult:
    ok: bool
    content: str
    adapter: str = ""
    data: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def execute(ctx: ExecutionContext, tool: str, arguments: dict) -> ToolResult:
    registry.get(tool)  # unknown tools never execute
    if tool == "search_tasks":
        return search.run(ctx, arguments, ToolResult)
    if tool in ("reply_to_user", "send_sms_to_user"):
        return user_channel.send(ctx, tool, arguments, ToolResult)
    if tool == "post_slack_message" and slack.configured():
        return slack.post(ctx, arguments, ToolResult)
    return outbox.record(ctx, tool, arguments, ToolResult)
