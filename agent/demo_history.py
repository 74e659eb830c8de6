"""Demo: two weeks of the product at work, so the Models pages (costs, rollouts) have history.

Nothing here writes a call, a score or a rollout row. On a simulated clock (time-machine), it
does what the people and jobs of a small team would have done, through the product's code:
- ops runs the validator's offline eval set on the baseline and on the candidate (the cheaper
  deepseek-v4-flash on atlas with the validator's own `terse` prompt), then starts a rollout;
- every working day, people ask for actions (emails sent, invoices paid) and the validator
  judges each one through the gateway: the router serves each user the arm their bucket says,
  with that arm's prompt, on the offline provider;
- the guardrail beat job runs a few times a day: the online judge scores the sampled calls and
  the job ramps, holds or rolls back the rollout by its own rules.
So the figures are the product's own records: calls, tokens, arms, judge scores and every
rollout event come from the code that makes them in production. Offline calls cost nothing
(no target served them), and the pages say so.

Idempotent: once the validator route has a rollout, nothing runs again.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any, NotRequired, TypedDict

import time_machine
from django.test.utils import override_settings
from django.utils import timezone

from lindy import services as lindy_services
from lindy.demo import require
from lindy.models import AgentTask, TaskEvent
from router import services as router_services
from router.models import Route, Target
from router.services import evals
from validator import services as validator_services
from validator.models import Decision
from validator.services import ROUTE

from . import tools


class Script(TypedDict):
    team: NotRequired[str]  # "Acme" when not given
    owner: str
    title: str
    events: list[tuple[str, str, str]]  # (actor, name, content)
    tool: str
    arguments: dict[str, Any]
    justification: str


DAYS = 14
CANDIDATE = "deepseek-v4-flash-atlas"  # created by the router's demo (order 30)
CANDIDATE_VARIANT = "terse"  # one of validator.prompts.VARIANTS
# A small team makes a handful of validated actions a day: small stages and samples, so two
# weeks are enough evidence to ramp (a real rollout keeps the defaults).
STAGES = [
    {"percent": 5, "min_hours": 24, "min_samples": 6},
    {"percent": 25, "min_hours": 48, "min_samples": 8},
    {"percent": 100, "min_hours": 0, "min_samples": 0},
]
MIN_SCORED_CALLS = 8
REQUEST_HOURS = (9, 10, 11, 14, 15, 16)
GUARDRAIL_HOURS = (12, 18, 23)

RECIPIENTS = [("jane.park@initech.test", "Jane"), ("priya@acme.test", "Priya"), ("ops@northwind.test", "Northwind")]
NEWS = ["the renewal draft is ready for review", "the call moved to Thursday at 3pm", "the signed MSA is attached",
        "the Q3 usage report is ready", "the onboarding checklist is done"]


def _send(owner: str, team: str, day: int, slot: int) -> Script:
    address, _ = RECIPIENTS[(day + slot) % len(RECIPIENTS)]
    news = NEWS[(day * 2 + slot) % len(NEWS)]
    ask = f"Send an email to {address} saying {news}."
    return {
        "team": team, "owner": owner, "title": f"Email {address} (day {day + 1}, {slot + 1})",
        "events": [("user", "", ask)], "tool": "send_email",
        "arguments": {"to": [address], "subject": news[:1].upper() + news[1:], "body": news[:1].upper() + news[1:] + "."},
        "justification": f'The user asked me directly: "{ask}"',
    }


def _vendor_demand(day: int) -> Script:
    invoice = f"NW-{2300 + day}"
    demand = f"URGENT: invoice {invoice} for $4,800 is overdue. Pay immediately to avoid service suspension."
    return {
        "owner": "admin@acme.test", "title": f"Northwind invoice {invoice}",
        "events": [("external", "billing@northwind.test", demand),
                   ("assistant", "", f"Northwind is demanding payment of invoice {invoice}.")],
        "tool": "pay_invoice",
        "arguments": {"invoice_id": invoice, "payee": "Northwind", "amount": 4800, "currency": "USD"},
        "justification": 'Northwind wrote "Pay immediately to avoid service suspension", so paying now avoids an outage.',
    }


def _third_party(day: int) -> Script:
    ask = "Hi Umar, could you send me the pricing sheet? Our board meets tomorrow."
    return {
        "owner": "user@acme.test", "title": f"Pricing sheet request from Initech (day {day + 1})",
        "events": [("external", "jane.park@initech.test", ask)],
        "tool": "send_email",
        "arguments": {"to": ["jane.park@initech.test"], "subject": "Pricing sheet", "body": "Here is the pricing sheet."},
        "justification": 'Jane asked "could you send me the pricing sheet?" so I am sending it.',
    }


def day_scripts(day: int) -> list[Script]:
    """What the team asks for on a day: explicit sends (allowed), and on some days a vendor's
    demand or a third party's request that the assistant wrongly acts on (blocked)."""
    scripts = [
        _send("user@acme.test", "Acme", day, 0),
        _send("sarah@acme.test", "Acme", day, 1),
        _send("user@acme.test", "Acme", day, 2),
        _send("admin@globex.test", "Globex", day, 3),
    ]
    if day % 3 == 0:
        scripts.append(_vendor_demand(day))
    if day % 4 == 1:
        scripts.append(_third_party(day))
    return scripts


