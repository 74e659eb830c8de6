"""The one door every model call goes through.

    completion = complete(route="validator", user=user, system=..., messages=[...], tools=[...])

picks the target for (route, user), calls its provider, and records the call (tokens,
cache reads and writes, cost, latency, error) whether it succeeded or not.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

from . import routing
from .models import ModelCall
from .offline import OFFLINE_MODEL, estimate_tokens
from .providers import anthropic as anthropic_provider
from .providers import offline as offline_provider
from .types import Completion, CompletionRequest, ModelError, ProviderReply, Usage

logger = logging.getLogger(__name__)

PROVIDERS = {
    "anthropic": anthropic_provider.complete,
    "offline": offline_provider.complete,
}


def register_provider(name: str, func) -> None:
    PROVIDERS[name] = func


def offline_mode() -> bool:
    return settings.MODEL_OFFLINE


def complete(
    *,
    route: str,
    user=None,
    team=None,
    system: str | list[dict] = "",
    messages: list[dict],
    tools: list[dict] | None = None,
    tool_choice: dict | None = None,
    max_tokens: int | None = None,
    cache: bool = True,
    metadata: dict | None = None,
) -> Completion:
    assignment = routing.assign(route, user)
    target = assignment.target
    provider = "offline" if offline_mode() else target.provider
    request = CompletionRequest(
        route=route, system=system, messages=messages, tools=tools, tool_choice=tool_choice,
        max_tokens=max_tokens or assignment.max_tokens, cache=cache,
        model=OFFLINE_MODEL if provider == "offline" else target.model,
        prompt_variant=assignment.prompt_variant, user_id=getattr(user, "pk", None), metadata=metadata or {},
    )
    started = time.monotonic()
    reply: ProviderReply | None = None
    error = ""
    try:
        call = PROVIDERS.get(provider)
        if call is None:
            raise ModelError(f"Unknown provider {provider!r} for route {route!r}.")
        reply = call(request)
    except ModelError as exc:
        error = str(exc)
    except Exception as exc:  # a provider bug must still be recorded, then surface as ModelError
        logger.exception("model call on route %s failed", route)
        error = f"{type(exc).__name__}: {exc}"
    latency_ms = int((time.monotonic() - started) * 1000)
    usage = reply.usage if reply else Usage()
    cost = target.cost(usage) if provider == target.provider else 0
    record = ModelCall.objects.create(
        route=route,
        user=user if getattr(user, "pk", None) else None,
        team=team,
        target_id=target.id if provider == target.provider else None,
        provider=provider,
        model=reply.model if reply else request.model,
        prompt_variant=assignment.prompt_variant,
        arm=assignment.arm,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost=cost,
        latency_ms=latency_ms,
        stop_reason=reply.stop_reason if reply else "",
        error=error,
    )
    if reply is None:
        raise ModelError(error)
    return Completion(
        route=route, text=reply.text, tool_calls=reply.tool_calls, usage=usage, cost=record.cost,
        provider=provider, model=record.model, stop_reason=record.stop_reason,
        prompt_variant=assignment.prompt_variant, call_id=record.pk, latency_ms=latency_ms,
    )


def count_tokens(*, text: str, route: str = "memory.count_tokens", user=None) -> tuple[int, bool]:
    """(tokens, exact). Exact when the route's model counter answered; otherwise the
    documented conservative estimate (router.offline.estimate_tokens)."""
    if not offline_mode():
        target = routing.assign(route, user).target
        if target.provider == "anthropic":
            try:
                return anthropic_provider.count_tokens(model=target.model, text=text), True
            except ModelError:
                logger.warning("token counting failed on route %s; using the estimate", route)
    return estimate_tokens(text), False
