"""The cached routing table: zero queries in the steady state, invalidated on every change."""

import pytest

from router import gateway, routing, services
from router.models import ModelCall, Route
from router.offline import OfflineReply

from .helpers import cheap_target, offline_evidence, route, variant


@pytest.mark.django_db
def test_choosing_a_target_costs_no_query_once_cached(cast, django_assert_num_queries):
    email = route("email.draft")
    target = cheap_target()
    variant(email, "flash-tuned")
    offline_evidence(email, target, "flash-tuned")
    services.rollout_start(route=email, candidate=target, candidate_variant="flash-tuned", actor=cast.superuser)
    services.model_choice_set(user=cast.admin, target=target)
    for user in (cast.member, cast.admin, cast.other_admin):
        routing.assign("email.draft", user)  # warms the table and these users' choices
    with django_assert_num_queries(0):
        for user in (cast.member, cast.admin, cast.other_admin, None):
            for name in ("email.draft", "agent", "validator"):
                routing.assign(name, user)


@pytest.mark.django_db
def test_a_second_process_reads_the_shared_table_without_queries(cast, django_assert_num_queries):
    routing.assign("agent", cast.member)
    routing.forget_local()  # what a fresh process has
    with django_assert_num_queries(0):
        routing.assign("agent", cast.member)


@pytest.mark.django_db
def test_changes_invalidate_the_table(cast):
    email = route("email.draft")
    target = cheap_target()
    assert routing.assign("email.draft", cast.other_admin).target.name == "claude-sonnet-4-6-anthropic"
    # A route's new baseline.
    email.baseline = target
    email.save()
    assert routing.assign("email.draft", cast.other_admin).target.name == target.name
    # A user's explicit choice, and clearing it.
    haiku = routing.table().targets
    haiku_id = next(t.id for t in haiku.values() if t.name == "claude-haiku-4-5-anthropic")
    from router.models import Target

    services.model_choice_set(user=cast.other_admin, target=Target.objects.get(pk=haiku_id), route="email.draft")
    assert routing.assign("email.draft", cast.other_admin).reason == "explicit_choice"
    services.model_choice_clear(user=cast.other_admin, route="email.draft")
    assert routing.assign("email.draft", cast.other_admin).reason == "baseline"


@pytest.mark.django_db
def test_rollout_changes_reach_the_gateway_and_calls_record_their_arm(cast, offline_rule):
    email = route("email.draft")
    target = cheap_target()
    variant(email, "flash-tuned")
    offline_evidence(email, target, "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=target, candidate_variant="flash-tuned")
    seen = []
    offline_rule("email.draft", lambda request: OfflineReply(text=f"{request.prompt_variant}: {request.system_text()}"))
    completion = gateway.complete(
        route="email.draft", user=cast.member, messages=[{"role": "user", "content": "draft"}],
        prompt=lambda v: seen.append(v) or {"system": f"built for {v}"},
    )
    # The member is internal: candidate first, and the prompt was built from the candidate's variant.
    assert seen == ["flash-tuned"]
    assert completion.prompt_variant == "flash-tuned" and completion.text == "flash-tuned: built for flash-tuned"
    call = ModelCall.objects.get(pk=completion.call_id)
    assert (call.arm, call.rollout_id, call.prompt_variant) == ("candidate", rollout.pk, "flash-tuned")
    # Assign first, build, then pass the assignment back: the same thing in two steps.
    assignment = gateway.assign("email.draft", cast.other_admin)
    second = gateway.complete(route="email.draft", user=cast.other_admin, assignment=assignment,
                              system=f"built for {assignment.prompt_variant}", messages=[{"role": "user", "content": "x"}])
    assert second.prompt_variant == assignment.prompt_variant
    services.rollout_roll_back(rollout=rollout, reason="test")
    assert routing.assign("email.draft", cast.member).reason == "baseline"
    assert Route.objects.get(name="email.draft").baseline.name == "claude-sonnet-4-6-anthropic"


@pytest.mark.django_db
def test_completing_a_rollout_makes_the_candidate_the_baseline(cast):
    email = route("email.draft")
    target = cheap_target()
    variant(email, "flash-tuned")
    offline_evidence(email, target, "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=target, candidate_variant="flash-tuned")
    services.rollout_complete(rollout=rollout, actor=cast.superuser)
    email.refresh_from_db()
    assert (email.baseline, email.baseline_variant) == (target, "flash-tuned")
    assignment = routing.assign("email.draft", cast.other_admin)
    assert (assignment.target.name, assignment.prompt_variant, assignment.reason) == (target.name, "flash-tuned", "baseline")
    assert [e.kind for e in rollout.events.all()] == ["started", "completed"]


@pytest.mark.django_db
def test_a_gateway_call_costs_only_its_own_record(cast, django_assert_num_queries, offline_rule, settings):
    settings.ROUTER_ONLINE_EVAL_SAMPLE_RATE = 0.0
    offline_rule("agent", lambda request: OfflineReply(text="ok"))
    gateway.complete(route="agent", user=cast.member, messages=[{"role": "user", "content": "hi"}])
    with django_assert_num_queries(1):  # the ModelCall insert; routing is free
        gateway.complete(route="agent", user=cast.member, messages=[{"role": "user", "content": "hi"}])


@pytest.mark.django_db
def test_a_caller_that_ignores_variants_is_recorded_with_the_default_prompt(cast, offline_rule, caplog):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    rollout = services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    offline_rule("email.draft", lambda request: OfflineReply(text=request.prompt_variant))
    # The member is internal, so on the candidate: the target serves, but the prompt is the default one.
    completion = gateway.complete(route="email.draft", user=cast.member, system="the default prompt",
                                  messages=[{"role": "user", "content": "draft"}])
    call = ModelCall.objects.get(pk=completion.call_id)
    assert (call.arm, call.rollout_id, call.prompt_variant, completion.prompt_variant) == (
        "candidate", rollout.pk, "default", "default")
    assert completion.text == "default"
    assert "ignores prompt variants" in caplog.text
