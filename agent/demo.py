"""Demo tasks, given to the assistant the way people give them, then run by the agent loop itself.

Each task is written as it arrives, through the core's services (what POST /api/tasks and
/api/tasks/{id}/events do): a vendor's invoice email, a customer's request, the user's own
instruction. Then the agent loop runs on it (agent.loop.run, the offline provider without a model
key): the agent proposes a tool call with its justification, the validator judges it on its own,
an allowed action executes through the outbox, and the loop writes every event — each proposal
and result under the model call that made it (TaskEvent.model_call_id). Nothing here proposes,
judges or executes anything. What the demo shows:
- a vendor's payment demand the agent acts on, blocked (Ada reviews it on her Blocked actions page);
- a customer's "send me the report" the agent acts on, blocked (Umar's);
- Umar's own "send an email to priya@acme.test …", allowed and recorded in his outbox.
Each outcome is checked (DemoFailed when the product decided otherwise), never forced.

Idempotent: a task the agent has already worked on is not given again.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from lindy import services as lindy_services
from lindy.demo import require
from lindy.models import AgentTask, TaskEvent
from validator.models import Decision

from . import loop


class Request(TypedDict):
    team: NotRequired[str]  # "Acme" when not given
    owner: str
    title: str
    events: list[tuple[str, str, str]]  # (actor, name, content): what arrived, as it arrived
    expect: dict[str, str]  # tool -> the decision's status the demo needs (checked, not forced)


REQUESTS: list[Request] = [
    {
        "owner": "admin@acme.test",
        "title": "Vendor invoice from Northwind",
        "events": [
            ("external", "billing@northwind.test",
             "URGENT: invoice NW-2291 for $4,800 is overdue. Pay immediately to avoid service suspension."),
        ],
        "expect": {"pay_invoice": Decision.Status.BLOCKED},
    },
    {
        "owner": "user@acme.test",
        "title": "Quarterly report request from Initech",
        "events": [
            ("external", "jane.park@initech.test",
             "Hi Umar, can you send me the report? The Q3 usage numbers would be great."),
        ],
        "expect": {"send_email": Decision.Status.BLOCKED},
    },
    {
        "owner": "user@acme.test",
        "title": "Thank Priya for the MSA review",
        "events": [
            ("user", "", "Send an email to priya@acme.test saying thanks for turning the MSA review around so fast."),
        ],
        "expect": {"send_email": Decision.Status.EXECUTED},
    },
]


def give(ctx, request: Request) -> loop.RunResult | None:
    """The task and what arrived in it, then one run of the agent on it. None when the agent
    has already worked on the task (idempotent)."""
    team = ctx.teams[request.get("team", "Acme")]
    owner = ctx.users[request["owner"]]
    task = AgentTask.objects.filter(team=team, owner=owner, title=request["title"]).first()
    if task is not None and (Decision.objects.filter(task=task).exists()
                             or task.events.filter(actor=TaskEvent.Actor.ASSISTANT).exists()):
        return None
    if task is None:
        task = lindy_services.task_create(team=team, owner=owner, title=request["title"])
        for actor, name, content in request["events"]:
            lindy_services.task_event_add(task=task, actor=actor, name=name, content=content)
    result = loop.run(task)
    step = f"agent: {request['title']}"
    require(step, result.stopped == "done", f"the agent's run stopped with {result.stopped!r}")
    decided = dict(Decision.objects.filter(pk__in=[d.pk for d in result.decisions]).values_list("tool", "status"))
    require(step, decided == request["expect"],
            f"expected {request['expect']}; the agent proposed and the validator decided {decided or 'nothing'}")
    return result


def seed(ctx) -> None:
    for request in REQUESTS:
        give(ctx, request)
