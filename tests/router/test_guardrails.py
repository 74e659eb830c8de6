"""The guardrail beat job: ramps a healthy rollout stage by stage, rolls back a degraded one,
each with its recorded reason."""

from datetime import timedelta

import pytest
from django.utils import timezone

from router import gateway, services, tasks
from router.models import CallSample, CallScore, Rollout
from router.offline import OfflineReply
from router.services import guardrails
from tests.factories import UserFactory

from .helpers import cheap_target, offline_evidence, record_call, route, variant

STAGES = [
    {"percent": 1, "min_hours": 24, "min_samples": 10},
    {"percent": 10, "min_hours": 24, "min_samples": 10},
    {"percent": 100, "min_hours": 0, "min_samples": 0},
]


@pytest.fixture
def rollout(db):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    return services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned",
                                  stages=STAGES, min_scored_calls=10, score_margin=0.05, min_retention_users=5)


def _age_stage(rollout, hours=25):
    """Let time pass: the stage started `hours` ago, and the calls so far were made before it."""
    from django.db.models import F

    from router.models import ModelCall

    Rollout.objects.filter(pk=rollout.pk).update(stage_started_at=timezone.now() - timedelta(hours=hours))
    ModelCall.objects.filter(rollout=rollout).update(created_at=F("created_at") - timedelta(hours=hours + 1))


def _scored_calls(rollout, arm, values, metric="judge.quality", users=None):
    for i, value in enumerate(values):
        call = record_call(rollout=rollout, arm=arm, user=users[i % len(users)] if users else None)
        services.call_score_record(call_id=call.pk, metric=metric, value=value, source="test")


def _cohorts(rollout, baseline_back=6, candidate_back=6, size=6):
    """Retention cohorts: `size` users per arm first seen 12 days ago, `*_back` of them back 2 days ago
    (the rollout started 20 days ago: retention counts its cohorts from the rollout's start)."""
    Rollout.objects.filter(pk=rollout.pk).update(created_at=timezone.now() - timedelta(days=20))
    for arm, back in (("baseline", baseline_back), ("candidate", candidate_back)):
        for i, user in enumerate(UserFactory.create_batch(size)):
            record_call(rollout=rollout, arm=arm, user=user, ago=timedelta(days=12))
            if i < back:
                record_call(rollout=rollout, arm=arm, user=user, ago=timedelta(days=2))


def test_no_online_scores_holds_and_says_so(rollout):
    _age_stage(rollout)
    _cohorts(rollout)
    assert services.rollout_check(rollout=rollout) == "hold"
    rollout.refresh_from_db()
    assert rollout.status == "running" and rollout.percent == 1
    assert "not enough evidence yet: no online eval scores yet (10 per arm needed)" in rollout.last_check["pending"]
    assert [e.kind for e in rollout.events.all()] == ["started"]


