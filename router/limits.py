"""Reads for the Budgets page: every provider budget and route concurrency limit in force, where
each comes from (database, settings, default), and the current use of each (router.budgets)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from lindy.models import AuditEntry

from . import budgets
from .models import AuditAction, Provider, Route

AUDIT_LIMIT = 20


def budget_keys() -> list[str]:
    """Every key a call can draw from: each provider that calls out (its name is the host of its
    targets), whatever the settings name, and "default" for any provider without its own."""
    names = Provider.objects.exclude(kind=Provider.Kind.OFFLINE).values_list("name", flat=True)
    keys = {*names, *settings.ROUTER_PROVIDER_BUDGETS} - {"offline"}
    return ["default", *sorted(keys - {"default"})]


@dataclass(frozen=True)
class BudgetRow:
    key: str
    configured: budgets.Configured
    used: tuple[int, int] | None  # (requests, tokens) over about the last minute; None: not tracked


@dataclass(frozen=True)
class RouteRow:
    route: str
    limit: int
    source: str
    in_flight: int | None


def budget_rows() -> list[BudgetRow]:
    keys = budget_keys()
    found = budgets.configured(keys)
    limited = {key: c.budget for key, c in found.items() if c.budget is not None}
    used = budgets.usage(limited) or {}
    return [BudgetRow(key, found[key], used.get(key)) for key in keys]


def route_rows() -> list[RouteRow]:
    names = list(Route.objects.order_by("name").values_list("name", flat=True))
    limits = budgets.route_limits(names)
    flying = budgets.in_flight(names) or {}
    return [RouteRow(name, *limits[name], flying.get(name)) for name in names]


def audit_events(limit: int = AUDIT_LIMIT) -> list[AuditEntry]:
    actions = [AuditAction.PROVIDER_BUDGET_SET, AuditAction.ROUTE_CONCURRENCY_SET]
    return list(AuditEntry.objects.filter(action__in=actions).select_related("actor")[:limit])
