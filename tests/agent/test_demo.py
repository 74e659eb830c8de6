"""The agent's demo tasks (issue 34 part 1): given to the assistant as people give them, then the
agent loop runs on each (offline provider); the loop writes the proposals and their results under
the model call that made them, and the validator judges on its own. The seed proposes nothing.
The same holds for the two weeks of history (agent/demo_history.py): each day's requests arrive on
their tasks and the loop works them, the validator judging through the gateway (rollout arms)."""

import ast
import inspect

import pytest

from agent import demo as agent_demo
from agent import demo_history
from agent.models import OutboxEntry
from lindy import demo
from lindy.models import AgentTask, TaskEvent
from router.models import CallScore, ModelCall, Rollout
from validator.models import Decision

pytestmark = pytest.mark.django_db

EXPECTED = {
    "Vendor invoice from Northwind": ("admin@acme.test", "pay_invoice", "blocked"),
    "Quarterly report request from Initech": ("user@acme.test", "send_email", "blocked"),
    "Thank Priya for the MSA review": ("user@acme.test", "send_email", "executed"),
    "Reply to Initech about the MSA redline": ("user@acme.test", "send_email", "executed"),
}
# Standing instructions and requests the offline assistant has no tool for: it answers, nothing to judge.
ACKNOWLEDGED = {"Weekly revenue report", "Plan the Q3 offsite", "Globex board deck"}


def test_the_demo_tasks_are_worked_by_the_agent_loop_and_judged_by_the_validator(seeded_demo):
    tasks = {t.title: t for t in AgentTask.objects.filter(title__in=EXPECTED).select_related("owner")}
    assert set(tasks) == set(EXPECTED)
    for title, (owner, tool, status) in EXPECTED.items():
        task = tasks[title]
        assert task.owner.email == owner
        # What arrived was written as it arrived: no assistant or tool event the loop did not write.
        written = task.events.filter(actor__in=[TaskEvent.Actor.ASSISTANT, TaskEvent.Actor.TOOL])
        assert written.exists() and not written.filter(model_call_id=None).exists(), title
        calls = ModelCall.objects.filter(pk__in=written.values_list("model_call_id", flat=True))
        assert {(c.route, c.provider) for c in calls} == {("agent", "offline")}, title
        assert calls.count() == len(set(written.values_list("model_call_id", flat=True))), title

        # The proposal: the assistant's, under its model call, with the justification the agent wrote.
        proposal = task.events.get(actor=TaskEvent.Actor.ASSISTANT, tool_name=tool)
        assert proposal.content.startswith("Proposed: ") and proposal.tool_arguments["justification"]
        result = task.events.get(actor=TaskEvent.Actor.TOOL, tool_name=tool)
        assert result.seq == proposal.seq + 1 and result.model_call_id == proposal.model_call_id

        # The validator's own decision on it, through its model (the offline rules), tied to the
        # agent's tool call, and the outcome signal on the agent's model call.
        decision = Decision.objects.get(task=task)
        assert (decision.tool, decision.status) == (tool, status), decision.reasoning
        # By its model (the offline rules), or before it by its own deterministic argument check.
        if decision.model_call_id:
            assert ModelCall.objects.get(pk=decision.model_call_id).route == "validator"
        else:
            assert decision.reasoning.startswith("Blocked before any model was asked") and status == "blocked"
        assert decision.tool_call_id.startswith("toolu_offline_")
        assert decision.justification == proposal.tool_arguments["justification"]
        blocked = CallScore.objects.get(call_id=proposal.model_call_id, metric="validator.blocked")
        assert blocked.value == (1.0 if status == "blocked" else 0.0) and blocked.source == "validator"
        if status == "blocked":
            assert result.content.startswith(f"BLOCKED by the validator (decision {decision.pk})")
        else:
            assert result.content == decision.execution_result["content"]

    vendor = Decision.objects.get(task=tasks["Vendor invoice from Northwind"])
    assert vendor.arguments == {"invoice_id": "NW-2291", "payee": "Northwind", "amount": 4800.0, "currency": "USD"}
    assert vendor.justification == 'billing@northwind.test wrote: "Pay immediately to avoid service suspension."'
    assert "external party" in vendor.reasoning
    report = Decision.objects.get(task=tasks["Quarterly report request from Initech"])
    assert report.arguments["to"] == ["jane.park@initech.test"]
    assert report.justification == 'jane.park@initech.test asked: "Hi Umar, can you send me the report?"'
    thanks = Decision.objects.get(task=tasks["Thank Priya for the MSA review"])
    assert thanks.arguments == {"to": ["priya@acme.test"], "subject": "Thanks for turning the MSA review around so fast",
                                "body": "thanks for turning the MSA review around so fast."}
    assert thanks.model_call_id
    assert thanks.justification.startswith('The user asked me directly: "Send an email to priya@acme.test')

    redline = Decision.objects.get(task=tasks["Reply to Initech about the MSA redline"])
    assert redline.arguments["to"] == ["legal@initech.test"] and "priya@acme.test" in redline.arguments["body"]

    for task in AgentTask.objects.filter(title__in=ACKNOWLEDGED):
        assert not Decision.objects.filter(task=task).exists(), task.title
        answered = task.events.filter(actor=TaskEvent.Actor.ASSISTANT)
        assert answered.exists() and not answered.filter(model_call_id=None).exists(), task.title

    _assert_the_history_is_the_loops()

    # No task of the demo has an assistant's or a tool's event that no model call made.
    written = TaskEvent.objects.filter(actor__in=[TaskEvent.Actor.ASSISTANT, TaskEvent.Actor.TOOL])
    assert written.count() > 100 and not written.filter(model_call_id=None).exists()

    # Idempotent: a second seed gives no task again (nor the history any request).
    counts = (TaskEvent.objects.count(), Decision.objects.count(), ModelCall.objects.filter(route="agent").count())
    demo.seed()
    assert (TaskEvent.objects.count(), Decision.objects.count(),
            ModelCall.objects.filter(route="agent").count()) == counts