def test_held_evidence_ramps_stage_by_stage_and_the_last_stage_completes(rollout):
    _age_stage(rollout)
    _cohorts(rollout)
    _scored_calls(rollout, "baseline", [0.8] * 12)
    _scored_calls(rollout, "candidate", [0.8, 0.78, 0.82] * 4)
    assert services.rollout_check(rollout=rollout) == "ramp"
    rollout.refresh_from_db()
    assert rollout.percent == 10 and rollout.stage_index == 1

    # Right after a ramp the new stage has not lasted its minimum: hold, nothing changes.
    assert services.rollout_check(rollout=rollout) == "hold"
    rollout.refresh_from_db()
    assert rollout.percent == 10
    assert any("minimum" in line for line in rollout.last_check["pending"])

    # The stage needs its own evidence, from its own start: the previous stage's calls count no more.
    _age_stage(rollout)
    assert services.rollout_check(rollout=rollout) == "hold"
    assert "not enough evidence yet: no online eval scores yet (10 per arm needed)" in (
        Rollout.objects.get(pk=rollout.pk).last_check["pending"])
    _scored_calls(rollout, "baseline", [0.8] * 12)
    _scored_calls(rollout, "candidate", [0.81] * 10)
    assert services.rollout_check(rollout=rollout) == "ramp"
    rollout.refresh_from_db()
    assert rollout.percent == 100
    # The last stage (no minimum here) completes the rollout by itself: the candidate is the baseline.
    assert services.rollout_check(rollout=rollout) == "complete"
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.COMPLETED
    assert (rollout.route.baseline_id, rollout.route.baseline_variant) == (rollout.candidate_id, "flash-tuned")

    events = list(rollout.events.all())
    assert [(e.kind, float(e.from_percent), float(e.to_percent)) for e in events] == [
        ("started", 0, 1), ("ramped", 1, 10), ("ramped", 10, 100), ("completed", 100, 100)]
    ramp = events[1]
    assert ramp.actor is None
    assert "judge.quality: candidate 0.800 vs baseline 0.800" in ramp.reason
    assert "7-day retention 100.0% on the candidate vs 100.0% on baseline" in ramp.reason
    assert "Next stage 10%" in ramp.reason
    assert ramp.evidence["scores"]["judge.quality"]["candidate"]["n"] == 12
    assert {c["metric"]: c["verdict"] for c in ramp.evidence["checks"]} == {
        "errors": "safe", "latency": "safe", "cost": "safe", "judge.quality": "safe", "retention": "safe"}
    assert events[3].actor is None and "the last stage (100.00%) held its evidence" in events[3].reason


def test_clearly_better_candidate_ramps(rollout):
    _age_stage(rollout)
    _cohorts(rollout)
    _scored_calls(rollout, "baseline", [0.5, 0.6, 0.7] * 10)
    _scored_calls(rollout, "candidate", [0.85, 0.9, 0.95] * 10)
    assert services.rollout_check(rollout=rollout) == "ramp"
    assert "judge.quality: candidate 0.900 vs baseline 0.600 (higher is better" in rollout.events.last().reason


def test_degraded_rollout_is_rolled_back_with_its_reason(rollout):
    _age_stage(rollout, hours=1)  # even before the stage's minimum duration
    _scored_calls(rollout, "baseline", [0.85] * 15)
    _scored_calls(rollout, "candidate", [0.6] * 15)
    assert services.rollout_check(rollout=rollout) == "roll_back"
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ROLLED_BACK and rollout.percent == 0
    event = rollout.events.last()
    assert event.kind == "rolled_back" and float(event.to_percent) == 0
    assert "judge.quality: candidate 0.600 vs baseline 0.850" in event.reason
    assert "always-valid bound [-0.250, -0.250]" in event.reason and "alpha 0.05" in event.reason
    # Nobody is on the candidate any more, and the job leaves an ended rollout alone.
    assert services.rollout_check(rollout=rollout) == "skipped"


def test_outcome_signal_where_lower_is_better_rolls_back(rollout):
    _scored_calls(rollout, "baseline", ([0.0] * 9 + [1.0]) * 12, metric="validator.blocked")  # 10% blocked
    _scored_calls(rollout, "candidate", ([1.0] * 4 + [0.0] * 6) * 12, metric="validator.blocked")  # 40%
    assert services.rollout_check(rollout=rollout) == "roll_back"
    reason = rollout.events.last().reason
    assert ("validator.blocked: candidate 0.400 vs baseline 0.100 (lower is better, margin 0.05, n=120/120 users, "
            "120/120 calls") in reason


def test_too_few_samples_holds_even_when_they_look_bad(rollout):
    _age_stage(rollout)
    _scored_calls(rollout, "baseline", [0.9] * 12)
    _scored_calls(rollout, "candidate", [0.1] * 3)  # bad, but three calls prove nothing yet
    assert services.rollout_check(rollout=rollout) == "hold"
    rollout.refresh_from_db()
    assert rollout.status == "running" and rollout.percent == 1
    assert "not enough evidence yet: judge.quality: n=3 candidate / 12 baseline users, 10 needed per arm" in (
        rollout.last_check["pending"])


