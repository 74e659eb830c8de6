"""The prompt variants each route's owner can build.

A rollout's candidate and an eval run are a (target, prompt variant) pair, and every call
records the variant that served it. A variant name is only worth recording if the app that
owns the route really builds a different prompt for it, so each owner registers, from its
AppConfig.ready() (after register_route), the variants its prompt builders know:

    variants.register({"validator": {"default": "The full principles.", "terse": "..."}}, owner="validator")

The router sits below the apps and never imports them: the owner hands over names and
one-line descriptions, and its own builders pick the text with `pick()`, which refuses a name
they do not know instead of quietly sending the default prompt under another name.

- A route whose owner registered no variants builds only `default` (its one prompt).
- A route no app owns builds nothing: no rollout or eval of it can mean anything.

Stored variants. A variant can also be stored in the database (PromptVariant.components: its
text per component, e.g. {"system": "..."}); the prompt optimizer stores its candidates so.
`pick()` serves a stored variant's text for its name when the owner's own options do not have
it, so an owner whose builders call `pick()` builds every stored variant with no change. While
the optimizer tries a candidate that is not stored yet, `trying()` lends its text to `pick()`
for that one variant name, in that one context.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar, cast

from django.core.exceptions import ValidationError

from . import registry

DEFAULT = "default"
SYSTEM = "system"
_VARIANTS: dict[str, dict[str, str]] = {}
# route -> variant -> components: stored variants never change once written, so a process keeps them.
_STORED: dict[str, dict[str, dict[str, str]]] = {}
_TRYING: ContextVar[tuple[str, str, Mapping[str, str]] | None] = ContextVar("router_variant_trying", default=None)

T = TypeVar("T")


class UnknownVariant(ValueError):
    """A prompt builder was asked for a variant its app does not build."""


def register(variants: Mapping[str, Mapping[str, str]], *, owner: str) -> None:
    """`variants`: {route: {variant name: description}}. Each route must be registered by
    `owner` (routing.register_route) and list `default`. Registering again replaces."""
    routes = registry.registered_routes()
    for route, named in variants.items():
        spec = routes.get(route)
        if spec is None or spec.owner != owner:
            raise ValueError(f"{owner!r} registers variants of route {route!r}, which it does not own.")
        if DEFAULT not in named:
            raise ValueError(f"Route {route!r}: the variants must include {DEFAULT!r}.")
        _VARIANTS[route] = dict(named)


def buildable(route: str) -> dict[str, str]:
    """{variant: description} the route's owner builds (its own and the stored ones); empty when
    no app owns the route."""
    if route not in registry.registered_routes():
        return {}
    known = dict(_VARIANTS.get(route, {DEFAULT: "The app's own prompt (it has no other variant)."}))
    for name, description in stored_variants(route).items():
        known.setdefault(name, description)
    return known


def stored_variants(route: str) -> dict[str, str]:
    """{name: description} of the route's stored variants (text kept in the database)."""
    from .models import PromptVariant

    rows = PromptVariant.objects.filter(route__name=route).exclude(components={}).values_list("name", "description")
    return {name: description or "A stored prompt variant." for name, description in rows}


def stored_components(route: str, variant: str) -> dict[str, str] | None:
    """The stored text of `variant` per component, or None when it is not a stored variant."""
    known = _STORED.get(route, {}).get(variant)
    if known is not None:
        return known
    from .models import PromptVariant

    components = (PromptVariant.objects.filter(route__name=route, name=variant).exclude(components={})
                  .values_list("components", flat=True).first())
    if not components:
        return None
    _STORED.setdefault(route, {})[variant] = dict(components)
    return dict(components)


def forget_stored() -> None:
    """Tests roll back the rows; the process must not keep serving them."""
    _STORED.clear()


@contextmanager
def trying(route: str, variant: str, components: Mapping[str, str]) -> Iterator[None]:
    """While the optimizer evaluates a candidate: `pick(..., variant=variant, route=route)`
    answers with the candidate's text. Only in this context (a contextvar), never for users."""
    token = _TRYING.set((route, variant, dict(components)))
    try:
        yield
    finally:
        _TRYING.reset(token)


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def fill(template: str, **values: object) -> str:
    """`template` with each `{name}` of `values` replaced, and every other brace left as written.

    Not str.format: a stored or optimizer-mutated variant may hold any text (a stray brace, a
    JSON example, `{0}`, a placeholder the builder does not fill), and the product must still
    build its prompt from it rather than fail on every call that variant serves."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def check(route: str, variant: str) -> None:
    """Raise ValidationError (a 4xx for views and the API) unless the owner builds `variant`."""
    known = buildable(route)
    if not known:
        raise ValidationError(f"No app owns route {route!r}, so no prompt of it can be built or served.")
    if variant not in known:
        owner = registry.registered_routes()[route].owner
        raise ValidationError(
            f"The {owner} app builds no prompt variant {variant!r} for route {route!r} "
            f"(it builds {', '.join(sorted(known))})."
        )


def pick(options: Mapping[str, T], variant: str, *, route: str, component: str = SYSTEM) -> T:
    """The owner's builders use this to choose their text for `variant`: their own option, the
    candidate being tried (`trying`), or a stored variant's text for `component`."""
    tried = _TRYING.get()
    if tried is not None and tried[0] == route and tried[1] == variant and component in tried[2]:
        return cast(T, tried[2][component])
    if variant in options:
        return options[variant]
    stored = stored_components(route, variant)
    if stored is not None and component in stored:
        return cast(T, stored[component])
    raise UnknownVariant(
        f"Route {route!r} has no prompt variant {variant!r} (it has {', '.join(sorted(options))})."
    )
