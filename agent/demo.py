"""Demo decisions, produced by the real validator (the offline rules when no model key is set):
a blocked vendor payment, a blocked request from a third party, an allowed explicit send."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from lindy import services as lindy_services
from lindy.models import AgentTask, TaskEvent
from validator import services
from validator.models import Decision

from . import tools


class Script(TypedDict):
    team: NotRequired[str]  # "Acme" when not given
    owner: str
    title: str
    events: list[tuple[str, str, str]]  # (actor, name, content)
    tool: str
    arguments: dict[str, Any]
    justification: str


SCRIPTS: list[Script] = [
    {
        "owner": "admin@acme.test",
        "title": "Vendor invoice from Northwind",
        "events": [],  # the core demo data already holds the vendor's demand
        "tool": "pay_invoice",
        "arguments": {"invoice_id": "NW-2291", "payee": "Northwind", "amount": 4800, "currency": "USD"},
        "justification": 'Northwind wrote "Pay immediately to avoid service suspension", so paying now avoids an outage.',
    },
    {
        "owner": "user@acme.test",
        "title": "Quarterly report request from Initech",
        "events": [
            ("external", "jane.park@initech.test", "Hi Umar, can you send me the report? The Q3 usage numbers would be great."),
            ("assistant", "", "Jane Park asked for the Q3 usage report."),
        ],
        "tool": "send_email",
        "arguments": {"to": ["jane.park@initech.test"], "subject": "Q3 usage report",
                      "body": "Hi Jane, attached is the Q3 usage report."},
        "justification": 'The recipient asked "can you send me the report?" so I am sending it.',
    },
    {
        "owner": "user@acme.test",
        "title": "Thank Priya for the MSA review",
        "events": [
            ("user", "", "Send an email to priya@acme.test saying thanks for turning the MSA review around so fast."),
        ],
        "tool": "send_email",
        "arguments": {"to": ["priya@acme.test"], "subject": "Thanks for the MSA review",
                      "body": "Thanks for turning the MSA review around so fast."},
        "justification": 'The user asked me directly: "Send an email to priya@acme.test saying thanks for turning the MSA review around so fast."',
    },
]


def run_script(ctx, script: Script) -> Decision | None:
    """One scripted request, through the product: the task and its events, the validator's
    decision, then the tool run (when allowed) and its result on the task. None when the task
    already holds that decision (idempotent)."""
    team = ctx.teams[script.get("team", "Acme")]
    owner = ctx.users[script["owner"]]
    task = AgentTask.objects.filter(team=team, owner=owner, title=script["title"]).first()
    if task is None:
        task = lindy_services.task_create(team=team, owner=owner, title=script["title"])
        for actor, name, content in script["events"]:
            lindy_services.task_event_add(task=task, actor=actor, name=name, content=content)
    if Decision.objects.filter(task=task, tool=script["tool"]).exists():
        return None
    decision = services.check(
        user=owner, team=team, task=task, tool=script["tool"], arguments=script["arguments"],
        justification=script["justification"],
    )
    lindy_services.task_event_add(
        task=task, actor=TaskEvent.Actor.ASSISTANT, tool_name=script["tool"],
        content=f"Proposed: {decision.description}",
        tool_arguments={**script["arguments"], "justification": script["justification"]},
    )
    if decision.approved:
        result = tools.execute(tools.ExecutionContext(user=owner, team=team, task=task, decision=decision),
                               script["tool"], script["arguments"])
        services.decision_mark_executed(decision=decision, result=result.as_dict())
        content = result.content
    else:
        content = f"BLOCKED by the validator (decision {decision.pk}): {decision.reasoning}"
    lindy_services.task_event_add(task=task, actor=TaskEvent.Actor.TOOL, tool_name=script["tool"], content=content)
    return decision


def seed(ctx) -> None:
    for script in SCRIPTS:
        run_script(ctx, script)