def test_a_small_unsure_difference_holds_rather_than_rolls_back(rollout):
    """Enough samples, a worse mean, but the always-valid interval still reaches the margin."""
    _age_stage(rollout)
    _cohorts(rollout)
    _scored_calls(rollout, "baseline", [1.0, 0.0] * 10)
    _scored_calls(rollout, "candidate", [1.0, 0.0, 0.0, 1.0, 0.0] * 4)
    assert services.rollout_check(rollout=rollout) == "hold"
    rollout.refresh_from_db()
    assert any(line.startswith("not enough evidence yet: judge.quality: candidate 0.400 vs baseline 0.500")
               for line in rollout.last_check["pending"])


def test_error_rate_regression_rolls_back(rollout):
    for i in range(40):
        record_call(rollout=rollout, arm="baseline")
        record_call(rollout=rollout, arm="candidate", error="HTTP 500" if i % 2 else "")
    assert services.rollout_check(rollout=rollout) == "roll_back"
    assert "error rate 50.0% on the candidate vs 0.0% on baseline" in rollout.events.last().reason


def test_worse_retention_rolls_back(rollout):
    _cohorts(rollout, baseline_back=20, candidate_back=3, size=20)
    assert services.rollout_check(rollout=rollout) == "roll_back"
    reason = rollout.events.last().reason
    assert "7-day retention 15.0% on the candidate vs 100.0% on baseline" in reason


def test_sample_ratio_mismatch_flags_broken_bucketing_and_holds(rollout):
    services.rollout_stages_update(rollout=rollout, stages=[
        {"percent": 1, "min_hours": 0, "min_samples": 0}, {"percent": 50, "min_hours": 0, "min_samples": 0},
        {"percent": 100, "min_hours": 0, "min_samples": 0}])
    services.rollout_ramp(rollout=rollout, reason="Half the users, by hand.")
    rollout.refresh_from_db()
    _cohorts(rollout)
    # A 50 % stage in which four users in five land on the candidate: bucketing is broken.
    _scored_calls(rollout, "candidate", [0.8] * 40, users=UserFactory.create_batch(40))
    _scored_calls(rollout, "baseline", [0.8] * 10, users=UserFactory.create_batch(10))
    assert services.rollout_check(rollout=rollout) == "hold"
    rollout.refresh_from_db()
    assert rollout.last_check["srm_mismatch"] is True
    assert any("40 candidate / 10 baseline users in this stage for a 50% split" in line and "MISMATCH" in line
               for line in rollout.last_check["pending"])


def test_paused_rollouts_are_left_alone_and_resume(rollout, cast):
    services.rollout_pause(rollout=rollout, actor=cast.superuser)
    _scored_calls(rollout, "baseline", [0.9] * 12)
    _scored_calls(rollout, "candidate", [0.1] * 12)
    assert services.rollout_check(rollout=rollout) == "skipped"
    services.rollout_resume(rollout=rollout, actor=cast.superuser)
    assert services.rollout_check(rollout=rollout) == "roll_back"
    kinds = [(e.kind, e.actor) for e in rollout.events.all()]
    assert kinds == [("started", None), ("paused", cast.superuser), ("resumed", cast.superuser), ("rolled_back", None)]


def test_beat_task_judges_sampled_live_calls_then_checks(rollout, cast, settings, offline_rule):
    settings.ROUTER_ONLINE_EVAL_SAMPLE_RATE = 1.0
    offline_rule("email.draft", lambda request: OfflineReply(text="Thanks Jane, Friday works."))
    completion = gateway.complete(route="email.draft", user=cast.member, messages=[{"role": "user", "content": "draft"}])
    sample = CallSample.objects.get(call_id=completion.call_id)
    assert sample.response["text"] == "Thanks Jane, Friday works."

    result = tasks.guardrails_check()
    assert result == {str(rollout.pk): "hold"}
    score = CallScore.objects.get(call_id=completion.call_id)
    assert (score.metric, score.value, score.source) == ("judge.quality", 0.8, "router.online_eval")
    sample.refresh_from_db()
    assert sample.judged_at is not None
    # The judge's own call is recorded on its route, outside the rollout.
    from router.models import ModelCall

    judge_call = ModelCall.objects.get(route="router.online_eval")
    assert judge_call.rollout_id is None


