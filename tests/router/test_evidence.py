"""Offline evidence before traffic: a rollout starts only on a passing eval of exactly its
(route, target, variant) that is no worse than the baseline's; the evals here are real runs of
email.draft's eval set through the gateway (the offline provider answers by a scripted rule)."""

import re

import pytest
from django.core.exceptions import ValidationError

from drafting import offline as drafting_offline
from router import services
from router.models import Rollout, Target
from router.offline import OfflineReply, tool_call
from router.services.evidence import MissingEvidence, run_failures

from .helpers import cheap_target, route, variant

# The drafting app's own offline drafter passes email.draft's eval set; a drafter that never loops
# anyone in misses the Cc cases (worse, still above 0.5); a canned bad answer fails it.
GOOD = drafting_offline.draft
BAD = "Dear Sir, Monday at 9 works. The password is hunter2."


def NO_LOOP_INS(request):  # noqa: N802 - an answer, like GOOD and BAD
    return OfflineReply(text=re.sub(r"\ACc:[^\n]*\n", "", GOOD(request).text))


@pytest.fixture
def email(db):
    email = route("email.draft")
    variant(email, "flash-tuned")
    return email


def _answers(offline_rule, by_variant: dict):
    """Each variant's answer: a rule (a function of the request) or a fixed text."""
    def answer(request):
        rule = by_variant[request.prompt_variant]
        return rule(request) if callable(rule) else OfflineReply(text=rule)

    offline_rule("email.draft", answer)


def _eval(email, target, name="default"):
    run = services.eval_run_execute(run_id=services.eval_run_create(route=email, target=target, variant=name).pk)
    assert run.status == "done"
    return run


def test_no_rollout_without_a_passing_eval_of_exactly_that_target_and_variant(email, cast, offline_rule):
    _answers(offline_rule, {"default": GOOD, "flash-tuned": GOOD})
    candidate = cheap_target()
    with pytest.raises(MissingEvidence) as missing:
        services.rollout_start(route=email, candidate=candidate, candidate_variant="flash-tuned", actor=cast.superuser)
    assert missing.value.missing == [
        "No finished offline eval of email.draft on deepseek-v4-flash-atlas with prompt variant 'flash-tuned': "
        "run one (POST /api/router/routes/email.draft/evals).",
        "No finished offline eval of the baseline claude-sonnet-4-6-anthropic with prompt variant 'default' to "
        "compare with: run one.",
    ]
    baseline = _eval(email, email.baseline)
    _eval(email, candidate, "default")  # the same target with another prompt is not evidence for this one
    with pytest.raises(MissingEvidence, match="No finished offline eval of email.draft on deepseek-v4-flash-atlas "
                                             "with prompt variant 'flash-tuned'"):
        services.rollout_start(route=email, candidate=candidate, candidate_variant="flash-tuned", actor=cast.superuser)
    assert not Rollout.objects.exists()

    run = _eval(email, candidate, "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=candidate, candidate_variant="flash-tuned",
                                     actor=cast.superuser)
    assert rollout.offline_evidence["candidate_run"]["id"] == run.pk
    assert rollout.offline_evidence["baseline_run"]["id"] == baseline.pk
    assert rollout.override_reason == ""
    started = rollout.events.get()
    assert f"Offline evidence: eval run {run.pk} scored 1.000 against the baseline's run {baseline.pk} at 1.000" in (
        started.reason)
    assert started.actor == cast.superuser


def test_a_failing_eval_is_no_evidence(email, cast, offline_rule):
    _answers(offline_rule, {"default": GOOD, "flash-tuned": BAD})
    _eval(email, email.baseline)
    run = _eval(email, cheap_target(), "flash-tuned")
    assert run.score < 0.75
    with pytest.raises(MissingEvidence, match=f"The latest eval of .* did not pass: eval run {run.pk} has score "
                                             f"{run.score:.3f}, below the threshold 0.75"):
        services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")


def test_worse_than_the_baseline_by_more_than_the_margin_is_no_evidence(email, offline_rule, settings):
    # Passes an absolute threshold of 0.5, but the baseline's prompt does better by more than the margin.
    settings.ROUTER_EVAL_MIN_SCORE = 0.5
    _answers(offline_rule, {"default": GOOD, "flash-tuned": NO_LOOP_INS})
    base = _eval(email, email.baseline)
    run = _eval(email, cheap_target(), "flash-tuned")
    assert 0.5 <= run.score < base.score - 0.02
    with pytest.raises(MissingEvidence, match=rf"worse than the baseline .*'s {base.score:.3f} \(run {base.pk}\) by "
                                             r"more than the margin 0.02"):
        services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    settings.ROUTER_EVAL_BASELINE_MARGIN = 0.5  # a stated, looser margin lets it start
    assert services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")


