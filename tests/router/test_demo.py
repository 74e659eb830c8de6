import pytest

from lindy import demo
from router import routing
from router.models import CallScore, EvalRun, ModelCall, Rollout, RolloutEvent, Route
from router.services import evals
from tests.conftest import client_for

from .test_guardrails import _assert_every_change_is_an_event


@pytest.mark.django_db
def test_demo_seed_is_idempotent_and_the_pages_render(django_assert_max_num_queries):
    ctx = demo.seed()
    calls, events = ModelCall.objects.count(), RolloutEvent.objects.count()
    assert calls > 1000
    rollout = Rollout.objects.get(route__name="validator", status="running")
    assert rollout.percent == 10 and rollout.candidate.name == "deepseek-v4-flash-atlas"
    assert Rollout.objects.get(route__name="agent").status == "rolled_back"
    # The candidate's prompt variant is one the validator's eval set really builds, and was evaluated.
    runs = {(r.target.name, r.variant): r for r in EvalRun.objects.filter(route__name="validator")}
    tuned = runs[("deepseek-v4-flash-atlas", rollout.candidate_variant)]
    assert rollout.candidate_variant in evals.eval_variants("validator")
    assert (tuned.status, tuned.total, tuned.errors) == ("done", len(evals.load_cases("validator")), 0)
    # Only routes and metrics the product uses get data: no drafting, no learner (no app owns them yet).
    assert set(ModelCall.objects.values_list("route", flat=True)) <= set(routing.registered_routes())
    assert not Route.objects.filter(name__in=["email.draft", "learner.judge", "learner.propose"]).exists()
    assert not CallScore.objects.exclude(metric="judge.quality").exists()
    for each in Rollout.objects.all():
        _assert_every_change_is_an_event(each)
    demo.seed()
    assert (ModelCall.objects.count(), RolloutEvent.objects.count()) == (calls, events)

    ops = client_for(ctx.users["ops@lindy.test"])
    page = ops.get(f"/router/rollouts/{rollout.pk}/").content.decode()
    assert "Saved" in page and "judge.quality" in page
    ops.get("/router/")
    with django_assert_max_num_queries(12):
        costs = ops.get("/router/costs/")
    assert costs.status_code == 200 and "deepseek-v4-flash-atlas" in costs.content.decode()
    admin = client_for(ctx.users["admin@acme.test"]).get("/router/costs/").content.decode()
    assert "$" in admin
