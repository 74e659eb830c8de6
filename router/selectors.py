"""Reads: per-arm statistics of a rollout, cost per route/target/day, savings."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Aggregate, Avg, Case, Count, F, FloatField, Max, Min, Q, Sum, Value, When
from django.db.models.functions import Cast, Coalesce, TruncDate
from django.utils import timezone

from lindy.models import AuditEntry

from . import permissions, routing
from .models import CallScore, EvalRun, ModelCall, Provider, Rollout, RolloutEvent, Route, Target
from .provider_keys import key_binding, url_env_for

ARMS = ("baseline", "candidate")
AUDIT_LIMIT = 20


def route_audit_events(route: Route, variants, limit: int = AUDIT_LIMIT) -> list[AuditEntry]:
    """The latest configuration changes of a route and of its prompt `variants` (the page has them)."""
    variant_ids = [str(v.pk) for v in variants]
    return list(
        AuditEntry.objects.filter(Q(object_type="route", object_id=str(route.pk))
                                  | Q(object_type="prompt_variant", object_id__in=variant_ids))
        .select_related("actor")[:limit]
    )


def target_audit_events(limit: int = AUDIT_LIMIT) -> list[AuditEntry]:
    """The latest changes to targets and providers."""
    return list(AuditEntry.objects.filter(object_type__in=("target", "provider")).select_related("actor")[:limit])


def provider_rows() -> list[dict]:
    """Each provider with what its key binding allows: the page says why a row sends no key."""
    rows = []
    for provider in Provider.objects.order_by("name"):
        binding = key_binding(base_url=provider.base_url, key_env=provider.api_key_env)
        if binding.refusal:
            key_status = binding.refusal
        elif binding.key:
            key_status = "Sent only to the host its URL variable names."
        else:
            key_status = ""
        rows.append({"provider": provider, "key_ok": not binding.refusal, "key_status": key_status,
                     "url_env": url_env_for(provider.api_key_env) if provider.api_key_env else ""})
    return rows


def guardrail_since(now=None):
    """The superuser's home page counts a rollout's calls this recent (a glance, not a test: the
    guardrails count from the stage's start, `stage_since`)."""
    return (now or timezone.now()) - timedelta(days=settings.ROUTER_GUARDRAIL_WINDOW_DAYS)


def stage_since(rollout: Rollout):
    """Where the guardrails' sequences start: the current stage's start. An always-valid sequence
    needs a fixed start; a sliding window would drop early units and let the sequence wander."""
    return rollout.stage_started_at or rollout.created_at


def sample_variance(n: int, total, squares) -> float:
    """The sample variance from a count, a sum and a sum of squares, which every database
    aggregates alike (SQLite's VAR_SAMP raises on a single row where PostgreSQL's gives NULL).
    0 below two values."""
    if n < 2 or total is None or squares is None:
        return 0.0
    total, squares = float(total), float(squares)
    return max(0.0, (squares - total * total / n) / (n - 1))


def _unit(prefix: str = ""):
    """The randomized unit of a call: its user (sticky buckets assign users, not calls). A call
    with no user (a background job) is a unit of its own, keyed by its negated id."""
    return Coalesce(F(f"{prefix}user_id"), Value(0) - F(f"{prefix}id"))


def _moments(row: dict, key: str) -> tuple[int, float, float]:
    """(units, mean, sample variance) of the per-unit values `key` aggregated as n_/s_/q_."""
    n = row[f"n_{key}"] or 0
    total = row[f"s_{key}"]
    return n, (float(total) / n if n and total is not None else 0.0), sample_variance(n, total, row[f"q_{key}"])


def _per_unit_aggregate(inner, keys, **totals) -> dict:
    """Outer count, sum and sum of squares over per-unit values, and `totals` (Django wraps
    `inner`, grouped by unit, in a subquery: one query, the same on SQLite and PostgreSQL)."""
    spec = dict(totals)
    for key in keys:
        spec.update({f"n_{key}": Count(key), f"s_{key}": Sum(key), f"q_{key}": Sum(F(key) * F(key))})
    return inner.aggregate(**spec)


def arm_calls(rollout: Rollout, *, now=None) -> dict:
    """Per arm, from the stage's start, with users as the unit: each user's error share, mean
    latency and mean cost per successful call, then the mean and sample variance of those over the
    users (what the guardrails compare), beside the plain counts of calls and users."""
    since = stage_since(rollout)
    out = {}
    for arm in ARMS:
        inner = (
            ModelCall.objects.filter(rollout=rollout, arm=arm, created_at__gte=since,
                                     **({"created_at__lte": now} if now else {}))
            .annotate(unit=_unit()).values("unit")
            .annotate(c=Count("id"), e=Count("id", filter=~Q(error="")), cost_total=Sum("cost"),
                      err=Avg(Case(When(error="", then=Value(0.0)), default=Value(1.0), output_field=FloatField())),
                      lat=Avg(Cast("latency_ms", FloatField()), filter=Q(error="")),
                      cost=Avg(Cast("cost", FloatField()), filter=Q(error="")))
        )
        row = totals = _per_unit_aggregate(inner, ("err", "lat", "cost"), calls=Sum("c"), errors=Sum("e"),
                                           total_cost=Sum("cost_total"))
        users, error_rate, error_var = _moments(row, "err")
        ok_users, latency_mean, latency_var = _moments(row, "lat")
        _, cost_mean, cost_var = _moments(row, "cost")
        calls = totals["calls"] or 0
        out[arm] = {
            "calls": calls, "errors": totals["errors"] or 0, "users": users, "cost": float(totals["total_cost"] or 0),
            "calls_per_user": calls / users if users else 0.0,
            "error_rate": error_rate, "error_var": error_var, "ok_users": ok_users,
            "latency_mean": latency_mean, "latency_var": latency_var, "cost_mean": cost_mean, "cost_var": cost_var,
        }
    return out


def arm_scores(rollout: Rollout, *, now=None) -> dict[str, dict[str, dict]]:
    """metric -> arm -> {mean, var, n, calls}, from the stage's start with users as the unit: n
    users with a score, each contributing their mean score (var: the sample variance of those
    means, for the guardrails' sequential test); calls: the scored calls behind them."""
    scope = CallScore.objects.filter(call__rollout=rollout, call__arm__in=ARMS,
                                     call__created_at__gte=stage_since(rollout),
                                     **({"call__created_at__lte": now} if now else {}))
    names = sorted(set(scope.values_list("metric", flat=True).distinct()))
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    if not names:
        return {}
    for arm in ARMS:
        per_metric: dict[str, Aggregate] = {}
        for i, name in enumerate(names):
            per_metric[f"m{i}"] = Avg("value", filter=Q(metric=name))
            per_metric[f"c{i}"] = Count("id", filter=Q(metric=name))
        inner = scope.filter(call__arm=arm).annotate(unit=_unit("call__")).values("unit").annotate(**per_metric)
        row = calls = _per_unit_aggregate(inner, [f"m{i}" for i in range(len(names))],
                                          **{f"calls{i}": Sum(f"c{i}") for i in range(len(names))})
        for i, name in enumerate(names):
            n, mean, var = _moments(row, f"m{i}")
            if n:
                out[name][arm] = {"mean": mean, "var": var, "n": n, "calls": calls[f"calls{i}"] or 0}
    return dict(out)


def stage_users(rollout: Rollout, *, since) -> dict[str, int]:
    """Distinct users per arm with a call since `since`, internal users left out: those get the
    candidate whatever their bucket, so only the others show whether bucketing splits as set."""
    rows = (
        ModelCall.objects.filter(rollout=rollout, arm__in=ARMS, created_at__gte=since, user__isnull=False,
                                 user__is_internal=False)
        .values("arm").annotate(users=Count("user", distinct=True))
    )
    out = dict.fromkeys(ARMS, 0)
    out.update({row["arm"]: row["users"] for row in rows})
    return out


def scored_calls(rollout: Rollout, *, arm: str, since=None, now=None) -> int:
    qs = CallScore.objects.filter(call__rollout=rollout, call__arm=arm,
                                  call__created_at__gte=since or stage_since(rollout))
    return qs.values("call").distinct().count()


def arm_retention(rollout: Rollout, *, now=None) -> dict[str, dict]:
    """Per arm: of the users whose first call in the rollout on that arm was at least
    `retention_days` ago, the share who made any call `retention_days` or more after it. The cohort
    counts from the rollout's start (a fixed start: a user keeps their arm across stages, sticky
    buckets, so every stage watches the same growing cohort)."""
    now = now or timezone.now()
    window = timedelta(days=rollout.retention_days)
    since = rollout.created_at
    out = {}
    for arm in ARMS:
        firsts = dict(
            ModelCall.objects.filter(rollout=rollout, arm=arm, user__isnull=False,
                                     created_at__gte=since, created_at__lte=now - window)
            .values("user").annotate(first=Min("created_at")).values_list("user", "first")
        )
        earliest = min(firsts.values(), default=now)
        lasts = dict(
            ModelCall.objects.filter(user_id__in=list(firsts), created_at__gte=earliest + window,
                                     created_at__lte=now)
            .values("user").annotate(last=Max("created_at")).values_list("user", "last")
        ) if firsts else {}
        retained = sum(1 for user, first in firsts.items() if lasts.get(user) and lasts[user] >= first + window)
        cohort = len(firsts)
        out[arm] = {"cohort": cohort, "retained": retained, "rate": retained / cohort if cohort else 0.0}
    return out


def traffic_share(rollout: Rollout, *, days: int = 30) -> dict:
    """Per day: the candidate's share of the rollout's calls, and the configured percentage."""
    start = (rollout.created_at - timedelta(days=1)).date()
    end = (rollout.ended_at or timezone.now()).date()
    if (end - start).days > days:
        start = end - timedelta(days=days)
    rows = (
        ModelCall.objects.filter(rollout=rollout, arm__in=ARMS, created_at__date__gte=start)
        .annotate(day=TruncDate("created_at")).values("day", "arm").annotate(n=Count("id"))
    )
    per_day: dict[date, dict[str, int]] = defaultdict(lambda: {"baseline": 0, "candidate": 0})
    for row in rows:
        per_day[row["day"]][row["arm"]] = row["n"]
    events = list(rollout.events.order_by("created_at", "pk").values_list("created_at", "to_percent"))
    labels, share, configured = [], [], []
    day = start
    while day <= end:
        counts = per_day.get(day, {"baseline": 0, "candidate": 0})
        total = counts["baseline"] + counts["candidate"]
        labels.append(day.isoformat())
        share.append(round(100 * counts["candidate"] / total, 1) if total else None)
        percent = 0.0
        for at, to in events:
            if at.date() <= day:
                percent = float(to)
        configured.append(percent)
        day += timedelta(days=1)
    return {"labels": labels, "share": share, "configured": configured}


def rollout_savings(rollout: Rollout) -> dict:
    """What the candidate arm's calls cost, and what the same tokens would have cost on the baseline.
    Only calls the candidate target really served count (not those the offline provider answered)."""
    totals = ModelCall.objects.filter(
        rollout=rollout, arm="candidate", target_id=rollout.candidate_id, error=""
    ).aggregate(
        calls=Count("id"), input=Sum("input_tokens"), output=Sum("output_tokens"),
        cache_read=Sum("cache_read_tokens"), cache_write=Sum("cache_write_tokens"), cost=Sum("cost"),
    )
    baseline = rollout.baseline
    on_baseline = baseline.cost(
        input_tokens=totals["input"] or 0, output_tokens=totals["output"] or 0,
        cache_read_tokens=totals["cache_read"] or 0, cache_write_tokens=totals["cache_write"] or 0,
    )
    actual = totals["cost"] or Decimal("0")
    return {
        "calls": totals["calls"], "actual": actual, "on_baseline": on_baseline, "saved": on_baseline - actual,
        "saved_percent": float(100 * (on_baseline - actual) / on_baseline) if on_baseline else 0.0,
    }


def usage_calls(user):
    """The calls whose usage this user may see: all for superusers, their admin teams' otherwise."""
    if permissions.is_superuser(user):
        return ModelCall.objects.all()
    return ModelCall.objects.filter(team_id__in=permissions.admin_team_ids(user))


def cost_rows(user, *, days: int = 14, route: str | None = None):
    """Per day, route and target: calls, tokens and cost."""
    since = timezone.now() - timedelta(days=days)
    qs = usage_calls(user).filter(created_at__gte=since)
    if route:
        qs = qs.filter(route=route)
    return (
        qs.annotate(day=TruncDate("created_at"))
        .values("day", "route", "target__name", "provider")
        .annotate(
            calls=Count("id"), input=Sum("input_tokens"), output=Sum("output_tokens"),
            cache_read=Sum("cache_read_tokens"), cache_write=Sum("cache_write_tokens"), cost=Sum("cost"),
        )
        .order_by("-day", "route", "target__name")
    )


def cost_chart(rows, *, days: int = 14) -> dict:
    """Cost per route per day, for a stacked chart."""
    today = timezone.now().date()
    labels = [(today - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
    index = {label: i for i, label in enumerate(labels)}
    series: dict[str, list[float]] = {}
    for row in rows:
        key = row["day"].isoformat()
        if key not in index:
            continue
        series.setdefault(row["route"], [0.0] * days)[index[key]] += float(row["cost"] or 0)
    return {"labels": labels, "datasets": [{"label": k, "data": [round(v, 6) for v in series[k]]} for k in sorted(series)]}


def cost_totals(rows) -> list[dict]:
    totals: defaultdict[tuple[str, str], dict[str, int | Decimal]] = defaultdict(lambda: {"calls": 0, "input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost": Decimal("0")})
    for row in rows:
        total = totals[(row["route"], row["target__name"] or f"({row['provider']})")]
        for key in ("calls", "input", "output", "cache_read", "cache_write"):
            total[key] += row[key] or 0
        total["cost"] += row["cost"] or Decimal("0")
    return [{"route": r, "target": t, **v} for (r, t), v in sorted(totals.items())]


def owned_routes():
    """Routes an app registered (routing.register_route). A row left for a route no code calls
    (a feature removed, an old demo) is not offered for rollouts, evals or cost filters."""
    return Route.objects.filter(name__in=list(routing.registered_routes()))


def routes_overview():
    active = {
        r.route_id: r
        for r in Rollout.objects.filter(status__in=Rollout.ACTIVE).select_related("candidate")
    }
    routes = list(owned_routes().select_related("baseline").order_by("name"))
    for route in routes:
        route.active_rollout = active.get(route.pk)
    return routes


def eval_matrix(route: Route) -> list[dict]:
    """The latest finished eval run per (target, variant), side by side."""
    latest: dict[tuple[int, str], EvalRun] = {}
    for run in EvalRun.objects.filter(route=route).select_related("target").order_by("-created_at")[:200]:
        latest.setdefault((run.target_id, run.variant), run)
    return sorted(
        ({"target": run.target, "variant": run.variant, "run": run} for run in latest.values()),
        key=lambda row: (-(row["run"].score or 0), row["target"].name),
    )


def rollout_events(rollout: Rollout):
    return RolloutEvent.objects.filter(rollout=rollout).select_related("actor").order_by("created_at", "pk")


def selectable_targets():
    return Target.objects.filter(user_selectable=True).order_by("name")


HOME_LIMIT = 5


def home_rollouts(user) -> dict:
    """The superuser's home page: every live (running or paused) rollout, newest first, with the
    evidence it stands on: the offline eval (or the override) that let it start, its calls per arm
    in the guardrail window and the guardrail's last verdict. Three bounded queries."""
    live = Rollout.objects.filter(status__in=Rollout.ACTIVE)
    rollouts = list(live.select_related("route", "baseline", "candidate").order_by("-created_at", "-pk")[:HOME_LIMIT])
    count = len(rollouts) if len(rollouts) < HOME_LIMIT else live.count()
    calls: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(ARMS, 0))
    for rollout_id, arm, n in (
        ModelCall.objects.filter(rollout__in=rollouts, arm__in=ARMS, created_at__gte=guardrail_since())
        .values_list("rollout", "arm").annotate(n=Count("id")).order_by()
    ):
        calls[rollout_id][arm] = n
    rows = []
    for rollout in rollouts:
        evidence = rollout.offline_evidence or {}
        check = rollout.last_check or {}
        rows.append({
            "rollout": rollout, "calls": calls[rollout.pk],
            "candidate_run": evidence.get("candidate_run"), "baseline_run": evidence.get("baseline_run"),
            "override": rollout.override_reason,
            "decision": check.get("decision", ""), "problems": len(check.get("problems", [])),
            "pending": len(check.get("pending", [])),
        })
    return {"rows": rows, "count": count}


def home_cost_trend(user, *, days: int = 14) -> dict:
    """Cost and calls per day over the last `days` days (today included), this week against the
    week before, and how many calls the offline provider answered (they cost nothing). One query."""
    today = timezone.localdate()
    start = today - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(start, time.min))
    rows = {
        row["day"]: row
        for row in usage_calls(user).filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at")).values("day")
        .annotate(calls=Count("id"), cost=Sum("cost"), offline=Count("id", filter=Q(provider="offline")))
        .order_by()
    }
    series = []
    for i in range(days):
        day = start + timedelta(days=i)
        row = rows.get(day) or {}
        series.append({"day": day, "calls": row.get("calls", 0), "cost": row.get("cost") or Decimal("0"),
                       "offline": row.get("offline", 0)})
    # The bars show cost; when nothing cost anything (the offline provider), they show calls.
    top_cost = max((point["cost"] for point in series), default=Decimal("0"))
    top_calls = max((point["calls"] for point in series), default=0)
    for point in series:
        if top_cost:
            point["bar"] = int(100 * point["cost"] / top_cost)
        else:
            point["bar"] = int(100 * point["calls"] / top_calls) if top_calls else 0
    week = sum((point["cost"] for point in series[-7:]), Decimal("0"))
    before = sum((point["cost"] for point in series[-14:-7]), Decimal("0"))
    return {
        "series": series, "days": days, "week": week, "before": before, "bars": "cost" if top_cost else "calls",
        "change_percent": float(100 * (week - before) / before) if before else None,
        "calls": sum(point["calls"] for point in series), "offline": sum(point["offline"] for point in series),
    }
