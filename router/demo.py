"""Demo data for the Models pages: a cheaper OpenAI-compatible target on an "atlas" host, an
active rollout of the validator route to it (with the validator's own `terse` prompt), an
earlier rollout of the agent route that was rolled back, and two weeks of recorded calls
with online judge scores so the charts have something to show.

Only routes the product calls get data: the calls are synthetic (the demo runs with no
network) but their routes, prompt variants and metrics are the ones the running code uses;
token counts and costs follow each target's prices. Idempotent: a second run changes nothing.
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from django.db.models import Case, DateTimeField, Value, When
from django.utils import timezone

from . import routing, services
from .models import CallScore, ModelCall, PromptVariant, Provider, Rollout, RolloutEvent, Route, Target
from .offline import policy_for
from .services import evals
from .types import Usage

DAYS = 14
# route -> (calls per day, typical input tokens, typical output tokens, cache-read share)
TRAFFIC = {
    "agent": (40, 6000, 400, 0.7),
    "validator": (30, 7000, 120, 0.85),
    "memory.summarize": (8, 12000, 900, 0.0),
    "memory.agent": (6, 15000, 1500, 0.4),
}
ROLLOUT_ROUTE = "validator"
CANDIDATE_VARIANT = "terse"  # one of validator.prompts.VARIANTS
STAGES = [
    {"percent": 1, "min_hours": 24, "min_samples": 20},
    {"percent": 5, "min_hours": 24, "min_samples": 30},
    {"percent": 10, "min_hours": 48, "min_samples": 40},
    {"percent": 25, "min_hours": 48, "min_samples": 60},
    {"percent": 50, "min_hours": 72, "min_samples": 80},
    {"percent": 100, "min_hours": 0, "min_samples": 0},
]


def _hosts() -> dict[str, Provider]:
    specs = [
        ("atlas", "https://api.atlascloud.ai/v1", "LINDY_PROVIDER_KEY_ATLAS"),
        ("deepseek", "https://api.deepseek.com/v1", "LINDY_PROVIDER_KEY_DEEPSEEK"),
    ]
    hosts = {}
    for name, url, env in specs:
        hosts[name] = (Provider.objects.filter(name=name).first()
                       or services.provider_create(name=name, kind="openai", base_url=url, api_key_env=env, actor=None))
    return hosts


def _targets(hosts) -> dict[str, Target]:
    specs = [
        ("deepseek-v4-flash-atlas", "atlas", "deepseek-v4-flash", "fp8", "0.14", "0.28", "0", "0.014", True),
        ("deepseek-v4-flash-deepseek", "deepseek", "deepseek-v4-flash", "", "0.15", "0.30", "0", "0.015", False),
        ("kimi-k2-5-atlas", "atlas", "kimi-k2.5", "int4", "0.45", "2.20", "0", "0.10", False),
    ]
    out = {}
    for name, host, model, quant, inp, outp, cw, cr, selectable in specs:
        out[name] = Target.objects.filter(name=name).first() or services.target_create(
            name=name, provider="openai", host=hosts[host], model=model, quantization=quant,
            input_price=Decimal(inp), output_price=Decimal(outp), cache_write_price=Decimal(cw),
            cache_read_price=Decimal(cr), user_selectable=selectable, actor=None,
        )
    return out


def _event(rollout, kind, before, after, reason, at, actor=None, evidence=None):
    event = RolloutEvent.objects.create(rollout=rollout, kind=kind, from_percent=before, to_percent=after,
                                        reason=reason, actor=actor, evidence=evidence or {})
    RolloutEvent.objects.filter(pk=event.pk).update(created_at=at)


def _rollouts(ctx, targets, now) -> Rollout:
    ops = ctx.users.get("ops@lindy.test")
    agent = Route.objects.get(name="agent")
    if not Rollout.objects.filter(route=agent, candidate=targets["kimi-k2-5-atlas"]).exists():
        kimi = Rollout.objects.create(
            route=agent, baseline_id=agent.baseline_id, baseline_variant=agent.baseline_variant,
            candidate=targets["kimi-k2-5-atlas"], candidate_variant="default", stages=STAGES, stage_index=1,
            percent=Decimal("0"), status=Rollout.Status.ROLLED_BACK, salt="demo-kimi-agent", created_by=ops,
            stage_started_at=now - timedelta(days=25), ended_at=now - timedelta(days=21),
        )
        Rollout.objects.filter(pk=kimi.pk).update(created_at=now - timedelta(days=27))
        _event(kimi, "started", 0, 1, "Started by ops@lindy.test: internal users and 1% of everyone else move to "
               "kimi-k2-5-atlas. Offline evals: 91% vs 92% on the baseline.", now - timedelta(days=27), ops)
        _event(kimi, "ramped", 1, 5, "Guardrail: stage 1% held for its minimum duration with 24 scored candidate "
               "calls; judge.quality: candidate 0.790 vs baseline 0.810. Next stage 5%.", now - timedelta(days=25))
        _event(kimi, "rolled_back", 5, 0, "Guardrail: candidate worse than baseline: judge.quality: candidate 0.610 "
               "vs baseline 0.810 (higher is better, margin 0.05, n=41/377).", now - timedelta(days=21))

    routed = Route.objects.get(name=ROLLOUT_ROUTE)
    if not PromptVariant.objects.filter(route=routed, name=CANDIDATE_VARIANT).exists():
        services.prompt_variant_create(route=routed, name=CANDIDATE_VARIANT, actor=ops,
                                       description="The validator's terse instructions (validator/prompts.py).")
    rollout = Rollout.objects.filter(route=routed, status__in=Rollout.ACTIVE).first()
    if rollout is None:
        started = now - timedelta(days=12)
        rollout = Rollout.objects.create(
            route=routed, baseline_id=routed.baseline_id, baseline_variant=routed.baseline_variant,
            candidate=targets["deepseek-v4-flash-atlas"], candidate_variant=CANDIDATE_VARIANT, stages=STAGES,
            stage_index=2, percent=Decimal("10"), salt="demo-flash-validator", created_by=ops,
            stage_started_at=now - timedelta(days=5),
        )
        Rollout.objects.filter(pk=rollout.pk).update(created_at=started)
        _event(rollout, "started", 0, 1, "Started by ops@lindy.test: internal users and 1% of everyone else move to "
               f"deepseek-v4-flash-atlas with prompt variant {CANDIDATE_VARIANT!r}.", started, ops)
        _event(rollout, "ramped", 1, 5, "Guardrail: stage 1% held for its minimum duration with 26 scored candidate "
               "calls; judge.quality: candidate 0.812 vs baseline 0.805 (higher is better, margin 0.05, n=31/240). "
               "Next stage 5%.", now - timedelta(days=9))
        _event(rollout, "ramped", 5, 10, "Guardrail: stage 5% held for its minimum duration with 38 scored candidate "
               "calls; judge.quality: candidate 0.803 vs baseline 0.808 (higher is better, margin 0.05, n=62/300). "
               "Next stage 10%.", now - timedelta(days=5))
        routing.invalidate()
    rollout.refresh_from_db()
    return rollout


def _percent_at(steps, at) -> float:
    percent = 0.0
    for when, to in steps:
        if when <= at:
            percent = float(to)
    return percent


def _calls(ctx, rollout, now) -> None:
    if ModelCall.objects.filter(rollout=rollout).exists():
        return
    rng = random.Random(7)
    people = [ctx.users[e] for e in ("admin@acme.test", "user@acme.test", "sarah@acme.test", "admin@globex.test")]
    team_of = {u.pk: (ctx.teams["Globex"] if u.email.endswith("globex.test") else ctx.teams["Acme"]) for u in people}
    table = routing.table()
    baselines = {name: table.targets[info.baseline_id] for name, info in table.routes.items()}
    candidate = table.targets[rollout.candidate_id]
    rows, stamps = [], []
    steps = list(rollout.events.order_by("created_at").values_list("created_at", "to_percent"))
    for day in range(DAYS, 0, -1):
        for route, (per_day, tokens_in, tokens_out, cached) in TRAFFIC.items():
            for _ in range(int(per_day * rng.uniform(0.7, 1.3))):
                at = now - timedelta(days=day - 1, hours=rng.uniform(0, 23), minutes=rng.uniform(0, 59))
                user = rng.choice(people)
                arm, target, rollout_id, variant = "baseline", baselines[route], None, "default"
                if route == ROLLOUT_ROUTE and at >= rollout.created_at:
                    rollout_id = rollout.pk
                    # The same rule as live routing: internal users first, then the sticky bucket.
                    on = user.is_internal or routing.on_candidate(routing.bucket_of(rollout.salt, user.pk),
                                                                  _percent_at(steps, at))
                    if on:
                        arm, target, variant = "candidate", candidate, CANDIDATE_VARIANT
                total_in = int(tokens_in * rng.uniform(0.6, 1.4))
                read = int(total_in * cached)
                out = int(tokens_out * rng.uniform(0.5, 1.5))
                write = int(total_in * 0.05) if target.provider == "anthropic" and cached else 0
                usage = Usage(input_tokens=total_in - read - write, output_tokens=out,
                              cache_read_tokens=read, cache_write_tokens=write)
                rows.append(ModelCall(
                    route=route, user=user, team=team_of[user.pk], target_id=target.id, provider=target.provider,
                    model=target.model, prompt_variant=variant, arm=arm, rollout_id=rollout_id,
                    input_tokens=usage.input_tokens, output_tokens=out, cache_read_tokens=read, cache_write_tokens=write,
                    cost=target.cost(usage), latency_ms=int(rng.uniform(400, 4000)),
                    stop_reason="end_turn", error="" if rng.random() > 0.01 else "HTTP 529 from anthropic: overloaded",
                ))
                stamps.append(at)
    created = ModelCall.objects.bulk_create(rows, batch_size=500)
    for start in range(0, len(created), 300):
        chunk = list(zip(created[start:start + 300], stamps[start:start + 300], strict=True))
        ModelCall.objects.filter(pk__in=[c.pk for c, _ in chunk]).update(created_at=Case(
            *[When(pk=c.pk, then=Value(at)) for c, at in chunk], output_field=DateTimeField()))
    scores = []
    for call in ModelCall.objects.filter(rollout=rollout, error=""):
        if rng.random() < 0.6:
            base = 0.81 if call.arm == "baseline" else 0.80
            scores.append(CallScore(call=call, metric="judge.quality", value=round(min(1, max(0, rng.gauss(base, 0.1))), 2),
                                    source="router.online_eval"))
    CallScore.objects.bulk_create(scores, ignore_conflicts=True)


def _evals(targets) -> None:
    """Run the eval sets whose route has rules in the running product (offline or real)."""

    for route in (ROLLOUT_ROUTE,):
        if not evals.has_eval_set(route) or policy_for(route) is None:
            continue
        route_obj = Route.objects.get(name=route)
        flash = targets["deepseek-v4-flash-atlas"]
        pairs = [(route_obj.baseline, "default"), (flash, "default")]
        known = evals.eval_variants(route) or set()
        # The running rollout's candidate prompt, beside the default prompt on the same target.
        pairs += [(flash, v.name) for v in route_obj.variants.exclude(name="default") if v.name in known]
        for target, variant in pairs:
            if not route_obj.eval_runs.filter(target=target, variant=variant).exists():
                run = evals.eval_run_create(route=route_obj, target=target, variant=variant)
                evals.eval_run_execute(run_id=run.pk)


def seed(ctx) -> None:
    routing.ensure_defaults()
    now = timezone.now()
    hosts = _hosts()
    targets = _targets(hosts)
    rollout = _rollouts(ctx, targets, now)
    _calls(ctx, rollout, now)
    routing.invalidate()
    _evals(targets)
