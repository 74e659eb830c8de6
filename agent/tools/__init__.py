"""Tool execution behind one interface.

    result = execute(ExecutionContext(user=..., team=..., task=...), "send_email", {...})

Each tool runs through a real adapter where one is configured (the user's own channel through
channels_app, Slack through slack_sdk, Gmail and Google Calendar through the user's own Google
grant once they let the assistant act there, exactly once: tools/execution.py); everything
else is written to the outbox as a recorded action, with the reason. Nothing is ever a silent
no-op. Validation happens before this call: this module executes, it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from lindy import tool_registry as registry
from lindy.models import AgentTask, Team, User
from validator.models import Decision
from validator.runner import Execution

from . import calendar, gmail, outbox, search, slack, user_channel
from .execution import Rejected

__all__ = ["ExecutionContext", "Rejected", "ToolResult", "adapter_for", "execute", "integrations",
           "recorded_only", "resume"]


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
GMAIL, CALENDAR = gmail.ADAPTER, calendar.ADAPTER


def _google(user) -> set[str]:
    """Which Google adapters the user turned on (one query)."""
    if user is None:
        return set()
    account = gmail.account_for(user)
    return {name for name, on in ((GMAIL, gmail.live(account)), (CALENDAR, calendar.live(account))) if on}


def _adapter(tool: str, team_ids, google: set[str]) -> str:
    registry.get(tool)
    if tool == "search_tasks":
        return SEARCH
    if tool in ("reply_to_user", "send_sms_to_user"):
        return USER_CHANNEL
    if tool == "post_slack_message" and slack.configured(team_ids):
        return SLACK
    if tool in gmail.TOOLS and GMAIL in google:
        return GMAIL
    if tool in calendar.TOOLS and CALENDAR in google:
        return CALENDAR
    return OUTBOX


def adapter_for(tool: str, team_ids=(), user=None) -> str:
    """Which adapter runs this tool now for these teams and this user. Email and calendar tools
    are live once the user let the assistant act in Gmail / their calendar (their own Google
    grant); Slack posts where the team installed Slack. Payments and external file shares have
    no integration: always recorded in the outbox, and pages say so."""
    # Only an email or calendar tool depends on the user's Google grant: no query for the others.
    google = _google(user) if tool in gmail.TOOLS or tool in calendar.TOOLS else set()
    return _adapter(tool, team_ids, google)


def recorded_only(tool: str, team_ids=(), user=None) -> bool:
    """True when running this tool only writes it down: nothing leaves the system."""
    return adapter_for(tool, team_ids, user) == OUTBOX


def execute(ctx: ExecutionContext, tool: str, arguments: dict) -> ToolResult:
    adapter = adapter_for(tool, [ctx.team.pk], ctx.user)  # unknown tools never execute
    if adapter == SEARCH:
        return search.run(ctx, arguments, ToolResult)
    if adapter == USER_CHANNEL:
        return user_channel.send(ctx, tool, arguments, ToolResult)
    if adapter == SLACK:
        return slack.post(ctx, arguments, ToolResult)
    if adapter in (GMAIL, CALENDAR):
        live = gmail if adapter == GMAIL else calendar
        try:
            return live.run(ctx, tool, arguments, ToolResult)
        except Rejected as exc:  # no Google connection at all: nothing was stored or sent
            return ToolResult(ok=False, adapter=adapter, content=str(exc))
    return outbox.record(ctx, tool, arguments, ToolResult)


def resume(entry, *, last_chance: bool = False) -> ToolResult:
    """Carry a live action left pending (its worker killed mid-call, or the provider down) to an
    outcome: the provider is asked first, so it never happens twice. With `last_chance` it is
    only asked, and what did not happen fails."""
    live = gmail if entry.adapter == GMAIL else calendar
    return live.resume(entry, ToolResult, last_chance=last_chance)


# What the outbox page tells the user about each kind of action, in the registry's words.
_INTEGRATIONS = [
    ("Email (Gmail)", ("send_email", "reply_to_email", "forward_email", "delete_email", "archive_email", "draft_email")),
    ("Calendar", ("create_calendar_event", "send_calendar_invite", "update_calendar_event",
                  "cancel_calendar_event", "delete_calendar_event")),
    ("Slack posts", ("post_slack_message",)),
    ("Payments and file sharing", ("pay_invoice", "share_file_externally")),
    ("Messages to you", ("reply_to_user", "send_sms_to_user")),
]


def integrations(team_ids=(), user=None) -> list[dict]:
    """Per kind of action: is it live (really sent) or recorded only, for these teams and user."""
    rows = []
    google = _google(user)
    for label, names in _INTEGRATIONS:
        adapters = {_adapter(name, team_ids, google) for name in names}
        rows.append({"label": label, "tools": names, "live": OUTBOX not in adapters,
                     "adapter": ", ".join(sorted(adapters))})
    return rows