def _history_scripts() -> dict[str, demo_history.Script]:
    return {script["title"]: script for day in range(demo_history.DAYS) for script in demo_history.day_scripts(day)}


def _assert_the_history_is_the_loops():
    """Every history task: what arrived as the script says, then only events the loop wrote, each
    under an agent model call, and the validator's decision the script expects (checked, not forced)."""
    scripts = _history_scripts()
    tasks = list(AgentTask.objects.filter(title__in=scripts).select_related("owner", "team"))
    # Two weeks of working days: ten of the fourteen, four requests each and a few more.
    assert len(tasks) >= 40
    for task in tasks:
        script = scripts[task.title]
        assert (task.owner.email, task.team.name) == (script["owner"], script.get("team", "Acme")), task.title
        events = list(task.events.order_by("seq"))
        arrived = [(e.actor, e.name, e.content) for e in events[:len(script["events"])]]
        assert arrived == script["events"] and not any(e.model_call_id for e in events[:len(arrived)]), task.title
        written = events[len(arrived):]
        assert written and all(e.actor in (TaskEvent.Actor.ASSISTANT, TaskEvent.Actor.TOOL) for e in written)
        assert all(e.model_call_id for e in written), task.title
        decided = dict(Decision.objects.filter(task=task).values_list("tool", "status"))
        assert decided == script["expect"], task.title
        # Each decision under the proposal the loop wrote, with the justification the agent gave.
        for decision in Decision.objects.filter(task=task):
            proposal = task.events.get(actor=TaskEvent.Actor.ASSISTANT, tool_name=decision.tool)
            assert decision.justification == proposal.tool_arguments["justification"]
            assert decision.tool_call_id.startswith("toolu_offline_")
    history_calls = ModelCall.objects.filter(pk__in=TaskEvent.objects.filter(task__in=tasks).exclude(
        model_call_id=None).values_list("model_call_id", flat=True))
    assert set(history_calls.values_list("route", "provider").distinct()) == {("agent", "offline")}

    # The validator judged the history's sends through the gateway: each of its model calls is in
    # the rollout, on the arm the router serves the user.
    rollout = Rollout.objects.get(route__name="validator")
    judged = Decision.objects.filter(task__in=tasks).exclude(model_call_id=None)
    calls = ModelCall.objects.filter(pk__in=judged.values_list("model_call_id", flat=True))
    assert calls.count() == judged.count() == Decision.objects.filter(task__in=tasks, tool="send_email",
                                                                         status="executed").count()
    assert set(calls.values_list("rollout_id", flat=True)) == {rollout.pk}
    # One arm per user (their bucket), Umar's the candidate's (internal users get it first).
    arms = list(calls.order_by().values_list("user__email", "arm").distinct())
    assert len(arms) == len(dict(arms)) == 3 and dict(arms)["user@acme.test"] == "candidate"
    # The loop's message after each action: the history runs before the channels demo gives its
    # users texting profiles, so none went out as a text (the texting demo's figures are its own).
    replies = OutboxEntry.objects.filter(task__in=tasks, tool="reply_to_user")
    assert replies.count() == len(tasks)
    assert all(r.status == "failed" and "never texted in" in r.error for r in replies)


def _imports_and_calls(module) -> tuple[set[str], set[str], ast.AST]:
    tree = ast.parse(inspect.getsource(module))
    base_package = module.__name__.rsplit(".", 1)[0]
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(filter(None, [base_package if node.level else "", node.module or ""]))
            imported |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute)}
    return imported, called, tree


def test_the_agents_demos_propose_judge_and_execute_nothing_themselves():
    """Read as source: the seed only writes what arrived and runs the loop; the history gives its
    requests through the same function."""
    imported, called, tree = _imports_and_calls(agent_demo)
    # Nothing that judges or executes: not the validator's services, nor the tools, nor the agent's services.
    assert not {name for name in imported if name.startswith(("validator.services", "agent.tools", "agent.services",
                                                             "validator.runner"))}
    assert {"agent.loop", "lindy.services"} <= imported
    assert {"check", "execute", "decision_mark_executed"}.isdisjoint(called)
    assert "run" in called  # loop.run
    written = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "task_event_add"]
    assert len(written) == 1  # what arrived, from the requests' own events
    requests = [*agent_demo.REQUESTS, *_history_scripts().values()]
    assert all(actor in ("user", "external") for r in requests for actor, _, _ in r["events"])

    history_imports, history_calls, _ = _imports_and_calls(demo_history)
    assert "agent.demo.give" in history_imports and "task_event_add" not in history_calls
    assert not {name for name in history_imports if name.startswith(("validator.services", "agent.tools",
                                                                     "agent.services", "lindy.services"))}
