"""Demo tasks, given to the assistant the way people give them, then run by the agent loop itself.

Each task is written as it arrives, through the core's services (what POST /api/tasks and
/api/tasks/{id}/events do): a vendor's invoice email, a customer's request, the user's own
instruction. Then the agent loop runs on it (agent.loop.run, the offline provider without a model
key): the agent proposes a tool call with its justification, the validator judges it on its own,
an allowed action executes through the outbox, and the loop writes every event — each proposal
and result under the model call that made it (TaskEvent.model_call_id). Nothing here proposes,
judges or executes anything. What the demo shows:
- Umar's reply to Initech's MSA redline, sent as he asked; his and Ada's standing instructions and
  requests the offline assistant has no tool for, acknowledged (the memory keeps what they say);
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
    visibility: NotRequired[str]  # private when not given
    events: list[tuple[str, str, str]]  # (actor, name, content): what arrived, as it arrived
    expect: dict[str, str]  # tool -> the decision's status the demo needs (checked, not forced)


REQUESTS: list[Request] = [
    {
        "owner": "user@acme.test",
        "title": "Reply to Initech about the MSA redline",
        "events": [
            ("external", "legal@initech.test",
             "Hi Umar, could you tweak clause 7.2 of the MSA so the liability cap is 2x fees? "
             "Please send the updated draft today."),
            ("user", "",
             "Email legal@initech.test saying we will get back to you after legal review of clause 7.2. "
             "Priya (priya@acme.test), our new head of legal, reviews every MSA change."),
        ],
        "expect": {"send_email": Decision.Status.EXECUTED},
    },
    {
        "owner": "user@acme.test",
        "title": "Weekly revenue report",
        "visibility": AgentTask.Visibility.PUBLIC,
        "events": [
            ("user", "", "Every Friday at 9am send the weekly report to the team, revenue numbers first - "
                         "Sarah wants them at the top."),
        ],
        "expect": {},  # a standing instruction: the offline assistant notes it (the memory keeps it)
    },
    {
        "owner": "admin@acme.test",
        "title": "Plan the Q3 offsite",
        "visibility": AgentTask.Visibility.PUBLIC,
        "events": [("user", "", "Find three venues near Lisbon for 20 people in September and put them in a doc.")],
        "expect": {},  # no tool of the offline assistant searches venues: it says what it can do
    },
    {
        "team": "Globex",
        "owner": "admin@globex.test",
        "title": "Globex board deck",
        "visibility": AgentTask.Visibility.PUBLIC,
        "events": [("user", "", "Collect Q2 numbers for the board deck.")],
        "expect": {},
    },
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


def give(ctx, request: Request, step: str = "agent") -> loop.RunResult | None:
    """The task and what arrived in it, then one run of the agent on it, its outcome checked
    (DemoFailed naming `step` and the task otherwise). None when the agent has already worked on
    the task (idempotent)."""
    team = ctx.teams[request.get("team", "Acme")]
    owner = ctx.users[request["owner"]]
    task = AgentTask.objects.filter(team=team, owner=owner, title=request["title"]).first()
    if task is not None and (Decision.objects.filter(task=task).exists()
                             or task.events.filter(actor=TaskEvent.Actor.ASSISTANT).exists()):
        return None
    if task is None:
        task = lindy_services.task_create(team=team, owner=owner, title=request["title"],
                                          visibility=request.get("visibility", AgentTask.Visibility.PRIVATE))
        for actor, name, content in request["events"]:
            lindy_services.task_event_add(task=task, actor=actor, name=name, content=content)
    result = loop.run(task)
    step = f"{step}: {request['title']}"
    require(step, result.stopped == "done", f"the agent's run stopped with {result.stopped!r}")
    decided = dict(Decision.objects.filter(pk__in=[d.pk for d in result.decisions]).values_list("tool", "status"))
    require(step, decided == request["expect"],
            f"expected {request['expect']}; the agent proposed and the validator decided {decided or 'nothing'}")
    return result


def seed(ctx) -> None:
    for request in REQUESTS:
        give(ctx, request)
