"""The demo is produced by the product: every call, score and rollout in it was made by the
product's own code (offline provider, simulated clock), never written as a row."""

import inspect
import re

import pytest

from drafting.models import DraftPair
from lindy import demo
from router import routing, variants
from router.models import CallScore, EvalRun, ModelCall, Rollout, RolloutEvent, Route, Target
from tests.conftest import client_for
from validator.models import Decision

from .test_guardrails import _assert_every_change_is_an_event

# What writing rows instead of running the product looks like in a seeder's source.
ROW_WRITES = re.compile(r"\b(ModelCall|CallScore|CallSample|Rollout|RolloutEvent|EvalRun|EvalResult)"
                        r"(\(|\.objects\.(create|bulk_create|update|get_or_create|update_or_create))")


@pytest.mark.django_db
def test_the_demo_is_produced_by_the_product(django_assert_max_num_queries, seeded_demo):
    ctx = seeded_demo
    registered = set(routing.registered_routes())

    # Every call is on a route an app owns, with a prompt variant its owner builds (drafting's and
    # the learner's too: the demo's two weeks of email, drafting/demo.py); no route that no code
    # calls has a call or a row.
    pairs = set(ModelCall.objects.values_list("route", "prompt_variant").distinct())
    assert pairs and all(route in registered and variant in variants.buildable(route) for route, variant in pairs)
    assert not ModelCall.objects.exclude(route__in=registered).exists()
    assert not Route.objects.exclude(name__in=registered).exists()

    # Two weeks of validator traffic, split by the router into the rollout's arms, each arm's
    # calls with its own prompt; every one backs a decision the validator recorded.
    rollout = Rollout.objects.get(route__name="validator")
    live = ModelCall.objects.filter(rollout=rollout, arm__in=["baseline", "candidate"])
    assert len(set(live.dates("created_at", "day"))) >= 8
    assert set(live.values_list("arm", "prompt_variant").distinct()) <= {
        ("baseline", rollout.baseline_variant), ("candidate", rollout.candidate_variant)}
    assert live.filter(arm="candidate").exists() and live.filter(arm="baseline").exists()
    decided = set(Decision.objects.exclude(model_call_id=None).values_list("model_call_id", flat=True))
    assert set(live.values_list("pk", flat=True)) <= decided

    # Every score was given by the online judge through its own route (one judge call per score),
    # by the analyst, which scored the demo's finished agent tasks through its own route, by the
    # validator: whether the action the agent's call proposed was blocked (agent.loop), or by
    # drafting: each draft-sent pair's heavy-edit outcome, against its drafting call.
    assert set(CallScore.objects.values_list("source", flat=True)) == {"router.online_eval", "analyst", "validator",
                                                                       "drafting"}
    assert set(CallScore.objects.filter(source="validator").values_list("call__route", "metric").distinct()) == {
        ("agent", "validator.blocked")}
    assert CallScore.objects.filter(source="drafting").count() == DraftPair.objects.filter(scorable=True).count()
    assert CallScore.objects.filter(source="router.online_eval").count() == ModelCall.objects.filter(
        route="router.online_eval").count() > 0
    assert ModelCall.objects.filter(route="analyst.score").exists()

    # The rollout started after offline evals of exactly its pair; ops started it, and every
    # later change was the guardrail job's, with its reason.
    evidence = EvalRun.objects.filter(route=rollout.route, target=rollout.candidate,
                                      variant=rollout.candidate_variant, status="done")
    assert evidence.exists() and evidence.get().finished_at <= rollout.created_at
    events = list(rollout.events.all())
    assert events[0].kind == "started" and events[0].actor == ctx.users["ops@lindy.test"]
    assert all(e.actor is None and e.reason.startswith("Guardrail:") for e in events[1:])
    _assert_every_change_is_an_event(rollout)

    # Idempotent.
    counts = (ModelCall.objects.count(), RolloutEvent.objects.count(), CallScore.objects.count())
    demo.seed()
    assert (ModelCall.objects.count(), RolloutEvent.objects.count(), CallScore.objects.count()) == counts

    # The pages, as the demo logins see them.
    Route.objects.create(name="tests.stale_route", baseline=Target.objects.get(name=routing.DEFAULT_TARGET))  # a stale row
    ops = client_for(ctx.users["ops@lindy.test"])
    routes = ops.get("/router/").content.decode()
    assert "validator" in routes and "tests.stale_route" not in routes
    page = ops.get(f"/router/rollouts/{rollout.pk}/").content.decode()
    # A handful of demo users can't give the sequential test its minimum samples: the page says the
    # stage holds and why, rather than showing a ramp the evidence didn't earn.
    assert "judge.quality" in page and "Last guardrail check" in page and rollout.candidate.name in page
    assert "Guardrail:" in page or "not enough evidence yet" in page
    # The route page's four target and variant menus share one query each (it ran 19 before).
    with django_assert_max_num_queries(13):
        detail = ops.get("/router/routes/validator/")
    assert detail.status_code == 200 and detail.content.decode().count("deepseek-v4-flash") >= 4
    with django_assert_max_num_queries(12):
        costs = ops.get("/router/costs/")
    body = costs.content.decode()
    assert costs.status_code == 200 and "tests.stale_route" not in body
    assert all(route in body for route in ("validator", "router.online_eval", "memory.summarize"))
    assert 'id="offline-calls"' in body  # the offline provider's calls are said to cost nothing
    admin = client_for(ctx.users["admin@acme.test"]).get("/router/costs/")
    assert admin.status_code == 200 and "validator" in admin.content.decode()


def test_no_seeder_writes_calls_scores_or_rollouts_as_rows():
    """Every seeder seed_demo runs, read as source: none creates or edits these rows itself."""
    modules = {inspect.getmodule(fn) for _, fn in demo._SEEDERS} | {demo}
    assert len(modules) > 5
    for module in modules:
        source = inspect.getsource(module)
        assert not ROW_WRITES.search(source), f"{module.__name__} writes router rows itself"