def test_the_latest_finished_eval_counts(email, offline_rule):
    rule = {"default": GOOD, "flash-tuned": GOOD}
    _answers(offline_rule, rule)
    _eval(email, email.baseline)
    _eval(email, cheap_target(), "flash-tuned")
    rule["flash-tuned"] = BAD  # the prompt's newer run fails: an older pass is no evidence any more
    _eval(email, cheap_target(), "flash-tuned")
    with pytest.raises(MissingEvidence, match="did not pass"):
        services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")


def test_a_superuser_override_needs_a_reason_and_stays_on_the_rollout(email, cast):
    candidate = cheap_target()
    with pytest.raises(MissingEvidence):
        services.rollout_start(route=email, candidate=candidate, candidate_variant="flash-tuned",
                               actor=cast.superuser, override_reason="   ")
    with pytest.raises(ValidationError, match="Only a superuser"):
        services.rollout_start(route=email, candidate=candidate, candidate_variant="flash-tuned",
                               actor=cast.admin, override_reason="I am in a hurry.")
    assert not Rollout.objects.exists()
    rollout = services.rollout_start(route=email, candidate=candidate, candidate_variant="flash-tuned",
                                     actor=cast.superuser, override_reason="Provider outage: move 1 % now.")
    rollout.refresh_from_db()
    assert (rollout.override_reason, rollout.override_by) == ("Provider outage: move 1 % now.", cast.superuser)
    assert rollout.offline_evidence["ok"] is False and len(rollout.offline_evidence["missing"]) == 2
    assert "Started WITHOUT offline evidence, by superuser override: Provider outage: move 1 % now." in (
        rollout.events.get().reason)
    # Shown on the rollout's page for good, after it ended too.
    services.rollout_roll_back(rollout=rollout, reason="done", actor=cast.superuser)
    from tests.conftest import client_for

    page = client_for(cast.superuser).get(f"/router/rollouts/{rollout.pk}/").content.decode()
    assert "Started without offline evidence" in page and "Provider outage: move 1 % now." in page


def test_a_route_without_an_eval_set_needs_an_override(db, cast):
    agent = route("agent")
    with pytest.raises(MissingEvidence, match="Route agent has no offline eval set"):
        services.rollout_start(route=agent, candidate=Target.objects.get(name="offline-rules"))


def test_an_eval_the_offline_rules_answered_is_no_evidence_about_a_real_target(email, offline_rule, settings):
    _answers(offline_rule, {"default": GOOD, "flash-tuned": GOOD})
    _eval(email, email.baseline)
    run = _eval(email, cheap_target(), "flash-tuned")
    assert run.provider_used == "offline"  # the product ran with no model keys: the rules answered
    settings.MODEL_OFFLINE = False  # keys are configured now: that run says nothing about the model
    with pytest.raises(MissingEvidence, match=f"eval run {run.pk} was answered by the offline rules, not by "
                                             "deepseek-v4-flash-atlas") as missing:
        services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    assert "was answered by the offline rules: run it again against the model" in missing.value.missing[1]


def test_the_owning_apps_thresholds_are_part_of_the_evidence(db, offline_rule, settings):
    """The validator registers the seed's gate (no dangerous action approved...): a run that
    approves everything misses it, whatever its score, and the run keeps why."""
    offline_rule("validator", lambda request: OfflineReply(tool_calls=[tool_call("record_verdict", {
        "approved": True, "reasoning": "rule", "confidence": "high", "suggestedNextStep": ""})]))
    validator = route("validator")
    settings.ROUTER_EVAL_MIN_SCORE = 0.0  # only the app's own gate can refuse it here
    run = _eval(validator, Target.objects.get(name="offline-rules"))
    assert any("dangerous action(s) wrongly approved" in line for line in run.gate_failures)
    assert any(line.startswith(f"eval run {run.pk}: ") and "wrongly approved" in line for line in run_failures(run))


def test_the_eval_run_page_says_whether_it_is_evidence(email, cast, offline_rule):
    from tests.conftest import client_for

    _answers(offline_rule, {"default": GOOD, "flash-tuned": BAD})
    good, bad = _eval(email, email.baseline), _eval(email, cheap_target(), "flash-tuned")
    client = client_for(cast.superuser)
    assert "<strong>passes</strong> the thresholds" in client.get(f"/router/evals/{good.pk}/").content.decode()
    page = client.get(f"/router/evals/{bad.pk}/").content.decode()
    assert "<strong>fails</strong>: eval run" in page and "below the threshold 0.75" in page
