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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from django.core.exceptions import ValidationError

from . import routing

DEFAULT = "default"
_VARIANTS: dict[str, dict[str, str]] = {}

T = TypeVar("T")


class UnknownVariant(ValueError):
    """A prompt builder was asked for a variant its app does not build."""


def register(variants: Mapping[str, Mapping[str, str]], *, owner: str) -> None:
    """`variants`: {route: {variant name: description}}. Each route must be registered by
    `owner` (routing.register_route) and list `default`. Registering again replaces."""
    routes = routing.registered_routes()
    for route, named in variants.items():
        spec = routes.get(route)
        if spec is None or spec.owner != owner:
            raise ValueError(f"{owner!r} registers variants of route {route!r}, which it does not own.")
        if DEFAULT not in named:
            raise ValueError(f"Route {route!r}: the variants must include {DEFAULT!r}.")
        _VARIANTS[route] = dict(named)


def buildable(route: str) -> dict[str, str]:
    """{variant: description} the route's owner builds; empty when no app owns the route."""
    if route not in routing.registered_routes():
        return {}
    return dict(_VARIANTS.get(route, {DEFAULT: "The app's own prompt (it has no other variant)."}))


def check(route: str, variant: str) -> None:
    """Raise ValidationError (a 4xx for views and the API) unless the owner builds `variant`."""
    known = buildable(route)
    if not known:
        raise ValidationError(f"No app owns route {route!r}, so no prompt of it can be built or served.")
    if variant not in known:
        owner = routing.registered_routes()[route].owner
        raise ValidationError(
            f"The {owner} app builds no prompt variant {variant!r} for route {route!r} "
            f"(it builds {', '.join(sorted(known))})."
        )


def pick(options: Mapping[str, T], variant: str, *, route: str) -> T:
    """The owner's builders use this to choose their text for `variant`."""
    try:
        return options[variant]
    except KeyError:
        raise UnknownVariant(
            f"Route {route!r} has no prompt variant {variant!r} (it has {', '.join(sorted(options))})."
        ) from None
