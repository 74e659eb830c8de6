"""Tool execution behind one interface.

    result = execute(ExecutionContext(user=..., team=..., task=...), "send_email", {...})

Each tool runs through a real adapter where one is configured (the user's own channel through
channels_app, Slack through slack_sdk); everything else is written to the outbox as a recorded
action, with the reason. Nothing is ever a silent no-op. Validation happens before this call:
this module executes, it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from lindy import tool_registry as registry
from lindy.models import AgentTask, Team, User
from validator.models import Decision
from validator.runner import Execution

from . import outbox, search, slack, user_channel


@dataclass
class ExecutionContext:
    user: User
    team: Team
    task: AgentTask | None = None
    decision: Decision | None = None
    channel: str | None = None  # the channel the user wrote from, for direct replies


# What running a tool did: the validator stores the same record on the decision it allowed.
ToolResult = Execution


SEARCH, USER_CHANNEL, SLACK, OUTBOX = "search", "user_channel", "slack", "outbox"


def adapter_for(tool: str, team_ids=()) -> str:
    """Which adapter runs this tool now for these teams. Email (Gmail) and calendar tools have no
    live adapter in this product: they are always recorded in the outbox, and pages say so.
    Slack posts are live where the team installed Slack."""
    registry.get(tool)
    if tool == "search_tasks":
        return SEARCH
    if tool in ("reply_to_user", "send_sms_to_user"):
        return USER_CHANNEL
    if tool == "post_slack_message" and slack.configured(team_ids):
        return SLACK
    return OUTBOX


def recorded_only(tool: str, team_ids=()) -> bool:
    """True when running this tool only writes it down: nothing leaves the system."""
    return adapter_for(tool, team_ids) == OUTBOX


def execute(ctx: ExecutionContext, tool: str, arguments: dict) -> ToolResult:
    adapter = adapter_for(tool, [ctx.team.pk])  # unknown tools never execute
    if adapter == SEARCH:
        return search.run(ctx, arguments, ToolResult)
    if adapter == USER_CHANNEL:
        return user_channel.send(ctx, tool, arguments, ToolResult)
    if adapter == SLACK:
        return slack.post(ctx, arguments, ToolResult)
    return outbox.record(ctx, tool, arguments, ToolResult)


# What the outbox page tells the user about each kind of action, in the registry's words.
_INTEGRATIONS = [
    ("Email (Gmail)", ("send_email", "reply_to_email", "forward_email", "delete_email", "archive_email", "draft_email")),
    ("Calendar", ("create_calendar_event", "send_calendar_invite", "delete_calendar_event")),
    ("Slack posts", ("post_slack_message",)),
    ("Payments and file sharing", ("pay_invoice", "share_file_externally")),
    ("Messages to you", ("reply_to_user", "send_sms_to_user")),
]


def integrations(team_ids=()) -> list[dict]:
    """Per kind of action: is it live (really sent) or recorded only, for these teams."""
    rows = []
    for label, names in _INTEGRATIONS:
        adapters = {adapter_for(name, team_ids) for name in names}
        rows.append({"label": label, "tools": names, "live": OUTBOX not in adapters,
                     "adapter": ", ".join(sorted(adapters))})
    return rows
