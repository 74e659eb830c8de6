"""Which target serves a route for a user.

The route table is read from the database once and kept in the cache (invalidated when
a route or target changes), so choosing a target costs no query in the steady state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal

from django.core.cache import cache
from django.db import transaction

TABLE_CACHE_KEY = "router:table:v1"

DEFAULT_TARGETS = [
    {
        "name": "claude-sonnet-4-6-anthropic", "provider": "anthropic", "model": "claude-sonnet-4-6",
        "input_price": "3", "output_price": "15", "cache_write_price": "3.75", "cache_read_price": "0.30",
    },
    {
        "name": "claude-haiku-4-5-anthropic", "provider": "anthropic", "model": "claude-haiku-4-5",
        "input_price": "1", "output_price": "5", "cache_write_price": "1.25", "cache_read_price": "0.10",
    },
    {
        "name": "offline-rules", "provider": "offline", "model": "lindy-offline-rules-1",
        "input_price": "0", "output_price": "0", "cache_write_price": "0", "cache_read_price": "0",
    },
]
DEFAULT_TARGET = "claude-sonnet-4-6-anthropic"

# The routes the product calls, with what they are for.
KNOWN_ROUTES = {
    "agent": "The assistant's own turns in a task.",
    "validator": "Checks an action's justification before it reaches a third party.",
    "memory.summarize": "Condenses new hydration items into tagged facts.",
    "memory.agent": "Edits a memory file system from the summaries.",
    "memory.count_tokens": "Counts the tokens of memory files against their budgets.",
    "learner.propose": "Proposes edits to a user's drafting context.",
    "learner.judge": "Judges which draft is closer to the email really sent.",
    "email.draft": "Drafts email replies in the user's voice.",
}


@dataclass(frozen=True)
class TargetInfo:
    id: int
    name: str
    provider: str
    model: str
    input_price: Decimal
    output_price: Decimal
    cache_write_price: Decimal
    cache_read_price: Decimal

    def cost(self, usage) -> Decimal:
        total = (
            self.input_price * usage.input_tokens
            + self.output_price * usage.output_tokens
            + self.cache_write_price * usage.cache_write_tokens
            + self.cache_read_price * usage.cache_read_tokens
        )
        return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))

    @classmethod
    def from_model(cls, target) -> TargetInfo:
        return cls(
            id=target.pk, name=target.name, provider=target.provider, model=target.model,
            input_price=target.input_price, output_price=target.output_price,
            cache_write_price=target.cache_write_price, cache_read_price=target.cache_read_price,
        )


@dataclass(frozen=True)
class RouteInfo:
    name: str
    baseline: TargetInfo
    max_tokens: int


@dataclass(frozen=True)
class Assignment:
    route: str
    target: TargetInfo
    prompt_variant: str
    arm: str
    reason: str
    max_tokens: int


def ensure_defaults() -> None:
    """Create the default targets and the known routes if missing. Idempotent."""
    from .models import Route, Target

    with transaction.atomic():
        for spec in DEFAULT_TARGETS:
            Target.objects.get_or_create(name=spec["name"], defaults={k: v for k, v in spec.items() if k != "name"})
        default = Target.objects.get(name=DEFAULT_TARGET)
        for name, description in KNOWN_ROUTES.items():
            Route.objects.get_or_create(name=name, defaults={"description": description, "baseline": default})
    invalidate()


def ensure_defaults_on_migrate(sender, **kwargs):
    ensure_defaults()


def invalidate() -> None:
    cache.delete(TABLE_CACHE_KEY)


def _load_table() -> dict[str, dict]:
    from .models import Route

    return {
        route.name: {"baseline": asdict(TargetInfo.from_model(route.baseline)), "max_tokens": route.max_tokens}
        for route in Route.objects.select_related("baseline")
    }


def route_table() -> dict[str, RouteInfo]:
    raw = cache.get(TABLE_CACHE_KEY)
    if raw is None:
        raw = _load_table()
        cache.set(TABLE_CACHE_KEY, raw, timeout=None)
    return {
        name: RouteInfo(name=name, baseline=TargetInfo(**row["baseline"]), max_tokens=row["max_tokens"])
        for name, row in raw.items()
    }


def assign(route: str, user=None) -> Assignment:
    """The target that serves `route` for `user` now, and why."""
    table = route_table()
    info = table.get(route)
    if info is None:
        ensure_defaults()
        info = route_table().get(route)
        if info is None:
            from .models import Route, Target

            Route.objects.get_or_create(name=route, defaults={"baseline": Target.objects.get(name=DEFAULT_TARGET)})
            invalidate()
            info = route_table()[route]
    return Assignment(
        route=route, target=info.baseline, prompt_variant="default", arm="baseline",
        reason="baseline", max_tokens=info.max_tokens,
    )
