"""Which target serves a route for a user, and why.

The decision is a pure function of a routing table (routes, their baselines, active
rollouts, targets), the user's explicit choices and the user (id, internal flag). A change to
a route, target, provider, rollout, variant or choice bumps a version key in the Django cache
(router.signals), shared by every process.

Choosing a target must cost microseconds next to the decision itself, so nothing on the hot
path talks to Redis on every call:
- the table lives in process memory and is checked against the version key at most once a
  second (CHECK_EVERY): a change made in another process is seen within a second, one made in
  this process at once; a new version is read from the cache (one GET) or the database;
- a user's explicit choices are not part of the table (a table holding every user's choices
  would be loaded into every process): they are looked up for that one user when a call is
  made for them (process memory, then the shared cache, then the database) and kept in process
  memory, for the current version only and for at most CHOICE_TTL seconds.
If the cache cannot be reached, the table and choices are read from the database.

Bucketing: sha256("{salt}:{user_id}") into 10,000 buckets; a user is on the candidate when
bucket < percent × 100. The bucket never changes for a (rollout, user), so raising the
percentage keeps everyone already on the candidate (monotonic).
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db import transaction

from lindy import outages

from . import variants
from .models import ModelChoice, PromptVariant, Provider, ProviderBudget, Rollout, Route, Target
from .registry import _ROUTES, RouteSpec, label_of, register_route, registered_routes, user_facing_routes  # noqa: F401  (the routing API)

VERSION_KEY = "router:table:version"
TABLE_KEY = "router:table:{version}"
CHOICES_KEY = "router:choices:{version}:{user_id}"
# Seconds a process trusts its table before checking the version key again.
CHECK_EVERY = 1.0
# Seconds a process keeps one user's choices (for the current version only), and how many users.
CHOICE_TTL = 60.0
MAX_CACHED_USERS = 10_000
BUCKETS = 10_000
ALL_ROUTES = ""

DEFAULT_PROVIDERS = [
    # Its key is the ANTHROPIC_API_KEY setting (router.providers.anthropic), not a per-row variable.
    {"name": "anthropic", "kind": "anthropic", "base_url": "", "api_key_env": ""},
    {"name": "offline", "kind": "offline", "base_url": "", "api_key_env": ""},
]
DEFAULT_TARGETS: list[dict[str, Any]] = [
    {
        "name": "claude-sonnet-4-6-anthropic", "provider": "anthropic", "model": "claude-sonnet-4-6",
        "input_price": "3", "output_price": "15", "cache_write_price": "3.75", "cache_read_price": "0.30",
        "user_selectable": True, "accepts_images": True, "host": "anthropic",
    },
    {
        "name": "claude-haiku-4-5-anthropic", "provider": "anthropic", "model": "claude-haiku-4-5",
        "input_price": "1", "output_price": "5", "cache_write_price": "1.25", "cache_read_price": "0.10",
        "user_selectable": True, "accepts_images": True, "host": "anthropic",
    },
    {
        "name": "offline-rules", "provider": "offline", "model": "lindy-offline-rules-1",
        "input_price": "0", "output_price": "0", "cache_write_price": "0", "cache_read_price": "0",
        "host": "offline",
    },
]
DEFAULT_TARGET = "claude-sonnet-4-6-anthropic"



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
    host: str = ""
    base_url: str = ""
    api_key_env: str = ""
    timeout_seconds: int = 60
    max_retries: int = 2
    quantization: str = ""
    accepts_images: bool = False

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
        host = target.host
        return cls(
            id=target.pk, name=target.name, provider=target.provider, model=target.model,
            input_price=target.input_price, output_price=target.output_price,
            cache_write_price=target.cache_write_price, cache_read_price=target.cache_read_price,
            host=host.name if host else "", base_url=host.base_url if host else "",
            api_key_env=host.api_key_env if host else "",
            timeout_seconds=host.timeout_seconds if host else 60, max_retries=host.max_retries if host else 2,
            quantization=target.quantization, accepts_images=target.accepts_images,
        )


@dataclass(frozen=True)
class RolloutInfo:
    id: int
    salt: str
    candidate_id: int
    candidate_variant: str
    percent: Decimal
    include_internal: bool
    status: str

    @property
    def threshold(self) -> int:
        """Buckets below this are on the candidate."""
        return int((Decimal(self.percent) * BUCKETS / 100).to_integral_value())


@dataclass(frozen=True)
class RouteInfo:
    name: str
    baseline_id: int
    baseline_variant: str
    max_tokens: int
    rollout: RolloutInfo | None = None
    max_concurrency: int | None = None  # None: the setting's (router.budgets)


@dataclass(frozen=True)
class Table:
    targets: dict[int, TargetInfo]
    routes: dict[str, RouteInfo]
    # Provider budgets a superuser set, {key: (requests, tokens) per minute}: router.budgets reads
    # them at every call, so they live here, checked against the version like the rest.
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)


# One user's explicit choices: {route name or ALL_ROUTES: target id}.
Choices = dict[str, int]


@dataclass(frozen=True)
class Assignment:
    route: str
    target: TargetInfo
    prompt_variant: str
    arm: str  # baseline | candidate | choice | eval
    reason: str  # explicit_choice | internal | bucket | baseline | eval
    max_tokens: int
    rollout_id: int | None = None
    bucket: int | None = None
    explanation: str = ""


# Pure decision -----------------------------------------------------------------------


def bucket_of(salt: str, user_id) -> int:
    """The user's bucket (0..9999) in a rollout: stable for (salt, user id)."""
    digest = hashlib.sha256(f"{salt}:{user_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def on_candidate(bucket: int, percent) -> bool:
    return bucket < int((Decimal(str(percent)) * BUCKETS / 100).to_integral_value())


def decide(table: Table, route: RouteInfo, user_id: int | None, is_internal: bool,
           chosen: Choices | None = None) -> Assignment:
    """Explicit choice (`chosen`: the user's choices), then internal users, then the user's
    bucket, then the baseline."""
    baseline = table.targets[route.baseline_id]
    rollout = route.rollout
    if user_id is not None and chosen:
        target_id = chosen.get(route.name, chosen.get(ALL_ROUTES))
        if target_id is not None and target_id in table.targets:
            if rollout and target_id == rollout.candidate_id:
                variant = rollout.candidate_variant
            elif target_id == route.baseline_id:
                variant = route.baseline_variant
            else:
                variant = "default"
            target = table.targets[target_id]
            scope = "this route" if route.name in chosen else "all routes"
            return Assignment(
                target=target, prompt_variant=variant, arm="choice", reason="explicit_choice",
                explanation=f"The user chose {target.name} for {scope} in their profile.",
                route=route.name, max_tokens=route.max_tokens,
            )
    if rollout is not None:
        candidate = table.targets[rollout.candidate_id]
        if is_internal and rollout.include_internal:
            return Assignment(
                target=candidate, prompt_variant=rollout.candidate_variant, arm="candidate", reason="internal",
                rollout_id=rollout.id, explanation="Internal users get the rollout's candidate first.",
                route=route.name, max_tokens=route.max_tokens,
            )
        if user_id is not None:
            bucket = bucket_of(rollout.salt, user_id)
            if bucket < rollout.threshold:
                return Assignment(
                    target=candidate, prompt_variant=rollout.candidate_variant, arm="candidate", reason="bucket",
                    rollout_id=rollout.id, bucket=bucket,
                    explanation=f"Bucket {bucket} of {BUCKETS} is below the rollout's threshold {rollout.threshold} "
                    f"({rollout.percent}%).",
                    route=route.name, max_tokens=route.max_tokens,
                )
            return Assignment(
                target=baseline, prompt_variant=route.baseline_variant, arm="baseline", reason="baseline",
                rollout_id=rollout.id, bucket=bucket,
                explanation=f"Bucket {bucket} is at or above the rollout's threshold {rollout.threshold} "
                f"({rollout.percent}%): baseline.",
                route=route.name, max_tokens=route.max_tokens,
            )
    return Assignment(
        target=baseline, prompt_variant=route.baseline_variant, arm="baseline", reason="baseline",
        explanation="No explicit choice and no active rollout: the route's baseline.",
        route=route.name, max_tokens=route.max_tokens,
    )


# The cached table -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Local:
    version: str
    table: Table
    checked_at: float


_local: _Local | None = None  # this process's table; replaced whole, so threads never see half of it
_choices: dict[int, tuple[str, float, Choices]] = {}  # user id -> (version, loaded at, choices)
_lock = threading.Lock()


def _load() -> dict:
    targets = {t.pk: asdict(TargetInfo.from_model(t)) for t in Target.objects.select_related("host")}
    rollouts = {
        r.route_id: {
            "id": r.pk, "salt": r.salt, "candidate_id": r.candidate_id, "candidate_variant": r.candidate_variant,
            "percent": r.percent, "include_internal": r.include_internal, "status": r.status,
        }
        for r in Rollout.objects.filter(status__in=Rollout.ACTIVE)
    }
    routes = {
        r.name: {
            "name": r.name, "baseline_id": r.baseline_id, "baseline_variant": r.baseline_variant,
            "max_tokens": r.max_tokens, "rollout": rollouts.get(r.pk), "max_concurrency": r.max_concurrency,
        }
        for r in Route.objects.all()
    }
    budgets = {b.key: (b.requests_per_minute, b.tokens_per_minute) for b in ProviderBudget.objects.all()}
    return {"targets": targets, "routes": routes, "budgets": budgets}


def _build(raw: dict) -> Table:
    routes = {}
    for name, row in raw["routes"].items():
        rollout = RolloutInfo(**row["rollout"]) if row["rollout"] else None
        routes[name] = RouteInfo(**{**row, "rollout": rollout})
    return Table(targets={int(k): TargetInfo(**v) for k, v in raw["targets"].items()}, routes=routes,
                 budgets={key: (int(rpm), int(tpm)) for key, (rpm, tpm) in raw.get("budgets", {}).items()})


def _version() -> str:
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, uuid.uuid4().hex, timeout=None)
        version = cache.get(VERSION_KEY)
    return version