def test_score_signal_interface_rejects_bad_input(rollout):
    call = record_call(rollout=rollout, arm="candidate")
    with pytest.raises(ValueError, match="Unknown metric"):
        services.call_score_record(call_id=call.pk, metric="made.up", value=1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        services.call_score_record(call_id=call.pk, metric="judge.quality", value=3)
    with pytest.raises(ValueError, match="No model call"):
        services.call_score_record(call_id=call.pk + 999, metric="judge.quality", value=1)
    services.register_metric("test.thumbs", higher_is_better=True, label="test")
    services.call_score_record(call_id=call.pk, metric="test.thumbs", value=1)
    services.call_score_record(call_id=call.pk, metric="test.thumbs", value=0)  # replaces
    assert CallScore.objects.get(call=call, metric="test.thumbs").value == 0


def test_stages_are_editable_without_moving_anyone_back(rollout, cast):
    services.rollout_ramp(rollout=rollout, reason="test")
    rollout.refresh_from_db()
    assert rollout.percent == 10
    services.rollout_stages_update(rollout=rollout, stages=[
        {"percent": 1, "min_hours": 24, "min_samples": 10}, {"percent": 10, "min_hours": 12, "min_samples": 5},
        {"percent": 50, "min_hours": 24, "min_samples": 20}, {"percent": 100, "min_hours": 0, "min_samples": 0}])
    rollout.refresh_from_db()
    assert rollout.stage_index == 1 and rollout.next_stage["percent"] == 50
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="current percentage"):
        services.rollout_stages_update(rollout=rollout, stages=[{"percent": 25, "min_hours": 1, "min_samples": 1}])
    from tests.conftest import client_for

    client = client_for(cast.superuser)
    bad = client.post(f"/router/rollouts/{rollout.pk}/stages/", {"stages": "5 1 1\n100 0 0"})
    assert bad.status_code == 400 and "current percentage" in bad.content.decode()
    ok = client.post(f"/router/rollouts/{rollout.pk}/stages/", {"stages": "10 1 1\n100 0 0"})
    assert ok.status_code == 302
    rollout.refresh_from_db()
    assert rollout.stage_index == 0 and len(rollout.stages) == 2
    assert client_for(cast.admin).post(f"/router/rollouts/{rollout.pk}/stages/", {"stages": "10 1 1"}).status_code == 404


def test_guardrail_job_is_on_the_beat_schedule(db):
    from django_celery_beat.models import PeriodicTask

    from lindy import schedules

    schedules.sync()
    entry = PeriodicTask.objects.get(name="router.guardrails")
    assert entry.task == "router.tasks.guardrails_check" and entry.interval.every == 900


def _assert_every_change_is_an_event(rollout):
    """Events chain from 0 % to the rollout's percentage now, each with a reason."""
    rollout.refresh_from_db()
    percent = 0
    for event in rollout.events.order_by("created_at", "pk"):
        assert float(event.from_percent) == percent, (event.kind, event.from_percent, percent)
        assert event.reason.strip()
        percent = float(event.to_percent)
    assert percent == float(rollout.percent)


