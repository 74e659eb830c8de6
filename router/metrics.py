"""lindy_model_* : every model call the gateway made (router.models.ModelCall), by route and target,
and each provider's budget in use (router.limits). Registered with lindy.metrics in RouterConfig.ready."""

from collections.abc import Iterable

from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from . import limits
from .models import ModelCall

TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")


def collect() -> Iterable[Metric]:
    labels = ["route", "target"]
    calls = CounterMetricFamily("lindy_model_calls", "Model calls made, by route and target.", labels=labels)
    errors = CounterMetricFamily("lindy_model_call_errors", "Model calls that failed, by route and target.",
                                 labels=labels)
    tokens = CounterMetricFamily("lindy_model_tokens", "Tokens of model calls, by route, target and kind.",
                                 labels=[*labels, "kind"])
    cost = CounterMetricFamily("lindy_model_cost_usd", "Cost of model calls in US dollars, by route and target.",
                               labels=labels)
    rows = (ModelCall.objects.values("route", "provider", "model")
            .annotate(target=Coalesce("target__name", "model"), calls=Count("pk"), errors=Count("pk", filter=~Q(error="")),
                      cost=Sum("cost"), **{kind: Sum(f"{kind}_tokens") for kind in TOKEN_KINDS})
            .order_by())
    for row in rows:
        key = [row["route"], row["target"]]
        calls.add_metric(key, row["calls"])
        errors.add_metric(key, row["errors"])
        cost.add_metric(key, float(row["cost"] or 0))
        for kind in TOKEN_KINDS:
            tokens.add_metric([*key, kind], row[kind] or 0)
    yield from (calls, errors, tokens, cost)

    used = GaugeMetricFamily("lindy_provider_budget_used", "Requests and tokens each provider used over about the "
                             "last minute (shared by all workers through Redis).", labels=["provider", "kind"])
    limit = GaugeMetricFamily("lindy_provider_budget_limit", "Each provider's budget per minute (0: unlimited).",
                              labels=["provider", "kind"])
    for budget in limits.budget_rows():
        limit.add_metric([budget.key, "requests"], budget.configured.requests_per_minute)
        limit.add_metric([budget.key, "tokens"], budget.configured.tokens_per_minute)
        if budget.used is not None:
            used.add_metric([budget.key, "requests"], budget.used[0])
            used.add_metric([budget.key, "tokens"], budget.used[1])
    yield from (used, limit)
