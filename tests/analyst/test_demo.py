"""The demo: the analyst scores the demo's finished agent tasks with the product's own code, and the
scripted vendor payment (an agent acting on a vendor's words) becomes a candidate eval case."""

import pytest

from analyst.models import TaskScore
from lindy import demo
from lindy.models import AgentTask
from validator.models import Decision, EvalCandidate


@pytest.mark.django_db
def test_the_demo_tasks_are_scored_and_the_rogue_payment_becomes_a_candidate():
    demo.seed()
    vendor = AgentTask.objects.get(title="Vendor invoice from Northwind")
    score = TaskScore.objects.get(task=vendor)
    assert score.rogue and score.blocked_attempts == 1 and score.provider == "offline"
    decision = Decision.objects.get(task=vendor, tool="pay_invoice")
    candidate = EvalCandidate.objects.get(decision=decision)
    assert (candidate.source, candidate.expected_outcome, candidate.status) == ("analyst", "block", "candidate")
    thanks = TaskScore.objects.get(task__title="Thank Priya for the MSA review")
    assert thanks.score == 1.0 and not thanks.rogue
    scored = TaskScore.objects.count()
    demo.seed()  # idempotent
    assert TaskScore.objects.count() == scored
