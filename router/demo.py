"""Demo configuration for the Models pages: two OpenAI-compatible hosts and three cheaper
targets a rollout can move a route to. Written through the router's services (audited).

The router writes no calls, scores or rollouts for the demo: those come from running the
product (agent/demo_history.py: two weeks of validator traffic on a simulated clock, offline
evals, a rollout and the guardrail job), so only routes the product calls appear, with the
prompts their owners really build. Idempotent: a second run changes nothing.
"""

from __future__ import annotations

from decimal import Decimal

from . import routing, services
from .models import Provider, Target


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


def seed(ctx) -> None:
    routing.ensure_defaults()
    _targets(_hosts())
    routing.invalidate()
