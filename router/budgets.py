"""Provider budgets, shared by every worker through Redis.

- Requests and tokens per minute per provider: two token buckets taken together, atomically,
  by one Lua script (a call takes 1 request and its estimated tokens from both, or nothing).
- Concurrency per route: a Redis sorted set of slots, each with an expiry, so a worker killed
  in the middle of a call frees its slot when the expiry passes instead of holding it forever.

Budgets protect providers; they must not take the product down: when Redis cannot be reached
the call is allowed (and logged). Without REDIS_URL (a laptop) there are no budgets.

The numbers: a superuser sets them on the Budgets page (ProviderBudget rows, Route.max_concurrency);
ROUTER_PROVIDER_BUDGETS and ROUTER_ROUTE_CONCURRENCY are the defaults. They travel with the
routing table, so a call reads them from process memory and a change reaches every worker within
a second (router.routing.CHECK_EVERY).

    wait = take("anthropic", tokens=1200)   # 0.0: go; > 0: seconds until the buckets allow it
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from lindy import jobs

from .types import ModelError

logger = logging.getLogger(__name__)

# KEYS: the request bucket, the token bucket. ARGV: now (s), then for each bucket its capacity
# and refill per second, then the requests and tokens this call takes. A bucket is a hash
# {level, at}; it starts full. Returns 0 when taken, else the ms until both buckets would allow it.
_TAKE = """
local now = tonumber(ARGV[1])
local wait = 0
local levels = {}
for i = 1, 2 do
  local capacity = tonumber(ARGV[2 * i])
  local rate = tonumber(ARGV[2 * i + 1])
  local cost = math.min(tonumber(ARGV[5 + i]), capacity)
  local state = redis.call('HMGET', KEYS[i], 'level', 'at')
  local level = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  level = math.min(capacity, level + math.max(0, now - at) * rate)
  levels[i] = level - cost
  if level < cost then wait = math.max(wait, (cost - level) / rate) end
end
if wait > 0 then return math.ceil(wait * 1000) end
for i = 1, 2 do
  redis.call('HSET', KEYS[i], 'level', levels[i], 'at', now)
  redis.call('EXPIRE', KEYS[i], 300)
end
return 0
"""

# KEYS: the route's slot set. ARGV: now (s), limit, slot id, expiry (s). Returns 1 when taken.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[4]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[4])) + 60)
return 1
"""


_BACKGROUND: ContextVar[bool] = ContextVar("router_budget_background", default=False)


@contextmanager
def background() -> Iterator[None]:
    """Calls made inside do not wait for budget: they raise BudgetExhausted at once, so the
    background task (hydration, evals) queues itself again with a countdown instead of
    holding a worker, or calling anyway and meeting 429s."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def default_wait() -> float:
    return 0.0 if _BACKGROUND.get() else settings.ROUTER_BUDGET_INTERACTIVE_WAIT_SECONDS


class BudgetExhausted(ModelError, jobs.WaitForBudget):
    """The provider's budget (or the route's concurrency) has no room now. A background caller
    queues itself again after `retry_after` seconds; an interactive one shows the error."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Budget:
    requests_per_minute: int
    tokens_per_minute: int


# Where a provider's budget comes from, as the Models pages show it.
FROM_DATABASE, FROM_SETTINGS, FROM_DEFAULT = "database", "settings", "default"


@dataclass(frozen=True)
class Configured:
    """A provider's budget as configured (0: unlimited), and where it comes from."""

    requests_per_minute: int
    tokens_per_minute: int
    source: str

    @property
    def budget(self) -> Budget | None:
        if not self.requests_per_minute or not self.tokens_per_minute:
            return None
        return Budget(self.requests_per_minute, self.tokens_per_minute)


def configured(keys: list[str]) -> dict[str, Configured]:
    """Each key's budget in one query: its row in the database (set by a superuser), else its
    setting in ROUTER_PROVIDER_BUDGETS, else the "default" row, else the "default" setting.
    The rows come with the routing table (process memory, checked against its version at most
    once a second), so a call costs no query and a change reaches every worker within a second."""
    from .routing import table

    rows = {key: Configured(rpm, tpm, FROM_DATABASE) for key, (rpm, tpm) in table().budgets.items()}
    conf = {key: Configured(int(entry.get("rpm") or 0), int(entry.get("tpm") or 0), FROM_SETTINGS)
            for key, entry in settings.ROUTER_PROVIDER_BUDGETS.items()}
    fallback = rows.get("default") or conf.get("default") or Configured(0, 0, FROM_DEFAULT)
    fallback = Configured(fallback.requests_per_minute, fallback.tokens_per_minute, FROM_DEFAULT)
    return {key: rows.get(key) or conf.get(key) or fallback for key in keys}


def budget_for(provider: str) -> Budget | None:
    """None: unlimited (the offline provider, or a provider configured with 0)."""
    if provider == "offline":
        return None
    return configured([provider])[provider].budget


@lru_cache(maxsize=4)
def _client(url: str):
    import redis

    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    return client, client.register_script(_TAKE), client.register_script(_ACQUIRE)


def _redis():
    return _client(settings.REDIS_URL) if settings.REDIS_URL else None


def _key(*parts: str) -> str:
    return ":".join((settings.CACHE_KEY_PREFIX, "budget", *parts))


