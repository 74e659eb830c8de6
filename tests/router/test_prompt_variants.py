"""Prompt variants are real: each route's owner registers the variants it builds; two variants
send two different prompts through the product's own code path, and every call records the
variant whose prompt was sent. The router refuses a rollout, an eval, a baseline or a variant
row for a prompt the owner can't build (a 4xx from the pages), and builders refuse unknown names."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from agent import loop as agent_loop
from agent import prompts as agent_prompts
from drafting import prompts as drafting_prompts
from hydration import prompts as hydration_prompts
from hydration import services as hydration_services
from lindy import services as core
from memory import services as memory_services
from router import prompts as router_prompts
from router import routing, services, variants
from router.models import CallSample, EvalRun, ModelCall, PromptVariant, Rollout, Route, Target
from router.offline import policy_for
from router.services import evals
from router.services.online_eval import judge_sample
from tests.conftest import client_for
from tests.validator.helpers import RECORDER, task_with
from validator import prompts as validator_prompts
from validator import services as validator_services

from .helpers import cheap_target, offline_evidence, passing_eval, route

pytestmark = pytest.mark.django_db
JUSTIFICATION = 'The user asked: "Send an email to jane@initech.test saying the contract is signed."'


@pytest.fixture
def sent(offline_rule):
    """Every request the offline provider answers on a route: (variant it says, system text).
    The app's own offline rules still answer, so the code path runs as in the product."""

    def spy(route_name):
        seen: list[tuple[str, str]] = []
        original = policy_for(route_name)
        assert original is not None

        def record(request):
            seen.append((request.prompt_variant, request.system_text()))
            return original(request)

        offline_rule(route_name, record)
        return seen

    return spy


def _serve(route_name: str, variant: str, actor) -> None:
    """Serve the route's baseline with `variant` (the routing path every call takes)."""
    r = route(route_name)
    passing_eval(r, r.baseline, variant)  # a baseline moves on evidence (issue 29)
    services.route_baseline_set(route=r, baseline=r.baseline, baseline_variant=variant, actor=actor,
                                override_reason="" if evals.has_eval_set(route_name) else "No eval set for this route.")


def _assert_sent_and_recorded(route_name, seen, calls_before, variant, expected_text):
    """Every request on the route said `variant`, held that variant's own text, and was recorded as it."""
    assert seen, f"no call on {route_name}"
    assert {v for v, _ in seen} == {variant}
    assert all(expected_text in system for _, system in seen)
    recorded = set(ModelCall.objects.filter(route=route_name).exclude(pk__in=calls_before)
                   .values_list("prompt_variant", flat=True))
    assert recorded == {variant}


def _run_both(route_name, variants_and_texts, run, seen, actor):
    """Run the product's code path once per variant; the two sets of prompts share nothing."""
    systems = {}
    for variant, text in variants_and_texts:
        _serve(route_name, variant, actor)
        before = list(ModelCall.objects.filter(route=route_name).values_list("pk", flat=True))
        seen.clear()
        run()
        _assert_sent_and_recorded(route_name, seen, before, variant, text)
        systems[variant] = {system for _, system in seen}
    first, second = (systems[v] for v, _ in variants_and_texts)
    assert first.isdisjoint(second), "two variants sent the same prompt"


def test_each_owner_registers_the_variants_its_builders_know():
    assert variants.buildable("agent").keys() == agent_prompts.VARIANTS.keys() == {"default", "concise"}
    assert variants.buildable("validator").keys() == validator_prompts.VARIANTS.keys() == {"default", "terse", "checklist"}
    assert variants.buildable("memory.summarize").keys() == hydration_prompts.SUMMARIZER_VARIANTS.keys()
    assert variants.buildable("memory.agent").keys() == hydration_prompts.AGENT_VARIANTS.keys()
    assert variants.buildable("router.online_eval").keys() == router_prompts.SYSTEM.keys() == {"default", "strict"}
    assert variants.buildable("memory.count_tokens").keys() == {"default"}  # no prompt: only its default
    assert variants.buildable("email.draft").keys() == drafting_prompts.VARIANTS.keys() == {"default", "flash-tuned"}
    assert all(len(variants.buildable(r)) > 1 for r in ("agent", "validator", "memory.summarize", "memory.agent"))


def test_agent_variants_send_different_prompts(cast, sent, seam):
    seam.user_message_sender = RECORDER
    seen = sent("agent")

    def run():
        task = task_with(cast.member, cast.team, [("user", "What is on my plate today?")])
        agent_loop.run(task)

    _run_both("agent", [("default", "Another AI reads it and rejects the action"),
                         ("concise", "another AI rejects weak reasons")],
              run, seen, cast.superuser)


def test_validator_variants_send_different_prompts(cast, sent):
    seen = sent("validator")

    def run():
        task = task_with(cast.member, cast.team, [("user", "Send an email to jane@initech.test saying the contract is signed.")])
        validator_services.check(user=cast.member, team=cast.team, task=task, tool="send_email",
                                 arguments={"to": ["jane@initech.test"], "subject": "Contract", "body": "The contract is signed."},
                                 justification=JUSTIFICATION)

    _run_both("validator", [("default", validator_prompts.PRINCIPLES[:40]), ("terse", validator_prompts.TERSE[:40])],
              run, seen, cast.superuser)
    assert set(validator_services.Decision.objects.values_list("prompt_variant", flat=True)) == {"default", "terse"}