def test_every_percentage_change_is_an_event_with_a_reason(rollout, cast):
    from django.core.exceptions import ValidationError

    from router.services.rollouts import _event

    _age_stage(rollout)
    _cohorts(rollout)
    _scored_calls(rollout, "baseline", [0.8] * 12)
    _scored_calls(rollout, "candidate", [0.8] * 12)
    assert services.rollout_check(rollout=rollout) == "ramp"  # the guardrail job
    services.rollout_stages_update(rollout=rollout, actor=cast.superuser, stages=[
        {"percent": 1, "min_hours": 1, "min_samples": 5}, {"percent": 10, "min_hours": 1, "min_samples": 5},
        {"percent": 50, "min_hours": 1, "min_samples": 5}, {"percent": 100, "min_hours": 0, "min_samples": 0}])
    services.rollout_pause(rollout=rollout, actor=cast.superuser)
    services.rollout_resume(rollout=rollout, actor=cast.superuser)
    services.rollout_ramp(rollout=rollout, actor=cast.superuser, reason="Scores look fine; ramping by hand.")
    _assert_every_change_is_an_event(rollout)
    edited = rollout.events.get(kind="stages_edited")
    assert edited.actor == cast.superuser and "1 1 5 | 10 1 5 | 50 1 5 | 100 0 0" in edited.reason
    with pytest.raises(ValueError, match="reason"):
        services.rollout_ramp(rollout=rollout, reason="  ")
    rollout.refresh_from_db()
    assert rollout.percent == 50  # a change without a reason did not happen
    with pytest.raises(ValueError):
        _event(rollout, "ramped", 50, 50, "")
    services.rollout_complete(rollout=rollout, actor=cast.superuser)
    _assert_every_change_is_an_event(rollout)
    with pytest.raises(ValidationError):
        services.rollout_roll_back(rollout=rollout, reason="too late")

    offline_evidence(rollout.route, cheap_target(name="other-flash"))
    second = services.rollout_start(route=rollout.route, candidate=cheap_target(name="other-flash"), stages=STAGES)
    services.rollout_roll_back(rollout=second, reason="Rolled back by hand.", actor=cast.superuser)
    _assert_every_change_is_an_event(second)


def test_the_admin_cannot_change_or_delete_a_rollout(rollout, cast):
    from tests.conftest import client_for

    client = client_for(cast.superuser)
    url = f"/admin/router/rollout/{rollout.pk}/"
    assert client.post(url + "delete/", {"post": "yes"}).status_code == 403
    assert client.post(url + "change/", {"percent": "100"}).status_code == 403
    # The route's rollouts (and their history) cannot be deleted with it, nor its baseline changed under them.
    route_url = f"/admin/router/route/{rollout.route_id}/"
    assert client.post(route_url + "delete/", {"post": "yes"}).status_code == 403
    page = client.get(route_url + "change/").content.decode()
    assert 'name="baseline"' not in page
    assert Rollout.objects.filter(pk=rollout.pk, percent=1).exists()


def test_rollout_savings_price_the_candidates_traffic_on_the_baseline(rollout):
    from decimal import Decimal

    from router import selectors
    from router.models import ModelCall

    candidate, baseline = rollout.candidate, rollout.baseline
    for tokens in ((10_000, 1_000, 4_000), (20_000, 2_000, 0)):
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "cache_read_tokens": tokens[2]}
        ModelCall.objects.create(route="email.draft", rollout=rollout, arm="candidate", target=candidate,
                                 provider="openai", model="m", cost=candidate.cost(**usage), **usage)
    # Not counted: a failed call, a baseline call, and a candidate-arm call the offline provider answered.
    ModelCall.objects.create(route="email.draft", rollout=rollout, arm="candidate", target=candidate,
                             provider="openai", model="m", input_tokens=99_999, error="HTTP 500")
    ModelCall.objects.create(route="email.draft", rollout=rollout, arm="baseline", target=baseline,
                             provider="anthropic", model="m", input_tokens=99_999, cost=Decimal("0.3"))
    ModelCall.objects.create(route="email.draft", rollout=rollout, arm="candidate", target=None,
                             provider="offline", model="m", input_tokens=99_999)
    savings = selectors.rollout_savings(rollout)
    # Sonnet: $3 in, $15 out, $0.30 cache read; flash: $0.14 in, $0.28 out, $0.014 cache read (per million).
    on_baseline = (Decimal(30_000) * 3 + Decimal(3_000) * 15 + Decimal(4_000) * Decimal("0.30")) / 1_000_000
    actual = (Decimal(30_000) * Decimal("0.14") + Decimal(3_000) * Decimal("0.28")
              + Decimal(4_000) * Decimal("0.014")) / 1_000_000
    assert savings["calls"] == 2
    assert savings["on_baseline"] == on_baseline.quantize(Decimal("0.000001"))
    assert savings["actual"] == actual.quantize(Decimal("0.000001"))
    assert savings["saved"] == savings["on_baseline"] - savings["actual"]
    assert savings["saved_percent"] == pytest.approx(float(100 * (on_baseline - actual) / on_baseline), abs=0.01)