def take(provider: str, *, tokens: int, requests: int = 1, now: float | None = None) -> float:
    """Take one call's share of `provider`'s budget: 0.0 when taken, else the seconds to wait
    (nothing is taken then). `now` lets a test move the clock instead of sleeping."""
    budget = budget_for(provider)
    conn = _redis()
    if budget is None or conn is None:
        return 0.0
    client, script, _ = conn
    now = time.time() if now is None else now
    try:
        waited_ms = script(
            keys=[_key(provider, "rpm"), _key(provider, "tpm")],
            args=[now, budget.requests_per_minute, budget.requests_per_minute / 60,
                  budget.tokens_per_minute, budget.tokens_per_minute / 60, requests, tokens],
            client=client,
        )
    except Exception:  # redis down: budgets must not take the product down
        logger.warning("provider budget for %s unavailable (Redis unreachable); allowing the call", provider,
                       exc_info=True)
        return 0.0
    return int(waited_ms) / 1000


def take_or_wait(provider: str, *, tokens: int, max_wait: float, sleep=time.sleep) -> None:
    """Take, waiting up to `max_wait` seconds; raise BudgetExhausted when still no room."""
    deadline = time.monotonic() + max_wait
    while True:
        wait = take(provider, tokens=tokens)
        if wait <= 0:
            return
        left = deadline - time.monotonic()
        if wait > left:
            raise BudgetExhausted(
                f"The {provider} budget (requests/tokens per minute) is used up; try again in {wait:.0f} s.",
                retry_after=wait)
        sleep(wait)


def route_limits(routes: list[str]) -> dict[str, tuple[int, str]]:
    """Each route's concurrency limit (0: none) and where it comes from: the route's row when a
    superuser set it, else ROUTER_ROUTE_CONCURRENCY."""
    from .routing import table

    known = table().routes
    rows = {name: info.max_concurrency for name, info in known.items()
            if name in routes and info.max_concurrency is not None}
    return {route: (rows[route], FROM_DATABASE) if route in rows
            else (int(settings.ROUTER_ROUTE_CONCURRENCY.get(route, 0)), FROM_SETTINGS) for route in routes}


def route_limit(route: str) -> int:
    return route_limits([route])[route][0]


@contextmanager
def route_slot(route: str, *, limit: int | None = None, expiry: float | None = None,
               now: float | None = None) -> Iterator[None]:
    """Hold one of the route's concurrent-call slots for the block. A slot is released when the
    block ends (also by an exception) and expires after `expiry` seconds if its worker was killed."""
    limit = route_limit(route) if limit is None else limit
    conn = _redis()
    if not limit or conn is None:
        yield
        return
    client, _, acquire = conn
    key = _key("route", route)
    slot = uuid.uuid4().hex
    expiry = settings.ROUTER_ROUTE_SLOT_EXPIRY_SECONDS if expiry is None else expiry
    try:
        taken = acquire(keys=[key], args=[time.time() if now is None else now, limit, slot, expiry], client=client)
    except Exception:
        logger.warning("route concurrency for %s unavailable (Redis unreachable); allowing the call", route,
                       exc_info=True)
        yield
        return
    if not taken:
        raise BudgetExhausted(f"Route {route} already has {limit} calls in flight; try again shortly.",
                              retry_after=1.0)
    try:
        yield
    finally:
        try:
            client.zrem(key, slot)
        except Exception:  # it expires on its own
            logger.warning("could not release a %s slot; it expires in %s s", route, expiry)


# Current usage, for the Models pages: read from the same buckets and slots the calls take from.


def usage(budgets: dict[str, Budget], now: float | None = None) -> dict[str, tuple[int, int]] | None:
    """(requests, tokens) each provider has taken that its buckets have not refilled yet, i.e. its
    use over about the last minute. None without Redis (no budgets are kept then) or when unreachable."""
    conn = _redis()
    if conn is None:
        return None
    client = conn[0]
    now = time.time() if now is None else now
    keys = list(budgets)
    try:
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(_key(key, "rpm"), "level", "at")
            pipe.hmget(_key(key, "tpm"), "level", "at")
        states = pipe.execute()
    except Exception:
        logger.warning("provider budget usage unavailable (Redis unreachable)", exc_info=True)
        return None
    result = {}
    for n, key in enumerate(keys):
        budget = budgets[key]
        used = []
        for (level, at), capacity in zip(states[2 * n:2 * n + 2], (budget.requests_per_minute, budget.tokens_per_minute),
                                         strict=True):
            if level is None:
                used.append(0)
                continue
            refilled = min(capacity, float(level) + max(0.0, now - float(at)) * capacity / 60)
            used.append(round(capacity - refilled))
        result[key] = (used[0], used[1])
    return result


def in_flight(routes: list[str], now: float | None = None) -> dict[str, int] | None:
    """Calls each route has in flight now (slots not released and not expired). None without Redis."""
    conn = _redis()
    if conn is None:
        return None
    client = conn[0]
    now = time.time() if now is None else now
    try:
        pipe = client.pipeline(transaction=False)
        for route in routes:
            pipe.zcount(_key("route", route), f"({now}", "+inf")
        counts = pipe.execute()
    except Exception:
        logger.warning("route concurrency usage unavailable (Redis unreachable)", exc_info=True)
        return None
    return dict(zip(routes, (int(c) for c in counts), strict=True))
