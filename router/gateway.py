"""The one door every model call goes through.

    completion = complete(route="validator", user=user, system=..., messages=[...], tools=[...])

picks the target for (route, user) (router.routing: explicit choice, internal user, rollout
bucket, baseline), calls its provider, and records the call (tokens, cache reads and writes,
cost, latency, arm, prompt variant, error) whether it succeeded or not.

Prompt variants. A rollout's candidate is a (target, prompt variant) pair, so a caller whose
prompt depends on the variant builds it from the variant the router chose. Two ways:

1. Pass a builder; it gets the variant name and returns any of system/messages/tools/tool_choice:

       complete(route="email.draft", user=user,
                prompt=lambda variant: {"system": prompts.system(variant=variant),
                                        "messages": prompts.messages(thread, variant=variant)})

2. Ask first, build, then pass the assignment back (so the call is served by what was asked):

       assignment = assign("email.draft", user)
       system = prompts.system(variant=assignment.prompt_variant)
       complete(route="email.draft", user=user, assignment=assignment, system=system, messages=...)

Callers that ignore variants keep working: the route's `default` variant is what they build,
so a call made without `prompt=` or `assignment=` records `default` whatever the router chose.
Completion.prompt_variant and ModelCall.prompt_variant say which variant served the call.

Outcome signals (draft heavily edited, action blocked...) are reported against
Completion.call_id with router.services.call_score_record(call_id=..., metric=..., value=...).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

from lindy import failures

from . import budgets, fake_model, prompt_cache, routing
from .models import CallSample, ModelCall
from .offline import OFFLINE_MODEL, estimate_tokens
from .providers import anthropic as anthropic_provider
from .providers import offline as offline_provider
from .providers import openai_compat
from .routing import Assignment
from .types import (
    NO_SPEECH_MODEL,
    Completion,
    CompletionRequest,
    ModelError,
    NoSpeechModel,
    ProviderReply,
    Transcription,
    Usage,
)

logger = logging.getLogger(__name__)

PROVIDERS: dict[str, Callable[..., ProviderReply]] = {
    "anthropic": anthropic_provider.complete,
    "openai": openai_compat.complete,
    "offline": offline_provider.complete,
}
# A sampled call's request is kept for the online judge only when it is this small.
MAX_SAMPLE_BYTES = 200_000


def register_provider(name: str, func) -> None:
    """func(request: CompletionRequest, target: TargetInfo) -> ProviderReply."""
    PROVIDERS[name] = func


def offline_mode() -> bool:
    return settings.MODEL_OFFLINE


# Providers whose API loads a deferred tool from a tool-search result (`defer_loading` and
# `tool_reference`), so a caller can send another caller's exact prefix plus one deferred tool.
TOOL_SEARCH_PROVIDERS = frozenset({"anthropic"})


def serving_provider(assignment: Assignment) -> str:
    """The provider that will answer a call made with `assignment` ("offline" in offline mode)."""
    return "offline" if offline_mode() else assignment.target.provider


def supports_tool_search(assignment: Assignment) -> bool:
    return serving_provider(assignment) in TOOL_SEARCH_PROVIDERS


def assign(route: str, user=None) -> Assignment:
    """The target and prompt variant that will serve `route` for `user`, and why."""
    return routing.assign(route, user)


def complete(
    *,
    route: str,
    user=None,
    team=None,
    system: str | list[dict] = "",
    messages: list[dict] | None = None,
    tools: list[dict] | None = None,
    tool_choice: dict | None = None,
    max_tokens: int | None = None,
    cache: bool = True,
    metadata: dict | None = None,
    assignment: Assignment | None = None,
    prompt: Callable[[str], dict] | None = None,
    budget_wait: float | None = None,
    cache_messages: tuple[int, ...] = (),
) -> Completion:
    """`cache_messages`: indices of messages (negative from the end) whose last block gets a cache
    breakpoint where the provider caches (Anthropic); the tools and system always get one.

    `budget_wait`: how long to wait for the provider's budget (router.budgets) before raising
    BudgetExhausted (a ModelError with retry_after). Interactive callers keep the default (a few
    seconds, then fail closed); background callers pass 0, or run inside budgets.background(),
    and queue themselves again."""
    # A caller that neither passed the assignment nor a builder never saw the chosen variant:
    # it built the app's default prompt, and that is what the call records.
    sees_variant = assignment is not None or prompt is not None
    if assignment is None:
        assignment = routing.assign(route, user)
    variant = assignment.prompt_variant if sees_variant else "default"
    if variant != assignment.prompt_variant:
        logger.warning("route %s: the caller ignores prompt variants, so %r was served with the default prompt",
                       route, assignment.prompt_variant)
    if prompt is not None:
        built = prompt(assignment.prompt_variant) or {}
        system = built.get("system", system)
        messages = built.get("messages", messages)
        tools = built.get("tools", tools)
        tool_choice = built.get("tool_choice", tool_choice)
    if messages is None:
        raise TypeError("complete() needs messages= or a prompt= builder that returns them.")
    target = assignment.target
    provider = "offline" if offline_mode() else target.provider
    if provider == "offline" or not target.accepts_images:
        messages = images_as_text(messages)
    request = CompletionRequest(
        route=route, system=system, messages=messages, tools=tools, tool_choice=tool_choice,
        max_tokens=max_tokens or assignment.max_tokens, cache=cache,
        model=OFFLINE_MODEL if provider == "offline" else target.model,
        prompt_variant=variant, user_id=getattr(user, "pk", None), metadata=metadata or {},
        cache_messages=tuple(sorted({i % len(messages) for i in cache_messages})) if messages else (),
    )
    if provider != "offline":  # nothing is called (or recorded) when there is no budget
        wait = budgets.default_wait() if budget_wait is None else budget_wait
        budgets.take_or_wait(target.host or provider, max_wait=wait,
                             # input tokens: what providers' per-minute token limits mostly count
                             tokens=estimate_tokens(json.dumps([request.system_text(), messages], default=str)))
    started = time.monotonic()
    reply: ProviderReply | None = None
    error = ""
    try:
        call = PROVIDERS.get(provider)
        if call is None:
            raise ModelError(f"Unknown provider {provider!r} for route {route!r}.")
        with budgets.route_slot(route):
            if provider != "offline" or fake_model.enabled():
                _release_connection()
            reply = call(request, target)
    except budgets.BudgetExhausted:
        raise
    except ModelError as exc:
        error = str(exc)
    except Exception as exc:  # a provider bug must still be recorded, then surface as ModelError
        logger.exception("model call on route %s failed", route)
        failures.capture(exc, kind="model_call", route=route, target=target.name, user_id=getattr(user, "pk", None),
                         team_id=getattr(team, "pk", None))
        error = f"{type(exc).__name__}: {exc}"
    latency_ms = int((time.monotonic() - started) * 1000)
    usage = reply.usage if reply else Usage()
    served_by_target = provider == target.provider
    record = ModelCall.objects.create(
        route=route,
        user=user if getattr(user, "pk", None) else None,
        team=team,
        target_id=target.id if served_by_target else None,
        provider=provider,
        model=reply.model if reply else request.model,
        prompt_variant=variant,
        arm=assignment.arm,
        rollout_id=assignment.rollout_id,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost=target.cost(usage) if served_by_target else 0,
        latency_ms=latency_ms,
        stop_reason=reply.stop_reason if reply else "",
        error=error,
    )
    if reply is None:
        raise ModelError(error)
    if assignment.rollout_id and random.random() < settings.ROUTER_ONLINE_EVAL_SAMPLE_RATE:
        _keep_sample(record, request, reply)
    return Completion(
        route=route, text=reply.text, tool_calls=reply.tool_calls, usage=usage, cost=record.cost,
        provider=provider, model=record.model, stop_reason=record.stop_reason,
        prompt_variant=variant, call_id=record.pk, latency_ms=latency_ms,
    )


def _release_connection() -> None:
    """The thread's database connection is closed (or, pooled, given back) while the model thinks
    (seconds), so a threaded worker's threads hold connections only while they use the database:
    a reconnect costs milliseconds against a model's seconds. Inside a transaction the connection
    is the transaction: it stays."""
    if connection.in_atomic_block or connection.connection is None:
        return
    connection.close()


def rendered_prompt(*, system: str | list[dict] = "", tools: list[dict] | None = None,
                    messages: list[dict] | None = None, cache_messages: tuple[int, ...] = ()) -> str:
    """The prompt as the model reads it, in cache order tools → system → messages: each tool's
    definition as JSON, then each system and message block's text (a tool call as its JSON, a tool
    result as its content), as a caching provider (Anthropic) renders the request. Two requests
    share a cached prefix as far as their renderings share a prefix; breakpoints are markers,
    not text, so they are left out."""
    messages = messages or []
    request = CompletionRequest(
        route="", system=system, messages=messages, tools=tools,
        cache_messages=tuple(sorted({i % len(messages) for i in cache_messages})) if messages else (),
    )
    body = anthropic_provider.render(request)

    def plain(block: dict) -> dict:
        return {k: v for k, v in block.items() if k != "cache_control"}

    def text(block) -> str:
        if isinstance(block, str):
            return block
        kind = block.get("type")
        if kind == "text":
            return block.get("text", "")
        if kind == "tool_use":
            return json.dumps({"tool_use": block.get("name"), "input": block.get("input")}, ensure_ascii=False)
        if kind == "tool_result":
            content = block.get("content")
            inner = content if isinstance(content, str) else "\n".join(text(b) for b in content or [])
            return f"[tool_result {block.get('tool_use_id')}]\n{inner}"
        if kind == "tool_reference":
            return f"[tool_reference {block.get('tool_name')}]"
        return json.dumps(plain(block), ensure_ascii=False, sort_keys=True)

    parts = [json.dumps(plain(tool), ensure_ascii=False, separators=(",", ":")) for tool in body.get("tools") or []]
    parts += [text(block) for block in body.get("system") or []]
    for message in body["messages"]:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        parts += [f"[{message.get('role')}]"] + [text(block) for block in blocks]
    return "\n".join(parts)


def request_body(*, model: str, system: str | list[dict] = "", messages: list[dict], tools: list[dict] | None = None,
                 tool_choice: dict | None = None, cache_messages: tuple[int, ...] = (),
                 accepts_images: bool = True) -> dict:
    """The Messages API body a call with these parts sends to `model` (cache breakpoints placed, and
    images as text notes for a target that does not read them, as `complete` does)."""
    if not accepts_images:
        messages = images_as_text(messages)
    request = CompletionRequest(
        route="", system=system, messages=messages, tools=tools, tool_choice=tool_choice, model=model,
        cache_messages=tuple(sorted({i % len(messages) for i in cache_messages})) if messages else (),
    )
    return anthropic_provider.render(request)


def cached_prefix_share(first: dict, second: dict) -> float:
    """Share of the request body `second`'s prompt that the provider's cache would serve from what
    `first` (sent just before) wrote, under the documented invalidation rules (router.prompt_cache):
    the same model, tools, system and messages up to a breakpoint, the same tool_choice and images."""
    return prompt_cache.read_share(first, second)


def shared_prefix_share(first: str, second: str) -> float:
    """Share of `second`'s estimated tokens that are a byte-identical prefix of `first`."""
    if not second:
        return 0.0
    same = os.path.commonprefix([first, second])
    return estimate_tokens(same) / estimate_tokens(second)