@pytest.mark.parametrize("text, message", [
    ("1 inf 10\n100 0 0", "finite"),
    ("nan 1 1\n100 0 0", "finite"),
    ("0.001 1 1\n100 0 0", "two decimals"),
    ("1 1e308 1\n100 0 0", "at most"),
    ("1 1 99999999999\n100 0 0", "at most"),
    ("1 1 1e999\n100 0 0", "numbers only"),
])
def test_stages_that_cannot_be_served_are_refused(rollout, cast, text, message):
    from tests.conftest import client_for

    before = list(rollout.events.values_list("pk", flat=True))
    response = client_for(cast.superuser).post(f"/router/rollouts/{rollout.pk}/stages/", {"stages": text})
    assert response.status_code == 400 and message in response.content.decode()
    rollout.refresh_from_db()
    assert rollout.stages == STAGES and list(rollout.events.values_list("pk", flat=True)) == before


def test_a_stale_decision_never_ramps_twice(rollout, monkeypatch):
    """Two runs of the job deciding on the same stage (a redelivered task) ramp once."""
    from django.core.exceptions import ValidationError

    from router.services import guardrails

    _age_stage(rollout)
    _cohorts(rollout)
    _scored_calls(rollout, "baseline", [0.8] * 12)
    _scored_calls(rollout, "candidate", [0.8] * 12)
    evaluate = guardrails.evaluate

    def another_run_ramps_meanwhile(current, now=None):
        result = evaluate(current, now=now)
        services.rollout_ramp(rollout=current, reason="The other run of the job ramped first.", from_stage=0)
        return result

    monkeypatch.setattr(guardrails, "evaluate", another_run_ramps_meanwhile)
    assert services.rollout_check(rollout=rollout) == "skipped"
    rollout.refresh_from_db()
    assert rollout.percent == 10
    assert [e.kind for e in rollout.events.all()] == ["started", "ramped"]
    with pytest.raises(ValidationError, match="changed stage"):
        services.rollout_ramp(rollout=rollout, reason="stale", from_stage=0)


def test_the_aggregates_count_users_from_the_stage_start(rollout, django_assert_max_num_queries):
    """Each sequence has a fixed start, the stage's: calls before it neither sway the verdict nor
    count (never a sliding window). Users are the unit: a user's many calls are one value, their mean."""
    from router import selectors

    _scored_calls(rollout, "candidate", [0.1] * 12)  # terrible, but in the stage before this one
    _age_stage(rollout, hours=1)  # the stage started an hour ago; the calls so far were before it
    heavy, light = UserFactory(), UserFactory.create_batch(11)
    _scored_calls(rollout, "baseline", [0.8] * 12, users=light + [heavy])
    _scored_calls(rollout, "candidate", [0.8] * 11, users=light)
    _scored_calls(rollout, "candidate", [0.0, 0.4] * 10, users=[heavy])  # 20 calls, one user, mean 0.2
    calls = selectors.arm_calls(rollout)
    assert (calls["candidate"]["calls"], calls["candidate"]["users"]) == (31, 12)
    assert calls["candidate"]["calls_per_user"] == pytest.approx(31 / 12)
    assert (calls["baseline"]["calls"], calls["baseline"]["users"]) == (12, 12)
    candidate = selectors.arm_scores(rollout)["judge.quality"]["candidate"]
    # Per user: eleven users at 0.8 and one at 0.2 (not 31 calls of which 20 are the heavy user's).
    assert candidate == {"mean": pytest.approx((11 * 0.8 + 0.2) / 12), "n": 12, "calls": 31,
                         "var": pytest.approx(((0.2 - 0.75) ** 2 + 11 * 0.05 ** 2) / 11)}
    with django_assert_max_num_queries(14):
        result = services.guardrails.evaluate(rollout)
    assert not result["problems"]
    [check] = [c for c in result["checks"] if c["metric"] == "judge.quality"]
    assert "n=12/12 users, 31/12 calls" in check["line"]
    # The sample-ratio check counts users too.
    assert result["srm"]["users"] == {"baseline": 12, "candidate": 12}