@pytest.mark.parametrize("route_name,concise_text", [
    ("memory.summarize", hydration_prompts.SUMMARIZER_CONCISE[:60]),
    ("memory.agent", "Fold the summarizer's facts"),
])
def test_hydration_variants_send_different_prompts(cast, sent, route_name, concise_text):
    seen = sent(route_name)
    filesystem = memory_services.filesystem_for_user(cast.member)
    defaults = {"memory.summarize": hydration_prompts.SUMMARIZER_SYSTEM[:60],
                "memory.agent": "You are given new facts from the summarizer"}

    def run():
        task = core.task_create(team=cast.team, owner=cast.member, title=f"Note {timezone.now():%H%M%S%f}")
        core.task_event_add(task=task, actor="user", content="We always send the weekly report on Friday.")
        hydration_services.run_now_sync(filesystem=filesystem)

    _run_both(route_name, [("default", defaults[route_name]), ("concise", concise_text)], run, seen, cast.superuser)


def test_online_judge_variants_send_different_prompts(cast, sent):
    seen = sent("router.online_eval")

    def run():
        call = ModelCall.objects.create(route="agent", provider="offline", model="m")
        judge_sample(CallSample.objects.create(call=call, request={"system": "s", "messages": []},
                                               response={"text": "Done."}))

    _run_both("router.online_eval", [("default", router_prompts.SYSTEM["default"][:40]),
                                     ("strict", router_prompts.SYSTEM["strict"][:40])], run, seen, cast.superuser)


def test_a_rollout_serves_and_records_its_candidate_variant(cast, sent):
    """Through a rollout (internal users first), the candidate's variant is the prompt sent."""
    seen = sent("validator")
    validator, target = route("validator"), cheap_target()
    offline_evidence(validator, target, "checklist")
    rollout = services.rollout_start(route=validator, candidate=target, candidate_variant="checklist")
    task = task_with(cast.member, cast.team, [("user", "Send an email to jane@initech.test saying the contract is signed.")])
    validator_services.check(user=cast.member, team=cast.team, task=task, tool="send_email",
                             arguments={"to": ["jane@initech.test"], "subject": "Contract", "body": "The contract is signed."},
                             justification=JUSTIFICATION)
    assert seen == [("checklist", validator_prompts.CHECKLIST)]
    call = ModelCall.objects.get(route="validator")
    assert (call.rollout_id, call.arm, call.prompt_variant) == (rollout.pk, "candidate", "checklist")


def test_the_router_refuses_what_the_owner_cannot_build(cast):
    agent = route("agent")
    target = cheap_target()
    PromptVariant.objects.create(route=agent, name="terse")  # a bare label, as an old version let one add
    with pytest.raises(ValidationError, match="builds no prompt variant 'terse'"):
        services.rollout_start(route=agent, candidate=target, candidate_variant="terse")
    with pytest.raises(ValidationError, match="builds no prompt variant 'terse'"):
        services.route_baseline_set(route=agent, baseline=target, baseline_variant="terse", actor=cast.superuser)
    validator = route("validator")
    PromptVariant.objects.create(route=validator, name="shouty")
    with pytest.raises(ValidationError, match="builds no prompt variant 'shouty'"):
        evals.eval_run_create(route=validator, target=target, variant="shouty")
    # The pages answer 4xx and change nothing.
    client = client_for(cast.superuser)
    form = {"candidate": target.pk, "candidate_variant": "terse", "stages": "1 24 30\n100 0 0",
            "include_internal": "on", "score_margin": 0.05, "min_scored_calls": 30, "retention_days": 7,
            "retention_margin": 0.1}
    response = client.post("/router/routes/agent/rollouts/", form)
    assert 400 <= response.status_code < 500
    response = client.post("/router/routes/validator/evals/", {"target": target.pk, "variant": "shouty"})
    assert 400 <= response.status_code < 500
    assert not Rollout.objects.exists() and not EvalRun.objects.exists()
    # What the owner builds is accepted.
    # (The agent route has no eval set, so a superuser's written override stands in for evidence.)
    assert services.rollout_start(route=agent, candidate=target, candidate_variant="concise", actor=cast.superuser,
                                  override_reason="agent has no eval set yet").candidate_variant == "concise"


def test_a_route_no_app_owns_builds_nothing():
    orphan = Route.objects.create(name="tests.orphan_route", baseline=Target.objects.get(name=routing.DEFAULT_TARGET))
    PromptVariant.objects.create(route=orphan, name="default")
    with pytest.raises(ValidationError, match="No app owns route 'tests.orphan_route'"):
        services.rollout_start(route=orphan, candidate=cheap_target())
    with pytest.raises(ValidationError, match="No app owns route 'tests.orphan_route'"):
        variants.check(orphan.name, "default")
    assert not Rollout.objects.exists()


def test_builders_refuse_an_unknown_variant(cast):
    with pytest.raises(variants.UnknownVariant):
        agent_prompts.system_prompt(user=cast.member, team=cast.team, memory_text="", variant="terse")
    with pytest.raises(variants.UnknownVariant):
        validator_prompts.system_prompt("concise")
    with pytest.raises(variants.UnknownVariant):
        hydration_prompts.summarize_prompt([], scope="x", variant="terse")
    with pytest.raises(variants.UnknownVariant):
        router_prompts.judge_system("terse")


def test_only_the_owner_registers_a_routes_variants():
    with pytest.raises(ValueError, match="does not own"):
        variants.register({"agent": {"default": "x", "mine": "y"}}, owner="validator")
    with pytest.raises(ValueError, match="must include 'default'"):
        variants.register({"agent": {"concise": "y"}}, owner="agent")
    assert variants.buildable("agent").keys() == {"default", "concise"}
