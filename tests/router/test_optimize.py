"""Prompt optimization against the eval set (router.services.optimize, the gepa library): runs on
the validator's route with the offline provider, whose reflection is deterministic mutations."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from router import services, variants
from router.models import OptimizationRun, PromptVariant, Rollout, Target
from router.services import optimize
from router.services.evidence import MissingEvidence
from tests.conftest import client_for
from validator import prompts as validator_prompts

from .helpers import route


@pytest.fixture
def validator(db):
    return route("validator")


def priced_offline_target() -> Target:
    """An offline-rules target with prices, so the dollar budget is exercised with no network."""
    return Target.objects.create(name="priced-offline", provider="offline", model="lindy-offline-rules-1",
                                 input_price=Decimal("3"), output_price=Decimal("15"))


def _run(validator, target, **budget) -> OptimizationRun:
    run = services.optimization_run_create(route=validator, target=target, **budget)
    return services.optimization_run_execute(run_id=run.pk)


def test_a_run_stops_at_its_call_budget_and_stores_candidates_no_worse_than_the_parent(validator):
    target = Target.objects.get(name="offline-rules")
    run = _run(validator, target, budget_usd="1", budget_calls=250)
    assert run.status == "done", (run.error, run.log)
    assert run.spent_calls <= 250
    assert "budget" in run.stop_reason
    assert run.generation >= 1 and run.parent_score is not None
    stored = list(PromptVariant.objects.filter(optimization=run))
    assert stored, run.log
    for candidate in stored:
        assert candidate.eval_score >= candidate.parent_score == run.parent_score
        assert candidate.parent == "default"
        assert candidate.components["system"] != validator_prompts.PRINCIPLES
        assert candidate.diff.startswith("--- parent/system")
        # A stored candidate is a buildable variant: the validator's own builder serves its text.
        assert candidate.name in variants.buildable("validator")
        assert validator_prompts.system_prompt(candidate.name) == candidate.components["system"]


def test_a_run_stops_before_a_call_would_exceed_the_dollar_budget(validator):
    target = priced_offline_target()
    run = _run(validator, target, budget_usd="0.5", budget_calls=100_000)
    assert run.status == "done", (run.error, run.log)
    assert Decimal("0") < run.spent_usd <= Decimal("0.5")
    assert "budget" in run.stop_reason


def test_a_budget_too_small_for_the_parent_stores_nothing(validator):
    reserve = optimize._holdout_reserve(optimize.split_cases("validator", optimize.evals.suite_cases("validator")))
    run = _run(validator, Target.objects.get(name="offline-rules"), budget_usd="1", budget_calls=reserve + 5)
    assert run.status == "done" and run.spent_calls <= 5
    assert "did not cover" in run.stop_reason
    assert not PromptVariant.objects.filter(optimization=run).exists()


def test_a_candidate_cannot_start_a_rollout_without_its_own_passing_offline_eval(validator, cast):
    target = Target.objects.get(name="offline-rules")
    run = _run(validator, target, budget_usd="1", budget_calls=250)
    candidate = PromptVariant.objects.filter(optimization=run).first()
    assert candidate is not None
    # The optimizer's own scores are not evidence: the router's offline eval of the candidate is.
    baseline = services.eval_run_execute(run_id=services.eval_run_create(
        route=validator, target=validator.baseline, variant=validator.baseline_variant).pk)
    assert baseline.status == "done"
    with pytest.raises(MissingEvidence, match=f"No finished offline eval of validator on offline-rules with prompt "
                                              f"variant '{candidate.name}'"):
        services.rollout_start(route=validator, candidate=target, candidate_variant=candidate.name,
                               actor=cast.superuser)
    assert not Rollout.objects.exists()
    own = services.eval_run_execute(run_id=services.eval_run_create(
        route=validator, target=target, variant=candidate.name).pk)
    assert own.status == "done" and own.total == run.case_count


@pytest.fixture
def optimized(validator):
    """A candidate the optimizer stored on the validator route (nothing evaluated it since)."""
    target = Target.objects.get(name="offline-rules")
    run = _run(validator, target, budget_usd="1", budget_calls=250)
    candidate = PromptVariant.objects.filter(optimization=run).first()
    assert candidate is not None, run.log
    return candidate, target


OVERRIDE = "Evals are down; I vouch for it."


def test_the_superuser_override_does_not_start_an_optimizer_candidate_without_its_own_eval(validator, cast,
                                                                                           optimized):
    candidate, target = optimized
    with pytest.raises(ValidationError) as refused:
        services.rollout_start(route=validator, candidate=target, candidate_variant=candidate.name,
                               actor=cast.superuser, override_reason=OVERRIDE)
    assert not isinstance(refused.value, MissingEvidence)
    assert refused.value.error_list[0].code == "unevaluated_candidate"
    [message] = refused.value.messages
    assert f"Prompt variant '{candidate.name}' was written by optimization run {candidate.optimization_id}" in message
    assert "has no finished offline eval on offline-rules" in message and "override does not apply" in message
    assert not Rollout.objects.exists()


def test_an_optimizer_candidate_whose_own_eval_failed_is_refused_even_with_the_override(validator, cast, optimized):
    candidate, target = optimized
    own = services.eval_run_execute(run_id=services.eval_run_create(
        route=validator, target=target, variant=candidate.name).pk)
    type(own).objects.filter(pk=own.pk).update(score=0.1)
    with pytest.raises(ValidationError, match=rf"its latest offline eval \(run {own.pk}\) did not pass: .*score 0.100"):
        services.rollout_start(route=validator, candidate=target, candidate_variant=candidate.name,
                               actor=cast.superuser, override_reason=OVERRIDE)
    assert not Rollout.objects.exists()


def test_with_its_own_passing_eval_an_optimizer_candidate_starts_on_evidence_alone(validator, cast, optimized):
    candidate, target = optimized
    own = services.eval_run_execute(run_id=services.eval_run_create(
        route=validator, target=target, variant=candidate.name).pk)
    assert own.status == "done" and own.score >= 0.75, own.score
    # No eval of the baseline to compare with: on another route the superuser may override that
    # piece; the validator's route moves only on evidence (issue 29), so it needs the baseline's eval.
    with pytest.raises(MissingEvidence, match="No finished offline eval of the baseline"):
        services.rollout_start(route=validator, candidate=target, candidate_variant=candidate.name, actor=cast.superuser)
    with pytest.raises(MissingEvidence, match="no override applies"):
        services.rollout_start(route=validator, candidate=target, candidate_variant=candidate.name,
                               actor=cast.superuser, override_reason=OVERRIDE)
    services.eval_run_execute(run_id=services.eval_run_create(
        route=validator, target=validator.baseline, variant=validator.baseline_variant).pk)
    rollout = services.rollout_start(route=validator, candidate=target, candidate_variant=candidate.name,
                                     actor=cast.superuser)
    assert rollout.candidate_variant == candidate.name and rollout.override_reason == ""


def test_the_rollout_api_refuses_an_unevaluated_optimizer_candidate_with_the_override(validator, cast, optimized,
                                                                                      api_for):
    candidate, target = optimized
    response = api_for(cast.superuser).post("/api/router/routes/validator/rollouts", {
        "target": target.name, "variant": candidate.name, "override_reason": OVERRIDE})
    assert response.status_code == 409, response.content
    message = response.json()["error"]["message"]
    assert f"written by optimization run {candidate.optimization_id}" in message and "has no finished offline eval" in message
    assert not Rollout.objects.exists()


def test_an_optimizer_candidate_cannot_become_the_baseline_without_its_own_passing_eval(validator, cast, optimized):
    # The baseline serves every user at once: the same rule as a rollout, on the route page too.
    candidate, target = optimized
    before = (validator.baseline_id, validator.baseline_variant)
    client = client_for(cast.superuser)
    url = f"/router/routes/{validator.name}/baseline/"
    response = client.post(url, {"baseline": target.pk, "baseline_variant": candidate.name})
    assert response.status_code == 409
    assert "has no finished offline eval" in response.content.decode()
    validator.refresh_from_db()
    assert (validator.baseline_id, validator.baseline_variant) == before
    with pytest.raises(ValidationError) as refused:
        services.route_baseline_set(route=validator, baseline=target, baseline_variant=candidate.name,
                                    actor=cast.superuser)
    assert refused.value.error_list[0].code == "unevaluated_candidate"

    services.eval_run_execute(run_id=services.eval_run_create(route=validator, target=target, variant=candidate.name).pk)
    assert client.post(url, {"baseline": target.pk, "baseline_variant": candidate.name}).status_code == 302
    validator.refresh_from_db()
    assert (validator.baseline_id, validator.baseline_variant) == (target.pk, candidate.name)


def test_the_admin_cannot_write_eval_runs_or_scores(validator, cast):
    # Hand-made evidence would wave a prompt through its eval or its guardrails with no audit event.
    client = client_for(cast.superuser)
    for model in ("evalrun", "callscore", "modelcall"):
        assert client.get(f"/admin/router/{model}/").status_code == 200
        assert client.get(f"/admin/router/{model}/add/").status_code == 403


@pytest.mark.parametrize("budget, message", [
    ({"budget_usd": "0"}, "more than 0"),
    ({"budget_usd": "-1"}, "more than 0"),
    ({"budget_usd": "nan"}, "more than 0"),
    ({"budget_usd": "abc"}, "must be a number"),
    ({"budget_usd": "0.00001"}, "at most 4 decimal places"),
    ({"budget_usd": "1.00004"}, "at most 4 decimal places"),
    ({"budget_usd": "1", "budget_calls": 0}, "call budget"),
    ({"budget_usd": "1", "budget_tokens": -5}, "token budget"),
])
def test_bad_budgets_are_refused_and_nothing_is_recorded(validator, budget, message):
    with pytest.raises(ValidationError, match=message):
        services.optimization_run_create(route=validator, target=validator.baseline, **budget)
    assert not OptimizationRun.objects.exists()


def test_a_route_nobody_registered_for_optimization_is_refused(db):
    judge = route("router.online_eval")
    with pytest.raises(ValidationError, match="cannot be optimized"):
        services.optimization_run_create(route=judge, target=judge.baseline, budget_usd="1")


def test_one_run_at_a_time_per_route(validator):
    services.optimization_run_create(route=validator, target=validator.baseline, budget_usd="1")
    with pytest.raises(ValidationError, match="already has an optimization"):
        services.optimization_run_create(route=validator, target=validator.baseline, budget_usd="1")


def test_the_command_states_the_budget_and_runs_to_it(validator, capsys):
    call_command("optimize_prompt", "validator", "--target", "offline-rules", "--budget-usd", "1",
                 "--budget-calls", "200", "--inline")
    out = capsys.readouterr().out
    assert "Budget: $1" in out and "200 calls" in out
    run = OptimizationRun.objects.get()
    assert run.status == "done" and run.spent_calls <= 200
    assert f"spent {run.spent_calls} calls" in out


def test_the_command_queues_the_run_by_default_and_leaves_it_to_a_worker(validator, capsys, monkeypatch,
                                                                        django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("lindy.queue.enqueue_or_log", lambda name, *args, **kw: sent.append((name, args)) or True)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        call_command("optimize_prompt", "validator", "--target", "offline-rules", "--budget-usd", "2",
                     "--budget-calls", "300")
    out = capsys.readouterr().out
    run = OptimizationRun.objects.get()
    assert f"Optimization #{run.pk}: validator on offline-rules" in out and "Budget: $2, 300 calls" in out
    assert "Queued on Celery. Follow it on the route's page (Models -> validator)." in out
    assert "spent" not in out and "Generations" not in out  # nothing ran here
    assert len(callbacks) == 1 and sent == [(optimize.OPTIMIZE_TASK, (run.pk,))]  # queued once it committed
    assert (run.status, run.spent_calls, run.generation, run.attempts) == ("queued", 0, 0, 0)
    assert not PromptVariant.objects.filter(optimization=run).exists()


def test_the_offline_reflection_is_deterministic(validator):
    target = Target.objects.get(name="offline-rules")
    first = _run(validator, target, budget_usd="1", budget_calls=150)
    names = sorted(PromptVariant.objects.filter(optimization=first).values_list("components", flat=True),
                   key=str)
    PromptVariant.objects.filter(optimization=first).delete()
    second = _run(validator, target, budget_usd="1", budget_calls=150)
    again = sorted(PromptVariant.objects.filter(optimization=second).values_list("components", flat=True), key=str)
    assert names == again
    assert optimize.optimizable("validator") and not optimize.optimizable("router.online_eval")


def test_the_route_page_button_queues_a_run_and_its_page_shows_progress_and_spend(validator, cast,
                                                                                 django_capture_on_commit_callbacks):
    from tests.conftest import client_for

    client = client_for(cast.superuser)
    page = client.get("/router/routes/validator/")
    assert b'data-action="optimize"' in page.content and b"Offline provider in use" in page.content
    target = Target.objects.get(name="offline-rules")
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/router/routes/validator/optimizations/", {
            "target": target.pk, "parent_variant": "default", "budget_usd": "2", "budget_calls": "150",
            "budget_tokens": "1000000"})
    run = OptimizationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/router/optimizations/{run.pk}/"
    assert (run.status, run.budget_calls, run.budget_usd) == ("queued", 150, Decimal("2"))
    services.optimization_run_execute(run_id=run.pk)  # what the worker does
    detail = client.get(f"/router/optimizations/{run.pk}/", HTTP_HX_REQUEST="true")
    assert b"<html" not in detail.content and b"data-spend" in detail.content
    run.refresh_from_db()
    assert f"<strong>{run.spent_calls}</strong> of 150 calls".encode() in detail.content
    for candidate in run.candidates.all():
        assert f'data-candidate-variant="{candidate.name}"'.encode() in detail.content
    # Stored candidates are listed on the route page as stored variants that need their own eval.
    assert b"data-stored-variant" in client.get("/router/routes/validator/").content


def test_the_button_refuses_a_bad_budget_with_a_400_and_records_nothing(validator, cast):
    from tests.conftest import client_for

    response = client_for(cast.superuser).post("/router/routes/validator/optimizations/", {
        "target": Target.objects.get(name="offline-rules").pk, "parent_variant": "default", "budget_usd": "-3",
        "budget_calls": "10", "budget_tokens": "10"})
    assert response.status_code == 400 and not OptimizationRun.objects.exists()
    assert client_for(cast.admin).post("/router/routes/validator/optimizations/", {}).status_code == 404


@pytest.mark.django_db(transaction=True)  # the heartbeat thread writes through its own connection
def test_a_running_optimization_beats_while_one_call_blocks(settings, monkeypatch):
    import time

    import gepa

    settings.ROUTER_OPTIMIZE_HEARTBEAT_SECONDS = 0.05
    run = services.optimization_run_create(route=route("validator"), target=Target.objects.get(name="offline-rules"),
                                           budget_usd="1", budget_calls=200)
    seen = []

    def one_long_call(**kwargs):  # gepa blocked on one model call: no write of the run's own
        before = OptimizationRun.objects.get(pk=run.pk).heartbeat_at
        time.sleep(0.5)
        seen.append((before, OptimizationRun.objects.get(pk=run.pk).heartbeat_at))
        raise RuntimeError("stopped by the test")

    monkeypatch.setattr(gepa, "optimize", one_long_call)
    services.optimization_run_execute(run_id=run.pk, task_id="task-1")
    (before, after), = seen
    assert after > before  # beaten while the call blocked: its worker is alive, nobody takes it over


# A whole worker restarted (its message unacknowledged until the broker's visibility timeout): the
# recovery sweep and the claim decide who runs the run, and the next delivery resumes it.


class WorkerKilled(BaseException):  # noqa: N818 - like a SIGKILL: no `except Exception` stops it
    """Stands for the worker dying right after gepa stored a generation."""


def _killed_after_generation(validator, monkeypatch, generation=2) -> OptimizationRun:
    original = optimize.Progress.on_state_saved

    def saved_then_killed(self, event):
        original(self, event)
        if event["iteration"] >= generation:
            raise WorkerKilled

    monkeypatch.setattr(optimize.Progress, "on_state_saved", saved_then_killed)
    run = services.optimization_run_create(route=validator, target=Target.objects.get(name="offline-rules"),
                                           budget_usd="1", budget_calls=400)
    with pytest.raises(WorkerKilled):
        services.optimization_run_execute(run_id=run.pk, task_id="t1")
    monkeypatch.setattr(optimize.Progress, "on_state_saved", original)
    run.refresh_from_db()
    assert (run.status, run.lease_task_id, run.attempts) == ("running", "t1", 1)
    assert run.state and run.generation >= generation
    return run


@pytest.fixture
def queued(monkeypatch):
    sent = []
    monkeypatch.setattr("lindy.queue.enqueue_or_log", lambda name, *args, **kw: sent.append((name, args)) or True)
    return sent


def test_a_run_with_a_fresh_heartbeat_is_not_requeued_nor_taken_over(validator, monkeypatch, queued, settings):
    settings.ROUTER_OPTIMIZE_STALE_SECONDS = 30
    run = _killed_after_generation(validator, monkeypatch)
    assert optimize.optimization_recover() == [] and queued == []
    # Another delivery (another task id) while the holder still beats: it leaves the run alone.
    other = services.optimization_run_execute(run_id=run.pk, task_id="t2")
    assert (other.status, other.lease_task_id, other.attempts, other.generation) == (
        "running", "t1", 1, run.generation)
    assert optimize._claim(run.pk, "t3") is None
    assert not PromptVariant.objects.filter(optimization=run).exists()


def test_a_stale_run_is_swept_and_the_next_delivery_resumes_it_from_its_saved_generation(
        validator, monkeypatch, queued, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.ROUTER_OPTIMIZE_STALE_SECONDS = 30
    run = _killed_after_generation(validator, monkeypatch)
    killed_at = run.generation
    OptimizationRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
    assert optimize.optimization_recover() == [run.pk]
    assert queued == [(optimize.OPTIMIZE_TASK, (run.pk,))]
    done = services.optimization_run_execute(run_id=run.pk, task_id="t2")
    assert done.status == "done", (done.error, done.log)
    assert (done.attempts, done.lease_task_id) == (2, "t2")
    lines = [line["text"] for line in done.log]
    assert sum(text.startswith("Started:") for text in lines) == 1
    resumed = [text for text in lines if text.startswith("Resumed at generation")]
    assert resumed == [f"Resumed at generation {killed_at} (attempt 2)."]
    assert done.generation > killed_at and done.spent_calls <= 400
    assert PromptVariant.objects.filter(optimization=done).exists()
    # Finished: the sweep leaves it, and a late delivery of the first message changes nothing.
    queued.clear()
    assert optimize.optimization_recover() == [] and queued == []
    assert services.optimization_run_execute(run_id=run.pk, task_id="t1").attempts == 2


def test_an_old_queued_run_is_queued_again_and_a_new_one_is_not(validator, queued, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.ROUTER_OPTIMIZE_STALE_SECONDS = 30
    run = services.optimization_run_create(route=validator, target=validator.baseline, budget_usd="1")
    assert optimize.optimization_recover() == [] and queued == []  # just queued: its message is on the way
    OptimizationRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=31))
    assert optimize.optimization_recover() == [run.pk]
    assert queued == [(optimize.OPTIMIZE_TASK, (run.pk,))]
    assert OptimizationRun.objects.get(pk=run.pk).status == "queued"