def table() -> Table:
    """The routing table: from process memory while it is less than CHECK_EVERY old, then
    checked against the shared version (one cache GET) and reloaded only if it changed."""
    global _local
    local, now = _local, time.monotonic()
    if local is not None and now - local.checked_at < CHECK_EVERY:
        return local.table
    try:
        version = _version()
    except outages.CACHE_ERRORS as exc:
        # The cache is unreachable: the database is the truth, read at most once a second
        # (each read is six queries), and the table whose version can't be checked is dropped.
        outages.report_down("cache", "routing reads its table from the database", exc)
        _local = None
        return _table_from_database(now)
    outages.report_up("cache")
    if local is not None and local.version == version:
        _local = _Local(version, local.table, now)
        return local.table
    key = TABLE_KEY.format(version=version)
    raw = cache.get(key)
    if raw is None:
        raw = _load()
        cache.set(key, raw, timeout=24 * 3600)
    built = _build(raw)
    _local = _Local(version, built, now)
    return built


def user_choices(user_id: int) -> Choices:
    """One user's explicit choices, for the table's current version: from process memory, else
    the shared cache, else the database (one query), kept here for at most CHOICE_TTL seconds."""
    table()  # refreshes the version at most once a second
    local = _local
    version = local.version if local is not None else ""
    now = time.monotonic()
    held = _choices.get(user_id)
    if held is not None and held[0] == version and now - held[1] < CHOICE_TTL:
        return held[2]
    chosen = _user_choices_shared(version, user_id) if version else _user_choices_from_db(user_id)
    with _lock:
        if len(_choices) >= MAX_CACHED_USERS:
            _choices.clear()
        _choices[user_id] = (version, now, chosen)
    return chosen