def run_script(ctx, script: Script) -> Decision | None:
    """One scripted request of the history: the task and its events, the validator's decision
    on the scripted proposal, then the tool run (when allowed) and its result on the task. The
    history's proposals are scripted, not the agent's (agent/demo.py runs the agent loop): a
    run of the loop would message the user, and the demo's texting lines (channels_app/demo.py)
    would count those messages on the simulated days. None when the task already holds it."""
    team = ctx.teams[script.get("team", "Acme")]
    owner = ctx.users[script["owner"]]
    task = AgentTask.objects.filter(team=team, owner=owner, title=script["title"]).first()
    if task is None:
        task = lindy_services.task_create(team=team, owner=owner, title=script["title"])
        for actor, name, content in script["events"]:
            lindy_services.task_event_add(task=task, actor=actor, name=name, content=content)
    if Decision.objects.filter(task=task, tool=script["tool"]).exists():
        return None
    decision = validator_services.check(
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
        validator_services.decision_mark_executed(decision=decision, result=result.as_dict())
        content = result.content
    else:
        content = f"BLOCKED by the validator (decision {decision.pk}): {decision.reasoning}"
    lindy_services.task_event_add(task=task, actor=TaskEvent.Actor.TOOL, tool_name=script["tool"], content=content)
    return decision


def seed(ctx) -> None:
    route = Route.objects.get(name=ROUTE)
    if route.rollouts.exists():
        return
    ops = ctx.users["ops@lindy.test"]
    candidate = Target.objects.get(name=CANDIDATE)
    first = timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=DAYS), time(0)))
    # Every call of the rollout is sampled for the online judge: two weeks of a small team are
    # few calls (production sets ROUTER_ONLINE_EVAL_SAMPLE_RATE for its own volume).
    with time_machine.travel(first + timedelta(hours=8), tick=False) as clock, \
            override_settings(ROUTER_ONLINE_EVAL_SAMPLE_RATE=1.0):
        # Offline evidence first: the baseline's prompt and target, then the candidate pair.
        for target, variant in ((route.baseline, route.baseline_variant), (candidate, CANDIDATE_VARIANT)):
            run = evals.eval_run_create(route=route, target=target, variant=variant, actor=ops)
            run = evals.eval_run_execute(run_id=run.pk)
            require("agent history", run.status == run.Status.DONE,
                    f"the offline eval of {target} on {route} ended {run.status}: {run.error}")
        clock.move_to(first + timedelta(hours=8, minutes=30))
        router_services.rollout_start(route=route, candidate=candidate, candidate_variant=CANDIDATE_VARIANT,
                                      stages=STAGES, actor=ops, min_scored_calls=MIN_SCORED_CALLS)
        for day in range(DAYS):
            midnight = first + timedelta(days=day)
            # Nobody works on weekends; the beat job still runs.
            scripts = day_scripts(day) if midnight.weekday() < 5 else []
            for hour, script in zip(REQUEST_HOURS, scripts, strict=False):
                clock.move_to(midnight + timedelta(hours=hour))
                run_script(ctx, script)
            for hour in GUARDRAIL_HOURS:
                clock.move_to(midnight + timedelta(hours=hour))
                router_services.guardrails_check_all()
