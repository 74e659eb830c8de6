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


@pytest.mark.django_db
def test_the_demo_failure_groups_come_from_malformed_gmail_payloads_and_the_demo_still_finishes():
    from django.db.models import Count

    from analyst.models import FailureEvent, FailureGroup

    demo.seed()  # raises DemoFailed if a step fails: the failing inputs are contained
    groups = FailureGroup.objects.annotate(users=Count("events__user", distinct=True)).order_by("-count")
    assert [(g.culprit, g.count, g.users) for g in groups] == [
        ("google_workspace.messages.headers_of", 3, 2), ("google_workspace.messages.walk", 1, 1)]
    assert all(g.triage.get("provider") == "offline" and g.triage.get("suspected_cause") for g in groups)
    events = FailureEvent.objects.all()
    assert all(e.frames and any(f["product"] and f["file"] == "google_workspace/messages.py" for f in e.frames) for e in events)
    demo.seed()  # idempotent
    assert FailureEvent.objects.count() == 4