def _user_choices_shared(version: str, user_id: int) -> Choices:
    key = CHOICES_KEY.format(version=version, user_id=user_id)
    try:
        chosen = cache.get(key)
        if chosen is None:
            chosen = _user_choices_from_db(user_id)
            cache.set(key, chosen, timeout=3600)
    except outages.CACHE_ERRORS as exc:
        outages.report_down("cache", "routing reads users' choices from the database", exc)
        return _user_choices_from_db(user_id)
    return chosen


def _user_choices_from_db(user_id: int) -> Choices:
    return dict(ModelChoice.objects.filter(user_id=user_id).values_list("route", "target_id"))


# While the cache is down, a table read from the database serves this process for a second.
FALLBACK_SECONDS = 1.0
_fallback: tuple[float, Table] | None = None


def _table_from_database(now: float) -> Table:
    global _fallback
    if _fallback is not None and now - _fallback[0] < FALLBACK_SECONDS:
        return _fallback[1]
    built = _build(_load())
    _fallback = (now, built)
    return built


def forget_local() -> None:
    """Drop this process's table and choices: what a fresh process has."""
    global _local, _fallback
    _local = None
    _fallback = None
    _choices.clear()
    variants.forget_stored()


def invalidate() -> None:
    """Bump the table version now and again after the transaction commits, so no process
    keeps a table read before the change was visible."""
    _bump()
    transaction.on_commit(_bump)


