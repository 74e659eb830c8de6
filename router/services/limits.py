"""Provider budgets and route concurrency, as a superuser sets them on the Budgets page: stored
in the database over the settings' defaults, each change audited in its transaction. The next
call of every worker reads them (router.budgets) with the routing table, whose version each change bumps."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from .. import routing
from ..limits import budget_keys
from ..models import MAX_BUDGET, AuditAction, ProviderBudget, Route
from .audit import audit_event_record, snapshot

BUDGET_FIELDS = ["key", "requests_per_minute", "tokens_per_minute"]


def _known(key: str) -> None:
    if key not in budget_keys():
        raise ValidationError({"key": f"{key!r} is not a provider that calls out, nor \"default\"."})


def _within(name: str, value: int) -> None:
    if not 0 <= value <= MAX_BUDGET:
        raise ValidationError({name: f"Between 0 (unlimited) and {MAX_BUDGET:,}."})


def provider_budget_set(*, key: str, requests_per_minute: int, tokens_per_minute: int, actor) -> ProviderBudget:
    """Set `key`'s requests and tokens per minute (0: unlimited)."""
    _known(key)
    _within("requests_per_minute", requests_per_minute)
    _within("tokens_per_minute", tokens_per_minute)
    with transaction.atomic():
        row = ProviderBudget.objects.select_for_update().filter(key=key).first()
        before = snapshot(row, BUDGET_FIELDS) if row else None
        if row is None:
            row = ProviderBudget(key=key, requests_per_minute=0, tokens_per_minute=0)
        row.requests_per_minute, row.tokens_per_minute = requests_per_minute, tokens_per_minute
        row.save()
        audit_event_record(actor=actor, action=AuditAction.PROVIDER_BUDGET_SET, obj=row, before=before,
                           after=snapshot(row, BUDGET_FIELDS))
        routing.invalidate()  # budgets travel with the routing table
    return row


def provider_budget_clear(*, key: str, actor) -> None:
    """Back to the settings' budget for `key` (nothing to do when none was set here)."""
    _known(key)
    with transaction.atomic():
        row = ProviderBudget.objects.select_for_update().filter(key=key).first()
        if row is None:
            return
        before, pk = snapshot(row, BUDGET_FIELDS), row.pk
        row.delete()
        row.pk = pk  # the audit names the row that was removed
        audit_event_record(actor=actor, action=AuditAction.PROVIDER_BUDGET_SET, obj=row, before=before,
                           after=None)
        routing.invalidate()


def route_concurrency_set(*, route: Route, max_concurrency: int | None, actor) -> Route:
    """Calls `route` may have in flight at once (0: no limit; None: the setting's)."""
    if max_concurrency is not None:
        _within("max_concurrency", max_concurrency)
    with transaction.atomic():
        route = Route.objects.select_for_update().get(pk=route.pk)
        before = snapshot(route, ["max_concurrency"])
        route.max_concurrency = max_concurrency
        route.save(update_fields=["max_concurrency", "updated_at"])
        audit_event_record(actor=actor, action=AuditAction.ROUTE_CONCURRENCY_SET, obj=route, before=before,
                           after=snapshot(route, ["max_concurrency"]))
        routing.invalidate()
    return route
