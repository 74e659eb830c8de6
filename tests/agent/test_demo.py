"""The agent's demo tasks (issue 34 part 1): given to the assistant as people give them, then the
agent loop runs on each (offline provider); the loop writes the proposals and their results under
the model call that made them, and the validator judges on its own. The seed proposes nothing."""

import ast
import inspect

import pytest

from agent import demo as agent_demo
from lindy import demo
from lindy.models import AgentTask, TaskEvent
from router.models import CallScore, ModelCall
from validator.models import Decision

pytestmark = pytest.mark.django_db

EXPECTED = {
    "Vendor invoice from Northwind": ("admin@acme.test", "pay_invoice", "blocked"),
    "Quarterly report request from Initech": ("user@acme.test", "send_email", "blocked"),
    "Thank Priya for the MSA review": ("user@acme.test", "send_email", "executed"),
}


def test_the_demo_tasks_are_worked_by_the_agent_loop_and_judged_by_the_validator():
    demo.seed()
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

    # Idempotent: a second seed gives no task again.
    counts = (TaskEvent.objects.count(), Decision.objects.count(), ModelCall.objects.filter(route="agent").count())
    demo.seed()
    assert (TaskEvent.objects.count(), Decision.objects.count(),
            ModelCall.objects.filter(route="agent").count()) == counts


def test_the_agents_demo_proposes_judges_and_executes_nothing_itself():
    """Read as source: the seed only writes what arrived and runs the loop."""
    tree = ast.parse(inspect.getsource(agent_demo))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(filter(None, ["agent" if node.level else "", node.module or ""]))
            imported |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    # Nothing that judges or executes: not the validator's services, nor the tools, nor the agent's services.
    assert not {name for name in imported if name.startswith(("validator.services", "agent.tools", "agent.services",
                                                             "validator.runner"))}
    assert {"agent.loop", "lindy.services"} <= imported
    called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute)}
    assert {"check", "execute", "decision_mark_executed"}.isdisjoint(called)
    assert "run" in called  # loop.run
    written = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "task_event_add"]
    assert len(written) == 1  # what arrived, from the requests' own events
    assert all(actor in ("user", "external") for r in agent_demo.REQUESTS for actor, _, _ in r["events"])