def images_as_text(messages: list[dict]) -> list[dict]:
    """Image content blocks replaced by a text note, for a target that does not read images
    (Target.accepts_images). The caller's label next to each image still says what it was."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(b.get("type") == "image" for b in content if isinstance(b, dict)):
            content = [_image_note(b) if isinstance(b, dict) and b.get("type") == "image" else b for b in content]
            message = {**message, "content": content}
        out.append(message)
    return out


def _image_note(block: dict) -> dict:
    source = block.get("source") or {}
    size = len(source.get("data") or "") * 3 // 4  # base64 -> bytes
    kind = source.get("media_type") or "image"
    return {"type": "text", "text": f"[an image ({kind}, about {max(size // 1024, 1)} KB) is not shown: "
                                    "the model serving this call does not read images]"}


def _keep_sample(record: ModelCall, request: CompletionRequest, reply: ProviderReply) -> None:
    """Keep a rollout call's request and answer so the online judge can score it later."""
    payload = {
        "system": request.system_text(), "messages": request.messages,
        "tools": [t.get("name") for t in request.tools or []],
    }
    answer = {"text": reply.text, "tool_calls": [{"name": c.name, "input": c.input} for c in reply.tool_calls]}
    if len(json.dumps(payload, default=str)) > MAX_SAMPLE_BYTES:
        return
    CallSample.objects.create(call=record, request=json.loads(json.dumps(payload, default=str)), response=answer)


