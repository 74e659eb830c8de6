"""The router's configuration: a route's baseline, its prompt variants, targets and
providers. Each write records an AuditEvent (who, when, before, after) in its transaction;
bad input raises ValidationError and changes nothing."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from .. import registry, variants
from ..models import AuditEvent, PromptVariant, Provider, Rollout, Route, Target
from ..provider_keys import validate_base_url, validate_provider_key_env
from .audit import audit_event_record, snapshot
from .evidence import UNEVALUATED_CANDIDATE, MissingEvidence, baseline_evidence, unevaluated_candidate

ROUTE_FIELDS = ["baseline", "baseline_variant", "baseline_override_reason", "baseline_override_by"]
OVERRIDE_FORBIDDEN = "override_forbidden"

# The code of a ValidationError raised because the current state forbids the change (not
# because the input is malformed): views answer 409 to it.
CONFLICT = "conflict"


def route_baseline_set(*, route: Route, baseline: Target, baseline_variant: str = "default", actor,
                       override_reason: str = "") -> Route:
    """Serve `route` from `baseline` with prompt variant `baseline_variant`, for everyone: like a
    rollout's start, only on a passing offline eval of exactly that (route, target, variant)
    (router.services.evidence.baseline_evidence: thresholds and the owning app's gate). Without it,
    MissingEvidence, unless a superuser `actor` writes an `override_reason`, which the route keeps
    and shows until a baseline is set on evidence; never on an evidence-only route (the validator's).
    Refused too while a rollout of the route is active (its baseline arm is the baseline it started
    from), and for a prompt the optimizer wrote that has no passing offline eval of its own."""
    with transaction.atomic():
        route = Route.objects.select_for_update().get(pk=route.pk)
        if Rollout.objects.filter(route=route, status__in=Rollout.ACTIVE).exists():
            raise ValidationError(
                "Finish, roll back or complete the active rollout before changing the baseline.", code=CONFLICT)
        variants.check(route.name, baseline_variant)  # the owner must build the prompt it will serve
        if not PromptVariant.objects.filter(route=route, name=baseline_variant).exists():
            raise ValidationError(f"{route.name} has no prompt variant {baseline_variant!r}.")
        refusal = unevaluated_candidate(route=route, target=baseline, variant=baseline_variant)
        if refusal:
            raise ValidationError(refusal, code=UNEVALUATED_CANDIDATE)
        missing = baseline_evidence(route=route, target=baseline, variant=baseline_variant)
        override_reason = (override_reason or "").strip() if missing else ""
        if missing:
            if registry.evidence_only(route.name):
                raise MissingEvidence([*missing, f"Route {route.name} moves only on passing offline evidence: "
                                                 "no override applies to it."])
            if not override_reason:
                raise MissingEvidence(missing)
            if not getattr(actor, "is_superuser", False):
                raise ValidationError("Only a superuser may set a baseline without offline evidence.",
                                      code=OVERRIDE_FORBIDDEN)
        before = snapshot(route, ROUTE_FIELDS)
        route.baseline, route.baseline_variant = baseline, baseline_variant
        route.baseline_override_reason = override_reason
        route.baseline_override_by = actor if override_reason else None
        route.baseline_override_at = timezone.now() if override_reason else None
        route.save(update_fields=["baseline", "baseline_variant", "baseline_override_reason", "baseline_override_by",
                                  "baseline_override_at", "updated_at"])
        audit_event_record(actor=actor, action=AuditEvent.Action.ROUTE_BASELINE_SET, obj=route, before=before,
                           after=snapshot(route, ROUTE_FIELDS))
    return route


def prompt_variant_create(*, route: Route, name: str, description: str = "", actor) -> PromptVariant:
    """A new named prompt variant of `route`; a name the route already has, or one its owner
    does not build (router.variants), is refused."""
    variants.check(route.name, name)
    variant = PromptVariant(route=route, name=name, description=description)
    variant.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            variant.save()
            audit_event_record(actor=actor, action=AuditEvent.Action.PROMPT_VARIANT_CREATED, obj=variant,
                               before=None, after=snapshot(variant))
    except IntegrityError:
        raise ValidationError({"name": "This route already has a variant of that name."}) from None
    return variant


def target_check(*, provider: str, host: Provider | None) -> None:
    """The rules a target's provider and host obey (also used by the target form)."""
    if provider == Target.Provider.OPENAI_COMPATIBLE and host is None:
        raise ValidationError("An OpenAI-compatible target needs a provider host (base URL and key variable).")
    if host is not None and provider and host.kind != provider:
        raise ValidationError(f"Host {host.name} serves {host.get_kind_display()}, not {provider}.")


def target_create(
    *, name: str, provider: str, model: str, host: Provider | None = None, quantization: str = "",
    input_price: Decimal = Decimal("0"), output_price: Decimal = Decimal("0"),
    cache_write_price: Decimal = Decimal("0"), cache_read_price: Decimal = Decimal("0"),
    user_selectable: bool = False, accepts_images: bool = False, actor,
) -> Target:
    target_check(provider=provider, host=host)
    target = Target(
        name=name, provider=provider, model=model, host=host, quantization=quantization, input_price=input_price,
        output_price=output_price, cache_write_price=cache_write_price, cache_read_price=cache_read_price,
        user_selectable=user_selectable, accepts_images=accepts_images,
    )
    target.full_clean()
    with transaction.atomic():
        target.save()
        audit_event_record(actor=actor, action=AuditEvent.Action.TARGET_CREATED, obj=target, before=None,
                           after=snapshot(target))
    return target


def provider_check(*, kind: str, base_url: str, api_key_env: str) -> None:
    """The rules a provider obeys (also used by the provider form)."""
    if kind == Provider.Kind.OPENAI_COMPATIBLE and not base_url:
        raise ValidationError("An OpenAI-compatible provider needs a base URL.")
    validate_base_url(base_url)
    validate_provider_key_env(api_key_env)


def provider_create(
    *, name: str, kind: str, base_url: str = "", api_key_env: str = "", timeout_seconds: int = 60,
    max_retries: int = 2, actor,
) -> Provider:
    """A new inference host. Its API key stays in the environment variable named here."""
    provider_check(kind=kind, base_url=base_url, api_key_env=api_key_env)
    provider = Provider(name=name, kind=kind, base_url=base_url, api_key_env=api_key_env,
                        timeout_seconds=timeout_seconds, max_retries=max_retries)
    provider.full_clean()
    with transaction.atomic():
        provider.save()
        audit_event_record(actor=actor, action=AuditEvent.Action.PROVIDER_CREATED, obj=provider, before=None,
                           after=snapshot(provider))
    return provider


PROVIDER_FIELDS = ["base_url", "api_key_env", "timeout_seconds", "max_retries"]


def provider_update(
    *, provider: Provider, base_url: str, api_key_env: str, timeout_seconds: int, max_retries: int, actor,
) -> Provider:
    """Change where a provider is reached and which key variable it names. Audited (before and
    after), since a new URL or key variable decides which host gets which key; the key itself is
    sent only where its LINDY_PROVIDER_URL_<NAME> binds it (router.provider_keys)."""
    provider_check(kind=provider.kind, base_url=base_url, api_key_env=api_key_env)
    with transaction.atomic():
        provider = Provider.objects.select_for_update().get(pk=provider.pk)
        before = snapshot(provider, PROVIDER_FIELDS)
        provider.base_url, provider.api_key_env = base_url, api_key_env
        provider.timeout_seconds, provider.max_retries = timeout_seconds, max_retries
        provider.full_clean()
        after = snapshot(provider, PROVIDER_FIELDS)
        if after == before:
            return provider
        provider.save(update_fields=PROVIDER_FIELDS)
        audit_event_record(actor=actor, action=AuditEvent.Action.PROVIDER_UPDATED, obj=provider, before=before,
                           after=after)
    return provider
