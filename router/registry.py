"""The routes the product calls, each declared by the app that owns it (from its
AppConfig.ready()). Kept apart from routing so that router.variants, which checks owners, and
routing, which creates the registered routes' rows, both read it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

# ensure_defaults() (router.routing) creates the registered routes.
_ROUTES: dict[str, RouteSpec] = {}


@dataclass(frozen=True)
class RouteSpec:
    name: str
    description: str
    owner: str  # the app label that calls the route
    # What people read for the route ("Action checks"); the name stays in a tooltip (route_label).
    label: str = ""
    # False for the product's own plumbing (token counting, the judge, transcription): no one
    # chooses a model for it, so "My model" does not list it.
    user_facing: bool = True
    # True for a route whose answers let actions through (the validator): its baseline and rollouts
    # move only on passing offline evidence; no superuser override applies to it.
    evidence_only: bool = False


def register_route(name: str, *, description: str, owner: str, label: str = "", user_facing: bool = True,
                   evidence_only: bool = False) -> RouteSpec:
    """Declare a route the app `owner` calls. Idempotent for the same owner; a second owner
    for one name is a programming error."""
    spec = RouteSpec(name=name, description=description, owner=owner, label=label or fallback_label(name),
                     user_facing=user_facing, evidence_only=evidence_only)
    current = _ROUTES.get(name)
    if current is not None and current.owner != owner:
        raise ValueError(f"Route {name!r} is already registered by {current.owner!r}.")
    _ROUTES[name] = spec
    return spec


def registered_routes() -> dict[str, RouteSpec]:
    return dict(_ROUTES)


def user_facing_routes() -> list[str]:
    """The routes a person may choose a model for ("My model"), by name."""
    return sorted(name for name, spec in _ROUTES.items() if spec.user_facing)


def fallback_label(name: str) -> str:
    """Words for a route no app labelled (or no longer registers): "memory.count_tokens" ->
    "Memory: count tokens"."""
    head, _, rest = name.partition(".")
    words = rest.replace(".", " ").replace("_", " ")
    return f"{head.replace('_', ' ').capitalize()}: {words}" if words else head.replace("_", " ").capitalize()


def label_of(name: str) -> str:
    """The human label of route `name`, registered or not."""
    spec = _ROUTES.get(name)
    return spec.label if spec else fallback_label(name)


def evidence_only(name: str) -> bool:
    """Whether no override may move route `name` without passing offline evidence."""
    spec = _ROUTES.get(name)
    return bool(spec and spec.evidence_only)