SPEECH_MODEL_WORDS = ("whisper", "transcribe", "speech", "audio")


def speech_target() -> routing.TargetInfo | None:
    """The OpenAI-compatible speech target to use when a route's own target takes no audio (the
    default Claude one): ROUTER_SPEECH_TARGET by name, else the first OpenAI-compatible target
    with a host whose model is a speech model (whisper-1, gpt-4o-transcribe …)."""
    targets = sorted((t for t in routing.table().targets.values() if t.provider == "openai" and t.base_url),
                     key=lambda t: t.id)
    named = getattr(settings, "ROUTER_SPEECH_TARGET", "")
    if named:
        return next((t for t in targets if t.name == named), None)
    return next((t for t in targets if any(word in t.model.lower() for word in SPEECH_MODEL_WORDS)), None)


def transcribe(*, route: str, audio: bytes, filename: str = "", mime_type: str = "", user=None,
               team=None) -> Transcription:
    """Speech to text on `route`'s target: an OpenAI-compatible host's /audio/transcriptions, or
    the offline stand-in. A route whose target takes no audio (the default Claude one) uses the
    configured speech target (speech_target), and without one raises NoSpeechModel — recorded,
    nothing sent. Recorded like every call (no tokens: audio is billed by the second, which the
    call's latency and the provider's own invoice show). Raises ModelError."""
    target = routing.assign(route, user).target
    provider = "offline" if offline_mode() else target.provider
    if provider not in ("offline", "openai"):
        speech = speech_target()
        if speech is None:
            ModelCall.objects.create(
                route=route, user=user if getattr(user, "pk", None) else None, team=team, target_id=None,
                provider=target.provider, model=target.model, arm="baseline", latency_ms=0, error=NO_SPEECH_MODEL,
            )
            raise NoSpeechModel(NO_SPEECH_MODEL)
        target, provider = speech, speech.provider
    model = OFFLINE_MODEL if provider == "offline" else target.model
    if provider != "offline":
        budgets.take_or_wait(target.host or provider, tokens=0, max_wait=budgets.default_wait())
    started = time.monotonic()
    text, error = "", ""
    try:
        with budgets.route_slot(route):
            if provider == "offline":
                text = offline_provider.transcribe(audio=audio, filename=filename, mime_type=mime_type)
            else:
                text = openai_compat.transcribe(audio=audio, filename=filename, mime_type=mime_type, model=model,
                                                target=target)
    except budgets.BudgetExhausted:
        raise
    except ModelError as exc:
        error = str(exc)
    except Exception as exc:  # recorded, then surfaced as ModelError like a completion's
        logger.exception("transcription on route %s failed", route)
        error = f"{type(exc).__name__}: {exc}"
    latency_ms = int((time.monotonic() - started) * 1000)
    served_by_target = provider == target.provider
    record = ModelCall.objects.create(
        route=route, user=user if getattr(user, "pk", None) else None, team=team,
        target_id=target.id if served_by_target else None, provider=provider, model=model,
        arm="baseline", latency_ms=latency_ms, stop_reason="" if error else "end_turn", error=error,
    )
    if error:
        raise ModelError(error)
    return Transcription(route=route, text=text.strip(), provider=provider, model=model, call_id=record.pk,
                         latency_ms=latency_ms)


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
