"""Shared helpers for the router's tests."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from router import routing, variants
from router.models import EvalRun, ModelCall, PromptVariant, Provider, Route, Target


def cheap_target(name="deepseek-v4-flash-atlas", base_url="http://127.0.0.1:9/v1", key_env="LINDY_PROVIDER_KEY_ATLAS") -> Target:
    routing.ensure_defaults()
    host, _ = Provider.objects.get_or_create(
        name="atlas", defaults={"kind": "openai", "base_url": base_url, "api_key_env": key_env, "max_retries": 1}
    )
    if host.base_url != base_url:
        host.base_url = base_url
        host.save()
    target, _ = Target.objects.get_or_create(
        name=name,
        defaults={
            "provider": "openai", "model": "deepseek-v4-flash", "host": host, "quantization": "fp8",
            "input_price": Decimal("0.14"), "output_price": Decimal("0.28"), "cache_read_price": Decimal("0.014"),
            "user_selectable": True,
        },
    )
    return target


def route(name="email.draft") -> Route:
    """The route `name`. A name no app registers (email.draft: the drafting app does not exist
    yet) is registered here for the test; conftest puts the registry back after it."""
    if name not in routing.registered_routes():
        routing.register_route(name, owner="tests", description="Registered by a test.")
    routing.ensure_defaults()
    return Route.objects.get(name=name)


def variant(route_obj: Route, name: str) -> PromptVariant:
    """The prompt variant `name` of a route. On a route a test registered (owner "tests"), the
    test is the owner and declares that it builds the variant (router.variants); an app's own
    route keeps the variants its app registered, so an unknown name is refused there."""
    spec = routing.registered_routes().get(route_obj.name)
    if spec is not None and spec.owner == "tests":
        variants.register({route_obj.name: {**variants.buildable(route_obj.name), name: "A test's variant."}},
                          owner="tests")
    return PromptVariant.objects.get_or_create(route=route_obj, name=name)[0]


def record_call(*, rollout, arm, user=None, error="", ago=timedelta(0), tokens=(1000, 200), target=None, route=None):
    call = ModelCall.objects.create(
        route=route or rollout.route.name, user=user, rollout=rollout, arm=arm, provider="openai", model="m",
        target=target or (rollout.candidate if arm == "candidate" else rollout.baseline),
        input_tokens=tokens[0], output_tokens=tokens[1], error=error,
    )
    if ago:
        ModelCall.objects.filter(pk=call.pk).update(created_at=timezone.now() - ago)
    return call


def offline_evidence(route_obj: Route, target: Target, variant: str = "default", *, score: float = 1.0,
                     baseline_score: float = 1.0) -> tuple[EvalRun, EvalRun]:
    """Finished offline eval runs of the candidate (target, variant) and of the route's baseline,
    as router.services.eval_run_execute leaves them, so a rollout may start. Tests of the
    evidence gate itself run the real evals (tests/router/test_evidence.py)."""
    now = timezone.now()

    def run(target_id, name, value):
        return EvalRun.objects.create(route=route_obj, target_id=target_id, variant=name, status=EvalRun.Status.DONE,
                                      total=3, completed=3, passed=3, score=value, finished_at=now)

    return (run(target.pk, variant, score),
            run(route_obj.baseline_id, route_obj.baseline_variant, baseline_score))


def passing_eval(route_obj: Route, target: Target, variant: str = "default", score: float = 1.0) -> EvalRun:
    """A finished offline eval of (route, target, variant) that passes the thresholds, as
    eval_run_execute leaves one: what a baseline needs (router.services.evidence.baseline_evidence)."""
    return EvalRun.objects.create(route=route_obj, target=target, variant=variant, status=EvalRun.Status.DONE,
                                  total=3, completed=3, passed=3, score=score, finished_at=timezone.now())