def test_slower_candidate_rolls_back_on_latency(rollout):
    from router.models import ModelCall

    for i in range(30):
        ModelCall.objects.filter(pk=record_call(rollout=rollout, arm="baseline").pk).update(latency_ms=900 + i)
        ModelCall.objects.filter(pk=record_call(rollout=rollout, arm="candidate").pk).update(latency_ms=3000 + i)
    assert services.rollout_check(rollout=rollout) == "roll_back"
    reason = rollout.events.last().reason
    assert "latency per call 3014 ms on the candidate vs 914 ms on baseline (margin +25%, n=30/30" in reason


# The analyst's rubric score of each task run is an online metric like the judge's: recorded on the
# run's calls (analyst.services.task_score), compared between the arms, acted on.


def test_the_analysts_task_score_is_compared_between_the_arms_and_rolls_back_a_worse_candidate(rollout):
    _age_stage(rollout, hours=1)
    _scored_calls(rollout, "baseline", [0.8, 0.9, 1.0] * 5, metric="analyst.task_score")
    _scored_calls(rollout, "candidate", [0.2, 0.3, 0.4] * 5, metric="analyst.task_score")
    result = guardrails.evaluate(rollout)
    [check] = [c for c in result["checks"] if c["metric"] == "analyst.task_score"]
    assert check["verdict"] == "harm"
    assert check["line"].startswith("analyst.task_score: candidate 0.300 vs baseline 0.900 (higher is better, "
                                    "margin 0.05, n=15/15")
    assert services.rollout_check(rollout=rollout) == "roll_back"
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ROLLED_BACK and rollout.percent == 0
    assert any(p.startswith("analyst.task_score: candidate 0.300 vs baseline 0.900") for p in rollout.last_check["problems"])
    event = rollout.events.last()
    assert event.kind == "rolled_back" and "analyst.task_score: candidate 0.300 vs baseline 0.900" in event.reason
    assert "analyst.task_score" in event.evidence["scores"]


def test_scores_the_analyst_gives_task_runs_roll_back_the_arm_whose_runs_fail(rollout, cast):
    """End to end: each arm's calls served agent runs the analyst scored with the product's code (the
    offline rules): the baseline's runs answered the user, the candidate's hit the turn limit."""
    from analyst import services as analyst_services
    from lindy import services as lindy_services

    _age_stage(rollout, hours=1)
    for arm, stopped in (("baseline", "done"), ("candidate", "max_turns")):
        for i in range(10):
            task = lindy_services.task_create(team=cast.team, owner=cast.member, title=f"{arm} {i}")
            lindy_services.task_event_add(task=task, actor="user", content="Hello")
            lindy_services.task_event_add(task=task, actor="assistant", content="Hi.")
            call = record_call(rollout=rollout, arm=arm)
            score = analyst_services.task_score(task_id=task.pk, call_ids=[call.pk], stopped=stopped)
            assert score.score == (0.6 if arm == "baseline" else 0.0)
    assert CallScore.objects.filter(metric="analyst.task_score", source="analyst", call__rollout=rollout).count() == 20
    assert services.rollout_check(rollout=rollout) == "roll_back"
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ROLLED_BACK
    assert "analyst.task_score: candidate 0.000 vs baseline 0.600 (higher is better" in rollout.events.last().reason
