"""The demo: the analyst scores the demo's finished agent tasks with the product's own code, and the
scripted vendor payment (an agent acting on a vendor's words) becomes a candidate eval case."""

import pytest

from analyst.models import TaskScore
from lindy import demo
from lindy.models import AgentTask
from validator.models import Decision, EvalCandidate


@pytest.fixture(autouse=True)
def recorder():
    """Not the analyst tests' recorder: the demo texts its users through the channels' own sender
    (channels_app/demo.py checks the agent's iMessage replies went out)."""
    yield


@pytest.mark.django_db
def test_the_demo_tasks_are_scored_and_the_rogue_payment_becomes_a_candidate(seeded_demo):
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
def test_the_demo_failure_groups_come_from_hydration_runs_reading_a_malformed_gmail_and_the_demo_still_finishes():
    from django.db.models import Count

    from analyst import demo as analyst_demo
    from analyst.models import FailureEvent, FailureGroup
    from google_workspace.models import GmailAccount
    from hydration.models import Run, SourceState

    demo.seed()  # raises DemoFailed if a step fails: the failing inputs are contained
    groups = FailureGroup.objects.annotate(users=Count("events__user", distinct=True)).order_by("-count")
    assert [(g.culprit, g.count, g.users) for g in groups] == [
        ("google_workspace.messages.headers_of", 3, 2), ("google_workspace.messages.walk", 1, 1)]
    assert all(g.triage.get("provider") == "offline" and g.triage.get("suspected_cause") for g in groups)
    events = FailureEvent.objects.all()
    assert all(e.frames and any(f["product"] and f["file"] == "google_workspace/messages.py" for f in e.frames) for e in events)
    # Captured by the hydration pipeline, in runs the product made: each event names its run, and
    # its log is that run's own (the source's fetch, the run's start), not text the demo wrote.
    demo_runs = {f"hydration run {pk}" for pk in Run.objects.filter(trigger=Run.Trigger.DEMO).values_list("pk", flat=True)}
    assert {e.run for e in events} <= demo_runs and len({e.run for e in events}) == 4
    assert all(e.kind == "hydration_source" and any(step.get("name") == "gmail" for step in e.log) for e in events)
    assert not Run.objects.filter(status=Run.Status.FAILED).exists()  # a source that raises is not a failed run
    assert SourceState.objects.filter(source="gmail", status=SourceState.Status.ERROR).count() == 3
    # Nothing stays connected to the fake: each account says why it is disconnected (drafting's demo,
    # seeded after the analyst's, connects its demo people to its own local Gmail and says so).
    from drafting import demo as drafting_demo

    accounts = GmailAccount.objects.filter(user__email__in={email for email, _ in analyst_demo.RUNS})
    gone = {email: drafting_demo.GMAIL_GONE if email in drafting_demo.EMAILS else analyst_demo.FAKE_GMAIL_GONE
            for email, _ in analyst_demo.RUNS}
    assert {(a.user.email, a.status, a.status_detail) for a in accounts} == {
        (email, GmailAccount.Status.DISCONNECTED, detail) for email, detail in gone.items()}
    demo.seed()  # idempotent
    assert FailureEvent.objects.count() == 4