def _bump() -> None:
    forget_local()  # this process sees its own change at once, others within CHECK_EVERY
    try:
        cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)
    except outages.CACHE_ERRORS as exc:
        # The change is saved; other processes pick it up at their next version bump. Failing the
        # write that changed the configuration would not make their tables any fresher.
        outages.report_down("cache", "the routing table version could not be bumped", exc)


# Setup -----------------------------------------------------------------------------------


def ensure_defaults() -> None:
    """Create the default providers, targets, the registered routes and the prompt variants
    their owners build (router.variants) if missing. Idempotent."""
    with transaction.atomic():
        hosts = {}
        for spec in DEFAULT_PROVIDERS:
            hosts[spec["name"]] = Provider.objects.get_or_create(
                name=spec["name"], defaults={k: v for k, v in spec.items() if k != "name"}
            )[0]
        for spec in DEFAULT_TARGETS:
            defaults = {k: v for k, v in spec.items() if k not in {"name", "host"}}
            target, _ = Target.objects.get_or_create(name=spec["name"], defaults={**defaults, "host": hosts[spec["host"]]})
            if target.host_id is None:
                Target.objects.filter(pk=target.pk).update(host=hosts[spec["host"]])
        default = Target.objects.get(name=DEFAULT_TARGET)
        for name, route_spec in _ROUTES.items():
            route, _ = Route.objects.get_or_create(
                name=name, defaults={"description": route_spec.description, "baseline": default})
            for variant, description in variants.buildable(name).items():
                PromptVariant.objects.get_or_create(route=route, name=variant, defaults={"description": description[:300]})
    invalidate()


def ensure_defaults_on_migrate(sender, **kwargs):
    ensure_defaults()


class UnknownRoute(LookupError):
    """A model call named a route that has no row: no app registers it (register_route), or the
    database was not migrated since it was registered (ensure_defaults runs after migrate).
    Reading never creates one: a typo must not become a route of its own."""


def _route_info(route: str) -> RouteInfo:
    info = table().routes.get(route)
    if info is None:
        forget_local()  # created since this process read its table: read it again, write nothing
        info = table().routes.get(route)
    if info is None:
        why = "no app registers it" if route not in _ROUTES else "its row is missing: run manage.py migrate"
        raise UnknownRoute(f"Unknown route {route!r}: {why}.")
    return info


def assign(route: str, user=None) -> Assignment:
    """The target that serves `route` for `user` now, and why. `user` is a User (its
    `is_internal` flag is read from the object, no query) or None."""
    info = _route_info(route)
    user_id = getattr(user, "pk", None)
    chosen = user_choices(user_id) if user_id is not None else None
    return decide(table(), info, user_id, bool(getattr(user, "is_internal", False)), chosen)


def assign_target(route: str, target_id: int, variant: str = "default") -> Assignment:
    """A forced assignment, for offline evals of a (target, variant) on a route."""
    info = _route_info(route)
    target = table().targets.get(target_id)
    if target is None:
        invalidate()
        target = table().targets[target_id]
    return Assignment(
        route=route, target=target, prompt_variant=variant, arm="eval", reason="eval",
        max_tokens=info.max_tokens, explanation="Offline evaluation of this target and prompt variant.",
    )
